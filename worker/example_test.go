package worker_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker"
)

// A backend enqueues a job with the Client; an invalid job is refused
// before Redis is touched, with every problem named by its field.
func ExampleClient_Enqueue() {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	defer rdb.Close()
	client := worker.NewClient(rdb)

	job := payload.Job{
		ID: "order-4711-shipped",
		Recipients: []payload.Recipient{{
			UserID:  "u-42",
			Devices: []payload.Device{{Platform: "pager", Token: "123"}, {Platform: payload.APNs, Token: "not-hex"}},
		}},
		Content: payload.Content{Alert: &payload.Alert{Title: "Your order has shipped"}},
	}
	_, err := client.Enqueue(context.Background(), job)
	var invalid *payload.ValidationError
	if errors.As(err, &invalid) {
		for _, p := range invalid.Problems {
			fmt.Printf("%s: %s\n", p.Field, p.Message)
		}
		return
	}
	if err != nil {
		fmt.Println("enqueue failed:", err)
		return
	}
	fmt.Println("accepted")
	// Output:
	// recipients[0].devices[0].platform: unknown platform "pager", want "apns", "fcm" or "webpush"
	// recipients[0].devices[1].token: not hex (invalid character at position 0)
}
