package fake_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hushpush/hush/providers/fake"
	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/token"
)

// apnsClient is a real apns2 token client trusting f's certificate.
func apnsClient(t *testing.T, f *fake.APNs) (*apns2.Client, *token.Token) {
	t.Helper()
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	key, err := token.AuthKeyFromFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	tok := &token.Token{AuthKey: key, KeyID: keyID, TeamID: teamID}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(f.CAPEM()) {
		t.Fatal("CAPEM: no certificate")
	}
	c := apns2.NewTokenClient(tok)
	c.Host = f.URL
	var h2 http.Protocols
	h2.SetHTTP2(true)
	c.HTTPClient = &http.Client{Transport: &http.Transport{Protocols: &h2, TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(c.CloseIdleConnections)
	return c, tok
}

func startAPNs(t *testing.T) *fake.APNs {
	t.Helper()
	f, err := fake.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

func TestAPNsScriptSequence(t *testing.T) {
	f := startAPNs(t)
	c, _ := apnsClient(t, f)
	f.Script("tok-a", fake.Status(503), fake.Unregistered(), fake.OK())
	f.Script("", fake.TooMany(time.Second))

	type answer struct {
		Token  string
		Status int
		Reason string
	}
	var got []answer
	for _, tok := range []string{"tok-a", "tok-a", "tok-a", "tok-a", "other"} {
		res, err := c.PushWithContext(context.Background(), &apns2.Notification{DeviceToken: tok, Topic: "t", Payload: []byte(`{"aps":{}}`)})
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, answer{tok, res.StatusCode, res.Reason})
		if res.StatusCode == http.StatusGone && res.Timestamp.IsZero() {
			t.Errorf("410 without timestamp")
		}
	}
	want := []answer{
		{"tok-a", 503, "ServiceUnavailable"},
		{"tok-a", 410, "Unregistered"},
		{"tok-a", 200, ""},
		{"tok-a", 200, ""},
		{"other", 429, "TooManyRequests"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	reqs := f.Requests()
	var statuses []int
	for _, r := range reqs {
		statuses = append(statuses, r.Status)
	}
	if diff := cmp.Diff([]int{503, 410, 200, 200, 429}, statuses); diff != "" {
		t.Errorf("recorded statuses (-want +got):\n%s", diff)
	}
	if string(reqs[0].Body) != `{"aps":{}}` || reqs[0].Header.Get("apns-topic") != "t" {
		t.Errorf("recorded request = %q %v", reqs[0].Body, reqs[0].Header)
	}
	for i := 1; i < len(reqs); i++ {
		if reqs[i].At.Before(reqs[i-1].At) {
			t.Errorf("request %d arrived before request %d", i, i-1)
		}
	}
}

func TestAPNsAuth(t *testing.T) {
	tests := []struct {
		name       string
		trust      bool // trust the client's key
		trustOther bool // trust only another key
		bearer     string
		wantStatus int
		wantReason string
	}{
		{name: "valid JWT", wantStatus: 200},
		{name: "valid JWT, signature checked", trust: true, wantStatus: 200},
		{name: "signed by an untrusted key", trustOther: true, wantStatus: 403, wantReason: "InvalidProviderToken"},
		{name: "garbage bearer", bearer: "bearer not.a.jwt", wantStatus: 403, wantReason: "InvalidProviderToken"},
		{name: "no bearer", bearer: "-", wantStatus: 403, wantReason: "MissingProviderToken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := startAPNs(t)
			c, tok := apnsClient(t, f)
			if tt.trust {
				f.TrustKey(tok.KeyID, &tok.AuthKey.PublicKey)
			}
			if tt.trustOther {
				_, other := apnsClient(t, f)
				f.TrustKey(other.KeyID, &other.AuthKey.PublicKey)
			}
			if tt.bearer != "" {
				c.Token = nil
				c.HTTPClient.Transport = headerTransport{base: c.HTTPClient.Transport, auth: tt.bearer}
			}
			res, err := c.PushWithContext(context.Background(), &apns2.Notification{DeviceToken: "tok", Topic: "t", Payload: []byte(`{}`)})
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != tt.wantStatus || res.Reason != tt.wantReason {
				t.Errorf("answer = %d %q, want %d %q", res.StatusCode, res.Reason, tt.wantStatus, tt.wantReason)
			}
			accepted, rejected := f.Counts()
			wantAccepted := 0
			if tt.wantStatus == 200 {
				wantAccepted = 1
			}
			if accepted != wantAccepted || rejected != 1-wantAccepted || len(f.Requests()) != wantAccepted {
				t.Errorf("accepted, rejected, recorded = %d, %d, %d; want %d, %d, %d",
					accepted, rejected, len(f.Requests()), wantAccepted, 1-wantAccepted, wantAccepted)
			}
		})
	}
}

// headerTransport sets (or, for "-", removes) the Authorization header.
type headerTransport struct {
	base http.RoundTripper
	auth string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if h.auth == "-" {
		r.Header.Del("Authorization")
	} else {
		r.Header.Set("Authorization", h.auth)
	}
	return h.base.RoundTrip(r)
}

func TestAPNsLatency(t *testing.T) {
	f := startAPNs(t)
	c, _ := apnsClient(t, f)
	f.Script("slow", fake.OK().WithLatency(300*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.PushWithContext(ctx, &apns2.Notification{DeviceToken: "slow", Topic: "t", Payload: []byte(`{}`)})
	if err == nil {
		t.Fatal("push to a slow token with a 50ms deadline succeeded")
	}
	start := time.Now()
	res, err := c.PushWithContext(context.Background(), &apns2.Notification{DeviceToken: "slow", Topic: "t", Payload: []byte(`{}`)})
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("push = %v, %v", res, err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("answered after %v, want at least 300ms", d)
	}
}

func (h headerTransport) CloseIdleConnections() {
	if c, ok := h.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// A forgotten key is refused from then on, even when it was the only one
// trusted; another trusted key still works.
func TestAPNsForgetKey(t *testing.T) {
	f := startAPNs(t)
	old, oldTok := apnsClient(t, f)
	next, nextTok := apnsClient(t, f)
	f.TrustKey(oldTok.KeyID, &oldTok.AuthKey.PublicKey)
	push := func(c *apns2.Client) int {
		res, err := c.PushWithContext(context.Background(), &apns2.Notification{DeviceToken: "tok", Topic: "t", Payload: []byte(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		return res.StatusCode
	}
	if got := push(old); got != 200 {
		t.Fatalf("trusted key: %d", got)
	}
	f.ForgetKey(oldTok.KeyID)
	if got := push(old); got != 403 {
		t.Errorf("forgotten key, none left: %d, want 403", got)
	}
	f.TrustKey(nextTok.KeyID, &nextTok.AuthKey.PublicKey)
	if got, gotOld := push(next), push(old); got != 200 || gotOld != 403 {
		t.Errorf("new key %d, forgotten key %d; want 200, 403", got, gotOld)
	}
}
