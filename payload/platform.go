package payload

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Platform names a push provider.
type Platform string

const (
	APNs    Platform = "apns"
	FCM     Platform = "fcm"
	WebPush Platform = "webpush"
)

// platformSpec is what payload knows of one platform: the rules Validate
// applies to its devices and to the job's data, and how its payload is
// rendered and measured.
type platformSpec struct {
	// tokenProblem describes what is wrong with a non-empty token, or
	// returns "".
	tokenProblem func(token string) string
	// dataKeyProblem describes why c.Data cannot carry key on this
	// platform, or returns "". It applies to every job, whatever platforms
	// the job uses.
	dataKeyProblem func(c *Content, key string) string
	// render returns the JSON the provider receives for c, which must not
	// be longer than maxBytes.
	render   func(c *Content) ([]byte, error)
	maxBytes int
	// rendered names the output in Validate's size problem ("rendered apns
	// payload is 4100 bytes, limit 4096").
	rendered string
	// contentProblem, when set, names a field of the job this platform's
	// devices cannot be sent and why, or returns "" (Web Push's Topic).
	contentProblem func(c *Content) (field, msg string)
}

// platforms is the one list of known platforms: validation, rendering and
// error messages consult it rather than switching on a platform.
//
// To add a provider: add its Platform constant above and an entry here (its
// token check, reserved data keys, render function and size limit), then
// write its sender package under providers/ and add an entry to the senders
// table in setup/senders.go.
var platforms = map[Platform]platformSpec{
	APNs: {
		tokenProblem:   apnsTokenProblem,
		dataKeyProblem: apnsDataKeyProblem,
		render:         renderAPNs,
		maxBytes:       MaxPayloadBytes,
		rendered:       "apns payload",
	},
	FCM: {
		tokenProblem:   fcmTokenProblem,
		dataKeyProblem: fcmDataKeyProblem,
		render:         renderFCMJSON,
		maxBytes:       MaxPayloadBytes,
		rendered:       "fcm message",
	},
	WebPush: {
		tokenProblem:   webPushTokenProblem,
		dataKeyProblem: webPushDataKeyProblem,
		render:         renderWebPush,
		maxBytes:       MaxWebPushBytes - WebPushOverhead,
		rendered:       "webpush body (4096 bytes once encrypted)",
		contentProblem: webPushContentProblem,
	},
}

// Platforms returns the known platforms, sorted.
func Platforms() []Platform {
	return slices.Sorted(maps.Keys(platforms))
}

// Valid reports whether p is a known platform.
func (p Platform) Valid() bool {
	_, ok := platforms[p]
	return ok
}

// platformChoice lists the known platforms for a message: `"apns" or "fcm"`.
func platformChoice() string {
	ps := Platforms()
	quoted := make([]string, len(ps))
	for i, p := range ps {
		quoted[i] = strconv.Quote(string(p))
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	last := len(quoted) - 1
	return strings.Join(quoted[:last], ", ") + " or " + quoted[last]
}

// apnsTokenHint names what a token that is not hex most likely is: an
// iOS device token's old description ("<3f1c9a0b 7d2e...>", from
// NSData's description) or an FCM registration token; "" otherwise.
func apnsTokenHint(t string) string {
	bare := strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == ' ' {
			return -1
		}
		return r
	}, t)
	switch {
	case bare != "" && bare != t && !strings.ContainsFunc(bare, func(r rune) bool { return !isHexDigit(r) }):
		return ": this looks like an old-style iOS token description; send only its hex digits, without <, > and spaces"
	case strings.Contains(t, ":"):
		return ": this looks like an FCM registration token; send it as an fcm device"
	}
	return ""
}

func apnsTokenProblem(t string) string {
	if i := strings.IndexFunc(t, func(r rune) bool { return !isHexDigit(r) }); i >= 0 {
		return fmt.Sprintf("not hex (invalid character at position %d)%s", i, apnsTokenHint(t))
	}
	if len(t) < MinAPNsTokenLen || len(t) > MaxAPNsTokenLen {
		return fmt.Sprintf("apns token is %d hex characters, want %d to %d", len(t), MinAPNsTokenLen, MaxAPNsTokenLen)
	}
	if len(t)%2 != 0 {
		return fmt.Sprintf("apns token has an odd number (%d) of hex characters", len(t))
	}
	return ""
}

func apnsDataKeyProblem(c *Content, k string) string {
	switch {
	case k == "aps":
		return "reserved: the APNs body keeps its aps dictionary under this key"
	case k == "image" && c.Alert != nil && c.Alert.Image != "":
		return `collides with alert.image, which the APNs body carries in the custom key "image"`
	}
	return ""
}

func fcmTokenProblem(t string) string {
	if len(t) > MaxFCMTokenLen {
		return fmt.Sprintf("fcm token is %d characters, limit %d", len(t), MaxFCMTokenLen)
	}
	if i := strings.IndexFunc(t, func(r rune) bool { return !isFCMTokenChar(r) }); i >= 0 {
		return fmt.Sprintf("invalid character at position %d; fcm tokens use A-Z a-z 0-9 _ : . -", i)
	}
	return ""
}

func fcmDataKeyProblem(_ *Content, k string) string {
	switch {
	case k == "from" || k == "notification" || k == "message_type":
		return "reserved by FCM"
	case strings.HasPrefix(k, "google.") || strings.HasPrefix(k, "gcm."):
		return `reserved by FCM: keys must not start with "google." or "gcm."`
	}
	return ""
}

func isHexDigit(r rune) bool {
	return '0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F'
}

func isFCMTokenChar(r rune) bool {
	return '0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' ||
		r == '_' || r == ':' || r == '.' || r == '-'
}
