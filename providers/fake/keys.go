package fake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
)

// WriteAPNsKey generates a P-256 key and writes it as an APNs auth key
// (PKCS #8 PEM) to dir/AuthKey_<keyID>.p8. The key and team ids are random
// 10-character ids, like Apple's.
func WriteAPNsKey(dir string) (keyFile, keyID, teamID string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", "", fmt.Errorf("fake: generate APNs key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", "", fmt.Errorf("fake: encode APNs key: %w", err)
	}
	keyID, teamID = appleID(), appleID()
	keyFile = filepath.Join(dir, "AuthKey_"+keyID+".p8")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return "", "", "", fmt.Errorf("fake: %w", err)
	}
	return keyFile, keyID, teamID, nil
}

// appleID is a random 10-character upper-case alphanumeric id.
func appleID() string { return rand.Text()[:10] }

// WriteServiceAccount generates an RSA key and writes a Google service-account
// JSON for projectID to dir/service-account.json, with token_uri = tokenURL
// (a fake FCM's TokenURL).
func WriteServiceAccount(dir, tokenURL, projectID string) (file string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", fmt.Errorf("fake: generate service-account key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", fmt.Errorf("fake: encode service-account key: %w", err)
	}
	email := "hush-sender@" + projectID + ".iam.gserviceaccount.com"
	sa := map[string]string{
		"type":                        "service_account",
		"project_id":                  projectID,
		"private_key_id":              rand.Text(),
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                email,
		"client_id":                   "100000000000000000000",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   tokenURL,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	}
	b, err := json.MarshalIndent(sa, "", "  ")
	if err != nil {
		return "", fmt.Errorf("fake: %w", err)
	}
	file = filepath.Join(dir, "service-account.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		return "", fmt.Errorf("fake: %w", err)
	}
	return file, nil
}
