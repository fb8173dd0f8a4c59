package providers_test

import (
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/hushpush/hush/providers"
)

func TestRedactToken(t *testing.T) {
	const tok = "3f1c9a0b7d2e4f6a8b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a"
	cause := &url.Error{Op: "Post", URL: "https://api.push.apple.com/3/device/" + tok, Err: errors.New("connection refused")}
	err := providers.RedactToken(fmt.Errorf("apns: %w", cause), tok)
	if got, want := err.Error(), `apns: Post "https://api.push.apple.com/3/device/3f1c9a…1f2a": connection refused`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if _, ok := errors.AsType[*url.Error](err); !ok {
		t.Error("errors.As does not find the *url.Error any more")
	}
	if err := providers.RedactToken(nil, tok); err != nil {
		t.Errorf("RedactToken(nil) = %v", err)
	}
	plain := errors.New("no token here")
	if err := providers.RedactToken(plain, tok); err != plain {
		t.Errorf("an error without the token came back as %v, want it unchanged", err)
	}
}
