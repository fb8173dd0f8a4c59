package throttle

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxOptOuts is the most categories one user's Preferences may opt out of.
// Each is a category name (ValidCategory: at most MaxCategoryLen bytes),
// so a user's preferences key holds at most MaxOptOuts fields of at most
// MaxCategoryLen+2 bytes, plus the quiet hours and a zone name.
const MaxOptOuts = 64

// MaxZoneLen is the longest time zone name Preferences may hold.
const MaxZoneLen = 64

// Preferences are one user's own say over their pushes, stored beside the
// user's limiter keys (under the same hash tag).
type Preferences struct {
	// OptOut are the categories the user opted out of, each a category
	// name (ValidCategory), at most MaxOptOuts, sorted and without
	// duplicates once stored. A name the policy does not have is kept.
	OptOut []string
	// Quiet are the user's own quiet hours, in Location; the zero Quiet
	// has none.
	Quiet Quiet
	// Location is the user's time zone (nil: none stored). It is stored
	// by name, so it must be one time.LoadLocation loads (not Local).
	Location *time.Location
}

// PreferencesError reports a Preferences field PutPreferences refused.
type PreferencesError struct {
	// Field names the bad field: "OptOut", "Quiet" or "Location".
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *PreferencesError) Error() string {
	return "throttle: preferences " + e.Field + ": " + e.Reason
}

// normalized is p checked and with OptOut sorted and deduplicated.
func (p Preferences) normalized() (Preferences, error) {
	out := slices.Clone(p.OptOut)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > MaxOptOuts {
		return Preferences{}, &PreferencesError{"OptOut", fmt.Sprintf("%d categories, at most %d", len(out), MaxOptOuts)}
	}
	for _, c := range out {
		if !ValidCategory(c) {
			return Preferences{}, &PreferencesError{"OptOut", fmt.Sprintf("%q is not a category name (1 to %d of a-z, 0-9, _ and -)", c, MaxCategoryLen)}
		}
	}
	if err := p.Quiet.validate(); err != nil {
		return Preferences{}, &PreferencesError{"Quiet", err.Error()}
	}
	if p.Location != nil {
		name := p.Location.String()
		if len(name) > MaxZoneLen {
			return Preferences{}, &PreferencesError{"Location", fmt.Sprintf("zone name of %d bytes, at most %d", len(name), MaxZoneLen)}
		}
		if _, err := time.LoadLocation(name); err != nil || name == "" || name == "Local" {
			return Preferences{}, &PreferencesError{"Location", fmt.Sprintf("%q is not a zone time.LoadLocation loads by name", name)}
		}
	}
	if len(out) == 0 {
		out = nil
	}
	p.OptOut = out
	return p, nil
}

// OptsOut reports whether p opts out of category cat.
func (p Preferences) OptsOut(cat string) bool {
	_, found := slices.BinarySearch(p.OptOut, cat)
	return found
}

// The fields of a user's preferences hash: optOutField + a category
// for each opt-out (the booking script asks HEXISTS of the request's
// category), quietField "<from ms> <to ms>", zoneField the zone's name.
const (
	optOutField = "o:"
	quietField  = "quiet"
	zoneField   = "zone"
)

// prefsKey is the key of user's preferences hash: Key(user) + ":p". A
// category name has no ":", so read from its end a key ending "}:p" is a
// preferences hash.
func (l *Redis) prefsKey(user string) string { return l.Key(user) + ":p" }

