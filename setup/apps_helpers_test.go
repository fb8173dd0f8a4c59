package setup

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	pkcs12 "software.sslmate.com/src/go-pkcs12"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/providers/dryrun"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/worker"
)

// creds are credential files under dir/keys, as an apps file beside them
// names them: keys/shop.p8 (an APNs key), keys/courier.p12 (a
// certificate, password s3cret) and keys/sa.json (a service account of
// testkit.FCMProject whose token_uri is tokenURL).
type creds struct {
	dir           string
	keyID, teamID string
	pub           *ecdsa.PublicKey
}

func writeCreds(t *testing.T, tokenURL string) creds {
	t.Helper()
	dir := t.TempDir()
	c := creds{dir: dir}
	c.keyID, c.teamID, c.pub = writeAPNsKey(t, filepath.Join(dir, "keys", "shop.p8"))
	writeP12(t, filepath.Join(dir, "keys", "courier.p12"), "s3cret")
	sa, err := fake.WriteServiceAccount(t.TempDir(), tokenURL, testkit.FCMProject)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(sa)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "keys", "sa.json"), string(data))
	return c
}

// file writes an apps file into the creds' directory, {{KEY_ID}} and
// {{TEAM_ID}} replaced, and returns its path.
func (c creds) file(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(c.dir, name)
	writeFile(t, path, strings.NewReplacer("{{KEY_ID}}", c.keyID, "{{TEAM_ID}}", c.teamID).Replace(text))
	return path
}

// writeAPNsKey writes a new APNs key to path and returns its ids and
// public key.
func writeAPNsKey(t *testing.T, path string) (keyID, teamID string, pub *ecdsa.PublicKey) {
	t.Helper()
	file, keyID, teamID, err := fake.WriteAPNsKey(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(data)
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, string(data))
	return keyID, teamID, &key.(*ecdsa.PrivateKey).PublicKey
}

// writeP12 writes a self-signed client certificate and its key as a .p12
// protected by password.
func writeP12(t *testing.T, path, password string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "Apple Push Services: com.example.courier"},
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
	writeFile(t, path, string(data))
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// Written aside and renamed into place, as a Kubernetes secret volume
	// swaps its files: the reload tests poll every 20 ms, and a poll
	// between os.WriteFile's truncate and its write would read half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// kidOf is the key id of the provider token an APNs request carries.
func kidOf(t *testing.T, r fake.Request) string {
	t.Helper()
	_, bearer, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	head, _, _ := strings.Cut(bearer, ".")
	data, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		t.Fatalf("provider token %q: %v", bearer, err)
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	return h.Kid
}

// isDryRun reports whether s is the dry-run sender, or the dry-run sender
// of Web Push devices that judges their endpoints.
func isDryRun(s worker.Sender) bool {
	if w, ok := s.(dryRunWebPush); ok {
		s = w.Sender
	}
	_, ok := s.(*dryrun.Sender)
	return ok
}
