package fcm

import (
	"context"
	"testing"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
)

const project = "hush-test"

// startFake starts a fake FCM and a sender authenticated through its token
// endpoint with a generated service account.
func startFake(tb testing.TB) (*fake.FCM, *Sender) {
	tb.Helper()
	f, err := fake.StartFCM()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.Close)
	file, err := fake.WriteServiceAccount(tb.TempDir(), f.TokenURL(), project)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(context.Background(), Config{CredentialsFile: file, Endpoint: f.Endpoint()})
	if err != nil {
		tb.Fatal(err)
	}
	return f, s
}

func alertPush(token string) providers.Push {
	return providers.Push{
		ID: "job/u/" + token, Platform: payload.FCM, Token: token,
		Content: &payload.Content{Alert: &payload.Alert{Title: "t", Body: "b"}},
	}
}
