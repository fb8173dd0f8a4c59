package fake

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// The HKDF info strings of RFC 8188 §2.2 and §2.3 and RFC 8291 §3.4.
const (
	eceCEKInfo   = "Content-Encoding: aes128gcm\x00"
	eceNonceInfo = "Content-Encoding: nonce\x00"
	eceKeyInfo   = "WebPush: info\x00"
)

// DecryptWebPush is the user agent's side of RFC 8291: it reads an
// aes128gcm body with the subscription's private key ua and auth secret and
// returns the plaintext. It accepts bodies of one or more records; it is
// written from the RFCs apart from providers/webpush, so each checks the
// other.
func DecryptWebPush(body []byte, ua *ecdh.PrivateKey, auth []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("aes128gcm: body shorter than its header")
	}
	salt := body[:16]
	rs := binary.BigEndian.Uint32(body[16:20])
	idlen := int(body[20])
	if len(body) < 21+idlen || rs < 18 {
		return nil, errors.New("aes128gcm: bad header")
	}
	as, err := ecdh.P256().NewPublicKey(body[21 : 21+idlen])
	if err != nil {
		return nil, fmt.Errorf("aes128gcm: key id is not a P-256 public key: %w", err)
	}
	secret, err := ua.ECDH(as)
	if err != nil {
		return nil, err
	}
	prkKey, err := hkdf.Extract(sha256.New, secret, auth)
	if err != nil {
		return nil, err
	}
	ikm, err := hkdf.Expand(sha256.New, prkKey, eceKeyInfo+string(ua.PublicKey().Bytes())+string(as.Bytes()), 32)
	if err != nil {
		return nil, err
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, eceCEKInfo, 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, eceNonceInfo, 12)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	var out []byte
	rest := body[21+idlen:]
	for seq := uint64(0); len(rest) > 0; seq++ {
		n := min(int(rs), len(rest))
		iv := bytes.Clone(nonce)
		for i := range 8 {
			iv[11-i] ^= byte(seq >> (8 * i))
		}
		rec, err := gcm.Open(nil, iv, rest[:n], nil)
		if err != nil {
			return nil, fmt.Errorf("aes128gcm: record %d: %w", seq, err)
		}
		rest = rest[n:]
		i := bytes.LastIndexFunc(rec, func(r rune) bool { return r != 0 })
		if i < 0 {
			return nil, fmt.Errorf("aes128gcm: record %d has no delimiter", seq)
		}
		last := rec[i] == 0x02
		if !last && rec[i] != 0x01 || last != (len(rest) == 0) {
			return nil, fmt.Errorf("aes128gcm: record %d has a bad delimiter", seq)
		}
		out = append(out, rec[:i]...)
	}
	return out, nil
}
