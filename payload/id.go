package payload

import (
	"crypto/rand"
	"encoding/hex"
)

// NewID returns a random job id: 16 bytes from crypto/rand, hex encoded
// (32 characters), for jobs submitted without one.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead).
	return hex.EncodeToString(b[:])
}
