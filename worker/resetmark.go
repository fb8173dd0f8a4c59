package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/hushpush/hush/worker/internal/store"
)

// Reset marks. A reset (DELETE /v1/users/{id}/throttle) deletes a user's
// bookings, the held pushes' too. A held task's first run takes its
// recipients' bookings as found, at the slots its payload carries
// (heldSlots), so without more a push held at the reset would go out at
// its slot uncounted, and the user's next pushes could follow it sooner
// than the rules allow.
//
// So the reset first raises a mark: the limiter's instant (its clock, the
// one bookings are answered on) before which a booking may be gone, with
// resetMargin to spare for the time the reset takes, and raises it again
// to the limiter's instant after the reset. A held task (and a
// hush:waiting-jobs member) carries the limiter's instant of its earliest
// booking (chunk.Booked); its first run reads the mark with its states
// and looks its bookings up, as a re-run does, when it booked before the
// mark: a booking the reset deleted is made again, and counted.
//
// The mark is one number for every app and user, raised only, kept
// without expiry (resetMarkShards small keys). A reset makes the held
// tasks booked before it look up once, which costs them one round trip;
// resets are an operator's action, rare beside held pushes. The mark is
// written in resetMarkShards keys on their own hash slots, and a run
// reads the one of its task id, so that on a cluster no one key is read
// by every held task.
const (
	resetMarkShards = store.ResetMarkShards
	resetMargin     = 10 * time.Second
)

// ResetThrottle forgets user's limiter state through admin, the limiter of
// one of the worker's apps (App.Limiter as a ThrottleAdmin), as DELETE
// /v1/users/{id}/throttle does, between two raises of the reset mark
// (forgetMarked).
func (w *Worker) ResetThrottle(ctx context.Context, admin ThrottleAdmin, user string) error {
	return forgetMarked(ctx, w.store, w.now, w.log, admin, user, admin.Reset)
}

// forgetMarked runs forget, which deletes user's bookings (a reset, or a
// user's deletion), between two raises of the reset mark: before, to the
// limiter's instant read first through admin plus resetMargin, so that a
// held task booked before the deletion and run after it looks its bookings
// up; after, to the limiter's instant read after the deletion, in case it
// took longer. A limiter that reports no clock (admin nil, or a zero
// Status.Now) is read as now. A failure of the second raise is logged, not
// returned: the deletion itself is done.
func forgetMarked(ctx context.Context, s jobStore, now func() time.Time, log *slog.Logger, admin ThrottleAdmin, user string,
	forget func(ctx context.Context, user string) error) error {
	limiterNow := func() (time.Time, error) {
		if admin == nil {
			return now(), nil
		}
		st, err := admin.Status(ctx, user, time.UTC)
		if err != nil {
			return time.Time{}, err
		}
		if st.Now.IsZero() {
			return now(), nil
		}
		return st.Now, nil
	}
	at, err := limiterNow()
	if err != nil {
		return err
	}
	if err := s.raiseResetMark(ctx, at.Add(resetMargin)); err != nil {
		return err
	}
	if err := forget(ctx, user); err != nil {
		return err
	}
	if at, err = limiterNow(); err == nil {
		err = s.raiseResetMark(ctx, at)
	}
	if err != nil {
		log.Warn("user's bookings deleted: raising the reset mark after it failed; held pushes booked more than the margin before the deletion's end may go uncounted",
			"user", user, "margin", resetMargin, "err", err)
	}
	return nil
}
