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

func ExampleClient_Cancel() {
	// A stand-in for hush serve: job promo-18 had one of its three
	// recipients delivered when it was cancelled.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodDelete || r.URL.Path != "/v1/notifications/promo-18" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"message":"no job with this id"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"promo-18","state":"cancelled","queue":"normal","accepted_at":"2026-11-21T10:00:00.12Z",`+
			`"cancelled_at":"2026-11-21T10:04:12.503Z","recipients":3,"counts":{"delivered":1,"expired":0,"token_invalid":0,`+
			`"failed":0,"throttle_full":0,"collapsed":0,"cancelled":2,"pending":0},"deferrals":2,"cancelled":true}`)
	}))
	defer srv.Close()

	c := client.New(srv.URL, client.WithToken("s3cret"))
	// The server answers once nothing of the job can be sent any more,
	// about 3.5 s after the cancellation.
	res, err := c.Cancel(context.Background(), "promo-18")
	if err != nil {
		fmt.Println("cancel:", err)
		return
	}
	fmt.Println(res.State, "by this call:", res.Cancelled)
	fmt.Println("delivered before:", res.Counts["delivered"], "cancelled:", res.Counts["cancelled"], "still being dropped:", res.Counts["pending"])

	_, err = c.Cancel(context.Background(), "promo-19")
	if apiErr, ok := errors.AsType[*client.Error](err); ok {
		fmt.Println(apiErr.Status, apiErr.Message)
	}
	// Output:
	// cancelled by this call: true
	// delivered before: 1 cancelled: 2 still being dropped: 0
	// 404 no job with this id
}

func ExampleClient_PutPreferences() {
	// A stand-in for hush serve: it answers the preferences as stored,
	// the opt-outs sorted.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method != http.MethodPut || r.URL.Path != "/v1/users/u-42/preferences" || r.URL.Query().Get("app") != "shop" {
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":{"message":"no such endpoint"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"user_id":"u-42","app":"shop","opt_out":["marketing","social"],"quiet_hours":"22:00-07:00","timezone":"Europe/Paris"}`)
	}))
	defer srv.Close()

	c := client.New(srv.URL, client.WithToken("s3cret"))
	p, err := c.PutPreferences(context.Background(), "shop", "u-42", client.Preferences{
		OptOut: []string{"social", "marketing"}, QuietHours: "22:00-07:00", Timezone: "Europe/Paris"})
	if err != nil {
		fmt.Println("put preferences:", err)
		return
	}
	fmt.Println(p.UserID, p.App, p.OptOut, p.QuietHours, p.Timezone)
	// Output:
	// u-42 shop [marketing social] 22:00-07:00 Europe/Paris
}
