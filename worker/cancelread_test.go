package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/task"
)

// errDropped is a read's answer lost with its connection.
var errDropped = errors.New("injected: connection dropped")

// A delivery whose read of its job's cancellation fails does not send:
// the job is cancelled right before the wave's read (in its booking's
// round trip, or alone for a priority that skips the limiter), that
// read's answer is lost, and nothing of the job reaches the provider; the
// next read answers, and every delivery ends cancelled with its booking
// given back.
func TestFailedCancellationReadSendsNothing(t *testing.T) {
	t.Parallel()
	for name, prio := range map[string]payload.Priority{"booked": payload.PriorityNormal, "bypass": payload.PriorityCritical} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{bypass: []payload.Priority{payload.PriorityCritical}, noRun: true})
			var lost atomic.Bool
			e.rdb.AddHook(&cancelReads{job: "gone",
				before: func(ctx context.Context) {
					if !lost.Load() {
						if _, err := e.client.store.cancel(ctx, "gone", time.Now()); err != nil {
							t.Error(err)
						}
					}
				},
				after: func(_ context.Context, err error) error {
					if lost.CompareAndSwap(false, true) {
						return errDropped
					}
					return err
				},
			})
			e.start()
			t.Cleanup(e.shutdown)
			job := alertJob("gone", "gone", apnsRecipient("a", apnsToken("gone/a")), apnsRecipient("b", apnsToken("gone/b")))
			job.Priority = prio
			e.submit(job)
			st := e.waitDone2("gone", 20*time.Second)
			if !lost.Load() {
				t.Fatal("no read of the job's cancellation was made")
			}
			if n := len(requestsFor(e.apns.Requests(), apnsToken("gone/a"))) + len(requestsFor(e.apns.Requests(), apnsToken("gone/b"))); n != 0 {
				t.Errorf("%d pushes of the cancelled job sent, want none", n)
			}
			if st.Counts[task.Cancelled] != 2 {
				t.Errorf("counts %v, want both cancelled", st.Counts)
			}
			for _, u := range []string{"a", "b"} {
				s, err := e.lim.Status(context.Background(), u, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(s.Entries) != 0 {
					t.Errorf("user %s still holds bookings %v", u, s.Entries)
				}
			}
		})
	}
}
