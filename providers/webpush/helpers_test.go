package webpush

import (
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
)

func pushOf(c *payload.Content, expiry time.Time) providers.Push {
	return providers.Push{Platform: payload.WebPush, Content: c, Expiry: expiry}
}