// PutPreferences replaces user's preferences with p; the zero Preferences
// deletes them. A bad field is a *PreferencesError.
func (l *Redis) PutPreferences(ctx context.Context, user string, p Preferences) error {
	if err := check(ctx, user); err != nil {
		return err
	}
	p, err := p.normalized()
	if err != nil {
		return err
	}
	key := l.prefsKey(user)
	var fields []any
	for _, c := range p.OptOut {
		fields = append(fields, optOutField+c, "1")
	}
	if !p.Quiet.Off() {
		fields = append(fields, quietField, strconv.FormatInt(p.Quiet.From.Milliseconds(), 10)+" "+strconv.FormatInt(p.Quiet.To.Milliseconds(), 10))
	}
	if p.Location != nil {
		fields = append(fields, zoneField, p.Location.String())
	}
	// One MULTI: a booking never sees half of the old and half of the new.
	pipe := l.rdb.TxPipeline()
	pipe.Del(ctx, key)
	if len(fields) > 0 {
		pipe.HSet(ctx, key, fields...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("throttle: put preferences %q: %w", user, err)
	}
	return nil
}

// GetPreferences returns user's preferences (the zero Preferences when
// none are stored).
func (l *Redis) GetPreferences(ctx context.Context, user string) (Preferences, error) {
	if err := check(ctx, user); err != nil {
		return Preferences{}, err
	}
	pipe := l.rdb.Pipeline()
	cmd := pipe.HGetAll(ctx, l.prefsKey(user))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return Preferences{}, fmt.Errorf("throttle: get preferences %q: %w", user, err)
	}
	p, err := parsePreferences(cmd.Val())
	if err != nil {
		return Preferences{}, fmt.Errorf("throttle: get preferences %q: %w", user, err)
	}
	return p, nil
}

// parsePreferences reads a preferences hash's fields.
func parsePreferences(h map[string]string) (Preferences, error) {
	var p Preferences
	for f, v := range h {
		switch {
		case strings.HasPrefix(f, optOutField):
			p.OptOut = append(p.OptOut, strings.TrimPrefix(f, optOutField))
		case f == quietField:
			from, to, ok := strings.Cut(v, " ")
			a, err1 := strconv.ParseInt(from, 10, 64)
			b, err2 := strconv.ParseInt(to, 10, 64)
			if !ok || err1 != nil || err2 != nil {
				return Preferences{}, fmt.Errorf("%w: preferences quiet %q", ErrUnexpectedReply, v)
			}
			p.Quiet = Quiet{From: time.Duration(a) * time.Millisecond, To: time.Duration(b) * time.Millisecond}
		case f == zoneField:
			loc, err := time.LoadLocation(v)
			if err != nil {
				return Preferences{}, fmt.Errorf("%w: preferences zone %q: %w", ErrUnexpectedReply, v, err)
			}
			p.Location = loc
		}
	}
	slices.Sort(p.OptOut)
	return p, nil
}

// DeleteUser removes every key the limiter keeps for user: its
// preferences, every set (windows, gap and bookings) and its collapse
// records (a data-deletion request). The bookings it held are given back
// with them.
func (l *Redis) DeleteUser(ctx context.Context, user string) error {
	if err := check(ctx, user); err != nil {
		return err
	}
	keys, _ := l.userKeys(user)
	// The keys share the user's hash tag: one DEL works on Redis Cluster.
	if err := l.rdb.Del(ctx, append(keys, l.collapseKey(user), l.prefsKey(user))...).Err(); err != nil {
		return fmt.Errorf("throttle: delete user %q: %w", user, err)
	}
	return nil
}

// PutPreferences replaces user's preferences with p; the zero Preferences
// deletes them. A bad field is a *PreferencesError.
func (m *Memory) PutPreferences(ctx context.Context, user string, p Preferences) error {
	if err := check(ctx, user); err != nil {
		return err
	}
	p, err := p.normalized()
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.OptOut == nil && p.Quiet.Off() && p.Location == nil {
		delete(m.prefs, user)
		return nil
	}
	m.prefs[user] = p
	return nil
}

// GetPreferences returns user's preferences (the zero Preferences when
// none are stored).
func (m *Memory) GetPreferences(ctx context.Context, user string) (Preferences, error) {
	if err := check(ctx, user); err != nil {
		return Preferences{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.prefs[user]
	p.OptOut = slices.Clone(p.OptOut)
	return p, nil
}

// DeleteUser forgets everything about user: preferences, sets and
// collapse records.
func (m *Memory) DeleteUser(ctx context.Context, user string) error {
	if err := check(ctx, user); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.users, user)
	delete(m.prefs, user)
	return nil
}
