package apns_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fake"
)

// TestCertificateFromOpenSSL: a .p12 exported by OpenSSL 3 with its
// defaults (PBES2 with AES-256-CBC, a SHA-256 MAC) and one exported with
// -legacy (RC2-40, a SHA-1 MAC) both load and deliver. The fixtures hold
// one self-signed certificate for topic, valid for a century, password
// s3cret, made with:
//
//	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
//	  -keyout key.pem -out cert.pem -days 36500 \
//	  -subj "/CN=Apple Push Services: com.example.hush" \
//	  -addext "extendedKeyUsage=clientAuth" -addext "keyUsage=digitalSignature"
//	openssl pkcs12 -export -inkey key.pem -in cert.pem -passout pass:s3cret -out openssl3-default.p12
//	openssl pkcs12 -export -legacy -inkey key.pem -in cert.pem -passout pass:s3cret -out openssl3-legacy.p12
func TestCertificateFromOpenSSL(t *testing.T) {
	f, err := fake.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	caFile, err := f.WriteCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"openssl3-default.p12", "openssl3-legacy.p12"} {
		t.Run(name, func(t *testing.T) {
			p12 := filepath.Join("testdata", name)
			_, err := apns.New(apns.Config{Topic: topic, CertFile: p12, CertPassword: "wrong"})
			if fe, ok := errors.AsType[*apns.FieldError](err); !ok || fe.Field != "cert_password" || !strings.Contains(err.Error(), "wrong password") {
				t.Errorf("New with a wrong password: %v, want a *FieldError for cert_password saying the password is wrong", err)
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
		})
	}
	// Not a PKCS #12 file at all.
	_, err = apns.New(apns.Config{Topic: topic, CertFile: caFile, CertPassword: "s3cret"})
	if fe, ok := errors.AsType[*apns.FieldError](err); !ok || fe.Field != "cert_file" {
		t.Errorf("New with a PEM file as the .p12: %v, want a *FieldError for cert_file", err)
	}
}
