package payload_test

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
)

func ExampleDecode() {
	const body = `{
	  "id": "order-4711-shipped",
	  "recipients": [
	    {"user_id": "u-42", "devices": [{"platform": "apns", "token": "not-a-token"}]},
	    {"user_id": "u-43", "devices": [{"platform": "fcm", "token": "fGx1:APA91b"}]}
	  ],
	  "alert": {"title": "Shipped", "badge": -1},
	  "ttl": "2h"
	}`
	job, err := payload.Decode(strings.NewReader(body))
	if err != nil {
		fmt.Println("decode:", err)
		return
	}
	now := time.Date(2026, 11, 21, 18, 0, 0, 0, time.UTC)
	if ve, ok := errors.AsType[*payload.ValidationError](job.Validate(now)); ok {
		for _, p := range ve.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// recipients[0].devices[0].token: not hex (invalid character at position 0)
	// alert.badge: must be 0 or more, got -1
}

func ExampleRenderAPNs() {
	c := payload.Content{
		Alert: &payload.Alert{Title: "Shipped", Body: "Order 4711 is on its way", Sound: "default"},
		Data:  map[string]string{"order": "4711"},
	}
	body, err := payload.RenderAPNs(&c)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(body))
	// Output:
	// {"aps":{"alert":{"body":"Order 4711 is on its way","title":"Shipped"},"sound":"default"},"order":"4711"}
}
