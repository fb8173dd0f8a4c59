package webpush_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/webpush"
)

// A sender signs with the app's VAPID key and encrypts for each
// subscription; here the push service is a local fake that decrypts what
// it receives.
func ExampleSender_Send() {
	svc, _ := fake.StartWebPush()
	defer svc.Close()
	dir, _ := os.MkdirTemp("", "webpush-example")
	defer os.RemoveAll(dir)
	ca, _ := svc.WriteCA(dir)

	key, _ := webpush.GenerateVAPIDKey()
	// The fake listens on 127.0.0.1, which the egress policy refuses
	// unless a private network allows it.
	loopback := webpush.Egress{Origins: []string{webpush.OriginsPublic}, PrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	s, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "mailto:ops@example.com", CAFile: ca, Egress: loopback})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// The browser subscribes with key.PublicKey() as applicationServerKey
	// and hands the subscription JSON to the backend: the device's token.
	token, _ := svc.Subscribe(key.PublicKey())
	r := s.Send(context.Background(), providers.Push{
		Platform: payload.WebPush, Token: token,
		Content: &payload.Content{Alert: &payload.Alert{Title: "Shipped", Body: "Order 4711"}, Data: map[string]string{"order": "4711"}},
	})
	fmt.Println(r.Outcome, r.StatusCode)
	fmt.Println(string(svc.Requests()[0].Body))
	// Output:
	// delivered 201
	// {"notification":{"title":"Shipped","body":"Order 4711"},"data":{"order":"4711"}}
}
