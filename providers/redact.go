package providers

import "strings"

// TokenEnds shows the ends of a device token, as logs may: its first six
// and last four characters.
func TokenEnds(token string) string {
	if len(token) <= 12 {
		return "…"
	}
	return token[:6] + "…" + token[len(token)-4:]
}

// RedactToken returns err with every occurrence of token in its text
// shown as TokenEnds(token): an SDK's error may carry the request URL,
// which for APNs holds the whole device token. errors.Is and errors.As
// still see err. A nil err or an empty token returns err.
func RedactToken(err error, token string) error {
	if err == nil || token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return &redactedError{err: err, token: token}
}

type redactedError struct {
	err   error
	token string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.token, TokenEnds(e.token))
}

func (e *redactedError) Unwrap() error { return e.err }
