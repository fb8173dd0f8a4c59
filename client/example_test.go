package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/payload"
)

func Example() {
	// A stand-in for hush serve: it accepts jobs for u-42 and refuses the
	// rest the way hush does.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		job, _ := payload.Decode(r.Body)
		if job.Recipients[0].UserID != "u-42" {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":{"message":"invalid job","problems":[{"field":"recipients[0].devices[0].token","message":"not hex (invalid character at position 0)"}]}}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"id":"order-4711-shipped"}`)
	}))
	defer srv.Close()

	c := client.New(srv.URL, client.WithToken("s3cret"))
	ctx := context.Background()
	job := payload.Job{
		ID: "order-4711-shipped",
		Recipients: []payload.Recipient{{UserID: "u-42", Devices: []payload.Device{
			{Platform: payload.FCM, Token: "fGx1:APA91bExampleRegistrationToken"},
		}}},
		Content: payload.Content{Alert: &payload.Alert{Title: "Shipped", Body: "Order 4711 is on its way"}},
	}
	acc, err := c.Submit(ctx, job)
	if err != nil {
		fmt.Println("submit:", err)
		return
	}
	fmt.Println("accepted", acc.ID, "duplicate:", acc.Duplicate)

	job.Recipients[0] = payload.Recipient{UserID: "u-43", Devices: []payload.Device{{Platform: payload.APNs, Token: "not-hex"}}}
	_, err = c.Submit(ctx, job)
	if apiErr, ok := errors.AsType[*client.Error](err); ok {
		fmt.Println(apiErr.Status, apiErr.Message)
		for _, p := range apiErr.Problems {
			fmt.Printf("  %s: %s\n", p.Field, p.Message)
		}
	}
	// Output:
	// accepted order-4711-shipped duplicate: false
	// 400 invalid job
	//   recipients[0].devices[0].token: not hex (invalid character at position 0)
}
