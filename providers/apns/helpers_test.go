package apns_test

import (
	"testing"

	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fake"
	"github.com/sideshow/apns2/token"
)

const topic = "com.example.hush"

// startFake starts a fake APNs that verifies the signature of the sender's
// provider token, and returns it with a sender configured for it.
func startFake(tb testing.TB) (*fake.APNs, *apns.Sender) {
	tb.Helper()
	f, err := fake.StartAPNs()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(f.Close)
	dir := tb.TempDir()
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(dir)
	if err != nil {
		tb.Fatal(err)
	}
	key, err := token.AuthKeyFromFile(keyFile)
	if err != nil {
		tb.Fatal(err)
	}
	f.TrustKey(keyID, &key.PublicKey)
	caFile, err := f.WriteCA(dir)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := apns.New(apns.Config{
		KeyFile: keyFile, KeyID: keyID, TeamID: teamID,
		Topic: topic, Endpoint: f.URL, CAFile: caFile,
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return f, s
}
