package apns_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fake"
	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

func TestNewConfigErrors(t *testing.T) {
	dir := t.TempDir()
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.p8")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		cfg     apns.Config
		wantKey string // the configuration key the error must name
	}{
		{"no topic", apns.Config{KeyFile: keyFile, KeyID: keyID, TeamID: teamID}, "HUSH_APNS_TOPIC"},
		{"no credentials", apns.Config{Topic: topic}, "HUSH_APNS_KEY_FILE"},
		{"both credentials", apns.Config{Topic: topic, KeyFile: keyFile, KeyID: keyID, TeamID: teamID, CertFile: "x.p12"}, "HUSH_APNS_CERT_FILE"},
		{"no key id", apns.Config{Topic: topic, KeyFile: keyFile, TeamID: teamID}, "HUSH_APNS_KEY_ID"},
		{"no team id", apns.Config{Topic: topic, KeyFile: keyFile, KeyID: keyID}, "HUSH_APNS_TEAM_ID"},
		{"missing key file", apns.Config{Topic: topic, KeyFile: filepath.Join(dir, "nope.p8"), KeyID: keyID, TeamID: teamID}, "HUSH_APNS_KEY_FILE"},
		{"key file not PEM", apns.Config{Topic: topic, KeyFile: notPEM, KeyID: keyID, TeamID: teamID}, "HUSH_APNS_KEY_FILE"},
		{"missing cert file", apns.Config{Topic: topic, CertFile: filepath.Join(dir, "nope.p12")}, "HUSH_APNS_CERT_FILE"},
		{"endpoint not https", apns.Config{Topic: topic, KeyFile: keyFile, KeyID: keyID, TeamID: teamID, Endpoint: "http://127.0.0.1:1"}, "HUSH_APNS_ENDPOINT"},
		{"CA file without PEM", apns.Config{Topic: topic, KeyFile: keyFile, KeyID: keyID, TeamID: teamID, CAFile: notPEM}, "HUSH_APNS_CA_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := apns.New(tt.cfg)
			if err == nil {
				s.Close()
				t.Fatalf("New succeeded, want an error naming %s", tt.wantKey)
			}
			if !strings.Contains(err.Error(), tt.wantKey) {
				t.Errorf("New error %q does not name %s", err, tt.wantKey)
			}
		})
	}
}

// TestCertificateAuth loads a generated .p12 and delivers through the fake,
// which accepts a client certificate instead of a provider token.
func TestCertificateAuth(t *testing.T) {
	f, err := fake.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	caFile, err := f.WriteCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	p12 := writeP12(t, dir, "s3cret")

	if _, err := apns.New(apns.Config{Topic: topic, CertFile: p12, CertPassword: "wrong"}); err == nil {
		t.Errorf("New with a wrong .p12 password succeeded")
	}
	s, err := apns.New(apns.Config{Topic: topic, CertFile: p12, CertPassword: "s3cret", Endpoint: f.URL, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := s.Send(context.Background(), alertPush(deviceToken))
	if diff := cmp.Diff(providers.Result{Outcome: providers.Delivered, StatusCode: 200}, got); diff != "" {
		t.Errorf("Send (-want +got):\n%s", diff)
	}
	reqs := f.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "" {
		t.Errorf("fake recorded %d requests (want 1, without a provider token): %+v", len(reqs), reqs)
	}
}

// writeP12 writes a self-signed client certificate and its key as PKCS #12
// (legacy 3DES, the encryption apns2's decoder reads).
func writeP12(t *testing.T, dir, password string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "Apple Push Services: " + topic},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	data, err := pkcs12.LegacyDES.Encode(key, cert, nil, password)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "apns.p12")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestSendFailures(t *testing.T) {
	f, _ := startFake(t)
	caFile, err := f.WriteCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A listener that is closed at once: nothing answers on its port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadAddr := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name string
		cfg  apns.Config
		want providers.Result
	}{
		{
			name: "untrusted server certificate",
			cfg:  apns.Config{KeyFile: keyFile, KeyID: keyID, TeamID: teamID, Topic: topic, Endpoint: f.URL},
			want: providers.Result{Outcome: providers.Permanent, Reason: "tls", Credential: true},
		},
		{
			name: "provider token signed by a key the server does not know",
			cfg:  apns.Config{KeyFile: keyFile, KeyID: keyID, TeamID: teamID, Topic: topic, Endpoint: f.URL, CAFile: caFile},
			want: providers.Result{Outcome: providers.Permanent, Reason: "InvalidProviderToken", StatusCode: 403, Credential: true},
		},
		{
			name: "nothing listening",
			cfg:  apns.Config{KeyFile: keyFile, KeyID: keyID, TeamID: teamID, Topic: topic, Endpoint: "https://" + deadAddr},
			want: providers.Result{Outcome: providers.Transient, Reason: "network"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := apns.New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := s.Send(context.Background(), alertPush(deviceToken))
			if diff := cmp.Diff(tt.want, got, ignoreErr); diff != "" {
				t.Errorf("Send (-want +got):\n%s", diff)
			}
			if got.Err == nil {
				t.Errorf("Err is nil")
			}
		})
	}
}
