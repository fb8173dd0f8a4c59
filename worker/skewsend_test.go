package worker

import (
	"testing"
	"time"

	"github.com/hushpush/hush/worker/internal/task"
)

// behindClock is a worker's clock behind the system's.
type behindClock struct{ by time.Duration }

func (c behindClock) Now() time.Time { return time.Now().Add(-c.by) }

// TestSendByOnTheSystemClock: a worker whose clock (Options.Clock) is
// behind the system's by more than a send's lateness bound still sends.
// The worker decides a call's SendBy on its own clock, and a sender checks
// it against the system clock: handed over unconverted, every call was
// "late for its slot", booked again and late again, and the push never
// left (internal/faultsim seed 2: a node 254 ms behind delivered nothing).
func TestSendByOnTheSystemClock(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{noRun: true})
	e.opts.Clock = behindClock{by: 300 * time.Millisecond}
	w, err := New(e.rdb, e.opts)
	if err != nil {
		t.Fatal(err)
	}
	e.w, e.client = w, w.Client()
	e.start()
	t.Cleanup(e.shutdown)
	tok := apnsToken("skew-behind")
	st := e.waitDone(e.submit(alertJob("skew", "s", apnsRecipient("u-1", tok))), 15*time.Second)
	if st.Counts[task.Delivered] != 1 {
		t.Errorf("counts %v, want 1 delivered", st.Counts)
	}
	if n := len(requestsFor(e.apns.Requests(), tok)); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
