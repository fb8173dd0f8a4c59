package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// recordSize is the rs field of the aes128gcm header. A push message is
// one record, so any size above the body works; 4096 is what RFC 8291's
// example and the browsers use.
const recordSize = 4096

// The HKDF info strings of RFC 8188 §2.2 and §2.3 and RFC 8291 §3.4.
const (
	cekInfo    = "Content-Encoding: aes128gcm\x00"
	nonceInfo  = "Content-Encoding: nonce\x00"
	webPushKey = "WebPush: info\x00"
)

// encryptRecord is RFC 8188 aes128gcm for a plaintext sent as one record:
// the header (salt, rs, idlen, keyid) then the AEAD-sealed plaintext with
// the last-record delimiter 0x02. ikm is the input keying material, salt
// 16 random bytes, keyid the sender's key (RFC 8291: its public key).
func encryptRecord(plaintext, ikm, salt, keyid []byte) ([]byte, error) {
	if len(salt) != 16 {
		return nil, fmt.Errorf("salt is %d bytes, want 16", len(salt))
	}
	if len(keyid) > 255 {
		return nil, errors.New("key id longer than 255 bytes")
	}
	if len(plaintext)+1+16 > recordSize {
		return nil, fmt.Errorf("plaintext of %d bytes does not fit one %d-byte record", len(plaintext), recordSize)
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, err
	}
	cek, err := hkdf.Expand(sha256.New, prk, cekInfo, 16)
	if err != nil {
		return nil, err
	}
	nonce, err := hkdf.Expand(sha256.New, prk, nonceInfo, 12)
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
	out := make([]byte, 0, 16+4+1+len(keyid)+len(plaintext)+1+gcm.Overhead())
	out = append(out, salt...)
	out = binary.BigEndian.AppendUint32(out, recordSize)
	out = append(out, byte(len(keyid)))
	out = append(out, keyid...)
	record := append(append(make([]byte, 0, len(plaintext)+1), plaintext...), 0x02)
	// The first record's nonce is NONCE XOR 0: NONCE itself.
	return gcm.Seal(out, nonce, record, nil), nil
}

// encrypt is RFC 8291 message encryption: the ECDH secret of the sender's
// ephemeral key as and the user agent's key ua, mixed with the auth secret,
// is the IKM of one aes128gcm record whose key id is as's public key.
func encrypt(plaintext []byte, ua *ecdh.PublicKey, auth []byte, as *ecdh.PrivateKey, salt []byte) ([]byte, error) {
	secret, err := as.ECDH(ua)
	if err != nil {
		return nil, fmt.Errorf("ecdh: %w", err)
	}
	prk, err := hkdf.Extract(sha256.New, secret, auth)
	if err != nil {
		return nil, err
	}
	asPub := as.PublicKey().Bytes()
	info := webPushKey + string(ua.Bytes()) + string(asPub)
	ikm, err := hkdf.Expand(sha256.New, prk, info, 32)
	if err != nil {
		return nil, err
	}
	return encryptRecord(plaintext, ikm, salt, asPub)
}
