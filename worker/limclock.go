package worker

import (
	"sync"
	"time"

	"github.com/hushpush/hush/throttle"
)

// limiterClockAge is how long a booking's reading of the limiter's clock
// is used, unless a booking with a shorter round trip reads it again.
const limiterClockAge = 30 * time.Second

// limiterClock is this process's reading of an app's limiter clock, from
// its bookings: a slot the limiter gave (on its clock, which is the Redis
// server's by default) becomes a local instant without asking the limiter
// again (heldSlots). It keeps the booking with the shortest round trip of
// the last limiterClockAge; a busy round trip reads the clock less
// exactly.
//
// The limiter read its clock between the booking's asking and its answer,
// so ahead, the limiter's now minus the local instant the answer came, is
// at most the skew (the limiter's clock ahead of this one's), by up to the
// round trip. A slot at on the limiter's clock is then at - ahead on the
// local one, at or after the true instant (never early), as a booking's
// answer makes it (decide.Plan: answered + the wait).
type limiterClock struct {
	mu    sync.Mutex
	ahead time.Duration
	rtt   time.Duration
	at    time.Time // when the reading was taken (local); zero: none
}

// learn reads the limiter's clock from a booking asked at asked and
// answered at answered, with its reservations res (one whose Now is zero
// failed).
func (c *limiterClock) learn(res []throttle.Reservation, asked, answered time.Time) {
	var now time.Time
	for _, r := range res {
		if !r.Now.IsZero() {
			now = r.Now
			break
		}
	}
	if now.IsZero() {
		return
	}
	rtt := answered.Sub(asked)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || rtt <= c.rtt || answered.Sub(c.at) > limiterClockAge {
		c.ahead, c.rtt, c.at = now.Sub(answered), rtt, answered
	}
}

// found is the reservation a booking looked up at local instant now would
// most likely answer for the slot at (limiter's clock), held since: Now is
// the limiter's now read at local now, so plan measures the wait and the
// lateness from there. ok is false when there is no recent reading.
func (c *limiterClock) found(at, now time.Time) (r throttle.Reservation, ok bool) {
	c.mu.Lock()
	ahead, taken := c.ahead, c.at
	c.mu.Unlock()
	if taken.IsZero() || now.Sub(taken) > limiterClockAge || now.Before(taken.Add(-time.Second)) {
		return throttle.Reservation{}, false
	}
	ln := now.Add(ahead)
	return throttle.Reservation{At: at, Now: ln, Wait: max(at.Sub(ln), 0), Existing: true}, true
}

// local is the local instant of at, an instant on the limiter's clock,
// from the reading kept (never early, as found's); ok is false when there
// is no recent reading at now. One reading maps every instant, so instants
// granted by different round trips (a pacer's turns) keep their spacing.
func (c *limiterClock) local(at, now time.Time) (t time.Time, ok bool) {
	c.mu.Lock()
	ahead, taken := c.ahead, c.at
	c.mu.Unlock()
	if taken.IsZero() || now.Sub(taken) > limiterClockAge || now.Before(taken.Add(-time.Second)) {
		return time.Time{}, false
	}
	return at.Add(-ahead), true
}

// limiterClockOf is app's limiterClock in this process.
func (w *Worker) limiterClockOf(app string) *limiterClock {
	if c, ok := w.limClocks.Load(app); ok {
		return c.(*limiterClock)
	}
	c, _ := w.limClocks.LoadOrStore(app, &limiterClock{})
	return c.(*limiterClock)
}
