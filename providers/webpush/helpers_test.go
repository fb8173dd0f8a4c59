package webpush

import (
	"net/http"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
)

func pushOf(c *payload.Content, expiry time.Time) providers.Push {
	return providers.Push{Platform: payload.WebPush, Content: c, Expiry: expiry}
}

func get(h http.Header, k string) string { return h.Get(k) }
