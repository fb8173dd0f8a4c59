package fake_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/fcm"
)

// A real APNs sender pointed at the fake, as HUSH_APNS_ENDPOINT and
// HUSH_APNS_CA_FILE would configure it.
func ExampleStartAPNs() {
	f, err := fake.StartAPNs()
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	dir, err := os.MkdirTemp("", "hush-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(dir)
	if err != nil {
		log.Fatal(err)
	}
	caFile, err := f.WriteCA(dir)
	if err != nil {
		log.Fatal(err)
	}
	s, err := apns.New(apns.Config{
		KeyFile: keyFile, KeyID: keyID, TeamID: teamID, Topic: "com.example.app",
		Endpoint: f.URL, CAFile: caFile,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	f.Script("dead-token", fake.Unregistered())
	content := &payload.Content{Alert: &payload.Alert{Title: "Hi"}}
	for _, tok := range []string{"live-token", "dead-token"} {
		r := s.Send(context.Background(), providers.Push{ID: "job-1/" + tok, Token: tok, Content: content})
		fmt.Printf("%s %v %q\n", tok, r.Outcome, r.Reason)
	}
	for _, req := range f.Requests() {
		fmt.Println(req.Token, req.Status, req.Header.Get("apns-topic"))
	}
	// Output:
	// live-token delivered ""
	// dead-token token_invalid "Unregistered"
	// live-token 200 com.example.app
	// dead-token 410 com.example.app
}

// A real FCM sender pointed at the fake, authenticated through the fake's
// token endpoint, as HUSH_FCM_CREDENTIALS_FILE and HUSH_FCM_ENDPOINT would
// configure it.
func ExampleStartFCM() {
	f, err := fake.StartFCM()
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	dir, err := os.MkdirTemp("", "hush-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	creds, err := fake.WriteServiceAccount(dir, f.TokenURL(), "demo-project")
	if err != nil {
		log.Fatal(err)
	}
	s, err := fcm.New(context.Background(), fcm.Config{CredentialsFile: creds, Endpoint: f.Endpoint()})
	if err != nil {
		log.Fatal(err)
	}

	f.Script("busy-token", fake.TooMany(30*time.Second))
	content := &payload.Content{Alert: &payload.Alert{Title: "Hi"}}
	for _, tok := range []string{"live-token", "busy-token"} {
		r := s.Send(context.Background(), providers.Push{ID: "job-1/" + tok, Token: tok, Content: content})
		fmt.Printf("%s %v %q %v\n", tok, r.Outcome, r.Reason, r.RetryAfter)
	}
	fmt.Println(len(f.Requests()), "sends,", f.TokenRequests(), "access token")
	// Output:
	// live-token delivered "" 0s
	// busy-token throttled "QUOTA_EXCEEDED" 30s
	// 2 sends, 1 access token
}
