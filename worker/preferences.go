package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/throttle"
)

// A user's own preferences, per app: the categories they opted out of,
// their own quiet hours and time zone (throttle.Preferences). The app's
// limiter keeps them beside the user's bookings, so the Client reaches
// them through App.Limiter, found by name as a job's app is.

// UserData is a Limiter that keeps users' own preferences and deletes
// everything it keeps of a user (throttle.Redis and throttle.Memory). A
// Limiter without it answers ErrNoPreferences.
type UserData interface {
	// PutPreferences replaces user's preferences (the zero Preferences
	// deletes them); a bad field is a *throttle.PreferencesError.
	PutPreferences(ctx context.Context, user string, p throttle.Preferences) error
	// GetPreferences returns user's preferences, the zero Preferences
	// when none are stored.
	GetPreferences(ctx context.Context, user string) (throttle.Preferences, error)
	// DeleteUser removes every key the limiter keeps for user.
	DeleteUser(ctx context.Context, user string) error
}

// ErrNoPreferences is wrapped by the error of a preferences call to an
// app whose limiter is not a UserData.
var ErrNoPreferences = errors.New("not supported: the app's limiter keeps no user preferences")

// errNoApps is the error of a preferences call to a Client outside a
// Worker: it has no apps, so no limiters.
var errNoApps = errors.New("worker: this Client serves no apps (a Worker's Client does)")

// userData resolves app as a job's app is (Apps.resolve: "" is the only
// app, or else DefaultApp) and returns it with its limiter's UserData.
func (c *Client) userData(app string) (*App, UserData, error) {
	if c.apps == nil {
		return nil, nil, errNoApps
	}
	a, err := c.apps.Resolve(app)
	if err != nil {
		return nil, nil, err
	}
	ud, ok := a.Limiter.(UserData)
	if !ok {
		return nil, nil, fmt.Errorf("app %q: %w", a.Name, ErrNoPreferences)
	}
	return a, ud, nil
}

// PutPreferences replaces user's preferences in app ("": the only app, or
// else DefaultApp) with p; the zero Preferences deletes them. A bad field
// is a *throttle.PreferencesError; an app not configured wraps
// ErrUnknownApp (ErrAppRequired when none is named and several are), and
// an app whose limiter keeps no preferences ErrNoPreferences.
//
// The limiter applies the opt-outs at the next booking of each of the
// user's pushes, held ones included (docs/limiter.md). A write with an
// opt-out answers cancelGrace after it was made, on this process's clock,
// as Cancel does: every booking that read the preferences before and
// allowed a send has started its calls by then, so nothing of a category
// opted out of leaves after the answer. Every such write waits, the
// opt-outs it keeps too: a retry of a write whose answer was lost finds
// its opt-outs stored already, and must still wait for the bookings that
// read the preferences before the first try.
func (c *Client) PutPreferences(ctx context.Context, app, user string, p throttle.Preferences) error {
	_, ud, err := c.userData(app)
	if err != nil {
		return err
	}
	if err := ud.PutPreferences(ctx, user, p); err != nil {
		return err
	}
	if len(p.OptOut) == 0 || mutant.On("optOutNoGrace") {
		return nil
	}
	timer := time.NewTimer(cancelGrace)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// GetPreferences returns user's preferences in app (the zero Preferences
// when none are stored), with PutPreferences's errors for the app.
func (c *Client) GetPreferences(ctx context.Context, app, user string) (throttle.Preferences, error) {
	_, ud, err := c.userData(app)
	if err != nil {
		return throttle.Preferences{}, err
	}
	return ud.GetPreferences(ctx, user)
}

// DeleteUser removes every key hush keeps for user in app (and so in
// every app sharing its limiter), for a data-deletion request, with
// PutPreferences's errors for the app. With
// throttle.Redis those are the user's preferences, every limiter set
// (windows, gap and bookings: a held push's booking is given back) and
// the collapse records (throttle.Redis.DeleteUser). It does not touch what
// names the user inside keys shared with others: the hush:events entries
// of the user's pushes (until the stream's cap trims them) and the tasks
// of jobs not yet finished, whose payloads carry the user's id and
// devices (cancel those jobs first). The bookings go between two raises
// of the reset mark, as a throttle reset's do (ResetThrottle), so a push
// held before the deletion books again, and is counted, when it wakes.
func (c *Client) DeleteUser(ctx context.Context, app, user string) error {
	a, ud, err := c.userData(app)
	if err != nil {
		return err
	}
	admin, _ := a.Limiter.(ThrottleAdmin)
	return forgetMarked(ctx, c.store, c.now, c.log, admin, user, ud.DeleteUser)
}
