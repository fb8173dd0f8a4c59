package demo

import (
	"fmt"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
)

// badAPNsToken is u-2's APNs token; the fake answers 410 Unregistered.
const badAPNsToken = "dead0000" + "0000000000000000000000000000000000000000000000000000000000"

// expiringTTL is the ttl of the push meant to expire.
const expiringTTL = 500 * time.Millisecond

// burstPush is one notification of the burst: one job for one user.
type burstPush struct {
	user     string
	n        int // 1-based, per user
	id       string
	devices  []payload.Device
	critical bool
	ttl      time.Duration
	category string
	// afterBooked, when positive, holds the push back until that many of
	// the user's pushes are booked (or three seconds have passed).
	afterBooked int
	// at, when positive, holds the push back until that long after the
	// burst.
	at time.Duration
}

// Categories of the burst's pushes, when the demo's categories define
// them.
const (
	catMarketing     = "marketing"
	catTransactional = throttle.TransactionalCategory
)

// marketingPushes is how many of u-1's pushes are marketing.
const marketingPushes = 2

func (p *burstPush) platforms() string {
	names := make([]string, len(p.devices))
	for i, d := range p.devices {
		names[i] = string(d.Platform)
	}
	return strings.Join(names, ", ")
}

func (p *burstPush) job() payload.Job {
	j := payload.Job{
		ID:         p.id,
		Recipients: []payload.Recipient{{UserID: p.user, Devices: p.devices}},
		Content: payload.Content{
			Alert:    &payload.Alert{Title: fmt.Sprintf("Hello %s", p.user), Body: fmt.Sprintf("notification #%d of the demo burst", p.n)},
			Data:     map[string]string{"demo_push": p.id},
			TTL:      payload.Duration(p.ttl),
			Category: p.category,
		},
	}
	if p.critical {
		j.Priority = payload.PriorityCritical
	}
	return j
}

// planBurst lays out users x pushes: u-1 with APNs and FCM (and Web Push,
// which addWebPushDevice adds once the fake push service is up), u-2 the same
// but with a dead APNs token, u-3 with FCM whose last push expires, u-4
// with APNs whose last push is critical; further users cycle through the
// device setups without the special pushes. When cats define them, u-1's
// first pushes are marketing (the others wait until these are booked, so
// that the category's cap, not the order the worker books them in, sets
// their slots), and u-1 gets one more push, transactional, transactionalAt
// after the burst (none when 0).
func planBurst(users, pushes int, cats map[string]throttle.Category, transactionalAt time.Duration) []*burstPush {
	_, marketing := cats[catMarketing]
	_, transactional := cats[catTransactional]
	var out []*burstPush
	for u := 1; u <= users; u++ {
		user := fmt.Sprintf("u-%d", u)
		apns := payload.Device{Platform: payload.APNs, Token: fmt.Sprintf("%064x", 0xa0000+u)}
		fcm := payload.Device{Platform: payload.FCM, Token: "demo-fcm-token-" + user}
		var devices []payload.Device
		switch {
		case u == 2:
			devices = []payload.Device{{Platform: payload.APNs, Token: badAPNsToken}, fcm}
		case u == 3 || (u > 4 && u%3 == 2):
			devices = []payload.Device{fcm}
		case u == 4 || (u > 4 && u%3 == 0):
			devices = []payload.Device{apns}
		default:
			devices = []payload.Device{apns, fcm}
		}
		for n := 1; n <= pushes; n++ {
			p := &burstPush{user: user, n: n, id: fmt.Sprintf("demo-%s-%d", user, n), devices: devices}
			last := n == pushes && pushes > 1
			switch {
			case u == 1 && marketing && n <= marketingPushes:
				p.category = catMarketing
			case u == 1 && marketing:
				p.afterBooked = marketingPushes
			}
			if u == 3 && last {
				p.ttl, p.afterBooked = expiringTTL, n-1
			}
			if u == 4 && last {
				p.critical = true
			}
			out = append(out, p)
		}
		if u == 1 && transactional && transactionalAt > 0 {
			n := pushes + 1
			out = append(out, &burstPush{user: user, n: n, id: fmt.Sprintf("demo-%s-%d", user, n), devices: devices,
				category: catTransactional, at: transactionalAt})
		}
	}
	return out
}
