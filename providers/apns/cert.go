package apns

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"

	pkcs12 "software.sslmate.com/src/go-pkcs12"
)

// loadP12 reads a certificate and its key from a PKCS #12 file for
// certificate auth. It decodes files exported by OpenSSL 3 with its
// defaults (PBES2, AES-256-CBC, a SHA-256 MAC) as well as legacy ones
// (3DES or RC2, a SHA-1 MAC): apns2's certificate.FromP12File decodes with
// the frozen golang.org/x/crypto/pkcs12, which knows only the legacy ones.
// A wrong password is a *FieldError about cert_password, anything else
// one about cert_file.
func loadP12(file, password string) (tls.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return tls.Certificate{}, fieldErr("cert_file", err)
	}
	key, leaf, chain, err := pkcs12.DecodeChain(data, password)
	switch {
	case errors.Is(err, pkcs12.ErrIncorrectPassword):
		return tls.Certificate{}, fieldErr("cert_password", fmt.Errorf("wrong password for %q: %w", file, err))
	case err != nil:
		return tls.Certificate{}, fieldErr("cert_file", fmt.Errorf("%q is not a PKCS #12 (.p12) certificate and key: %w", file, err))
	}
	cert := tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}
	for _, c := range chain {
		cert.Certificate = append(cert.Certificate, c.Raw)
	}
	return cert, nil
}
