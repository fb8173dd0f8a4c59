package throttle

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// dayMs is a day of wall-clock time in milliseconds.
const dayMs = int64(24 * time.Hour / time.Millisecond)

// quietLookahead bounds how far ahead of now (or of NotBefore) a booking
// under quiet hours may be placed when its Request has no NotAfter: the
// quiet intervals a decision considers are computed up to there, and a
// later slot is refused as late.
const quietLookahead = 62 * 24 * time.Hour

// Off reports whether q has no quiet hours.
func (q Quiet) Off() bool { return q.From == q.To }

// Contains reports whether t's wall-clock time in loc (nil: UTC) is inside
// the quiet hours.
func (q Quiet) Contains(t time.Time, loc *time.Location) bool {
	if q.Off() {
		return false
	}
	if loc == nil {
		loc = time.UTC
	}
	w := t.In(loc)
	tod := time.Duration(w.Hour())*time.Hour + time.Duration(w.Minute())*time.Minute +
		time.Duration(w.Second())*time.Second + time.Duration(w.Nanosecond())
	if q.From < q.To {
		return q.From <= tod && tod < q.To
	}
	return tod >= q.From || tod < q.To
}

// String is "22:00-08:00" (seconds and milliseconds only when set), or
// "off".
func (q Quiet) String() string {
	if q.Off() {
		return "off"
	}
	return clock(q.From) + "-" + clock(q.To)
}

func clock(d time.Duration) string {
	h, m := d/time.Hour, d%time.Hour/time.Minute
	s := fmt.Sprintf("%02d:%02d", h, m)
	if rest := d % time.Minute; rest != 0 {
		s += fmt.Sprintf(":%02d", rest/time.Second)
		if ms := rest % time.Second / time.Millisecond; ms != 0 {
			s += fmt.Sprintf(".%03d", ms)
		}
	}
	return s
}

// validate checks that both ends are whole milliseconds of one day.
func (q Quiet) validate() error {
	for _, d := range []time.Duration{q.From, q.To} {
		if d < 0 || d >= 24*time.Hour || d%time.Millisecond != 0 {
			return fmt.Errorf("quiet hours %s: %s is not a time of day in whole milliseconds (00:00 to 23:59:59.999)", q, d)
		}
	}
	return nil
}

// ParseQuiet reads quiet hours written "HH:MM-HH:MM" in 24-hour wall-clock
// time ("22:00-08:00": from 22:00 to 08:00 the next morning; the end is
// not quiet), or "" / "off" for none. Seconds may follow ("HH:MM:SS").
func ParseQuiet(s string) (Quiet, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" {
		return Quiet{}, nil
	}
	bad := func(reason string) (Quiet, error) {
		return Quiet{}, &ParseError{What: "quiet hours", Text: s, Reason: reason}
	}
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return bad("want HH:MM-HH:MM, e.g. 22:00-08:00, or off")
	}
	var q Quiet
	var err error
	if q.From, err = parseClock(strings.TrimSpace(from)); err != nil {
		return bad("start: " + err.Error())
	}
	if q.To, err = parseClock(strings.TrimSpace(to)); err != nil {
		return bad("end: " + err.Error())
	}
	if q.Off() {
		return bad("start and end are the same time (write off for no quiet hours)")
	}
	return q, nil
}

// parseClock reads "HH:MM" or "HH:MM:SS", 00:00 to 23:59:59.
func parseClock(s string) (time.Duration, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, fmt.Errorf("%q is not HH:MM", s)
	}
	limits := []int{24, 60, 60}
	units := []time.Duration{time.Hour, time.Minute, time.Second}
	var d time.Duration
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || !twoDigits(p) || n >= limits[i] {
			return 0, fmt.Errorf("%q is not HH:MM (00:00 to 23:59)", s)
		}
		d += time.Duration(n) * units[i]
	}
	return d, nil
}

// twoDigits reports whether s is exactly two ASCII digits (strconv.Atoi
// also takes "+9" and "-0").
func twoDigits(s string) bool {
	return len(s) == 2 && '0' <= s[0] && s[0] <= '9' && '0' <= s[1] && s[1] <= '9'
}

// interval is [s, e) in Unix milliseconds.
type interval struct{ s, e int64 }

// intervals returns the quiet instants in loc that end after from and
// start at or before to, as sorted, disjoint, non-touching intervals
// [s, e) in Unix ms (the first may start before from, the last end after
// to). Within each span of constant UTC offset (time.Time.ZoneBounds) the
// wall clock is UTC plus the offset, so the window is periodic there; the
// pieces of one night on both sides of a clock change are joined.
func (q Quiet) intervals(loc *time.Location, from, to int64) []interval {
	if q.Off() {
		return nil
	}
	if loc == nil {
		loc = time.UTC
	}
	qs, qe := q.From.Milliseconds(), q.To.Milliseconds()
	if qe <= qs {
		qe += dayMs // wraps midnight
	}
	var out []interval
	add := func(s, e int64) {
		if n := len(out); n > 0 && s <= out[n-1].e {
			out[n-1].e = max(out[n-1].e, e)
			return
		}
		out = append(out, interval{s, e})
	}
	// Spans from a day before from to a day after to, so the nights that
	// meet [from, to] come out whole, joined across clock changes.
	for seg, last := from-dayMs, to+dayMs; seg <= last; {
		t := time.UnixMilli(seg).In(loc)
		_, off := t.Zone()
		segEnd := last + 1
		if _, end := t.ZoneBounds(); !end.IsZero() && end.UnixMilli() < segEnd {
			segEnd = end.UnixMilli()
		}
		offMs := int64(off) * 1000
		// Days d whose window [d*day+qs, d*day+qe) of local time can meet
		// [seg, segEnd) of UTC time.
		for d := floorDiv(seg+offMs, dayMs) - 1; ; d++ {
			s, e := d*dayMs+qs-offMs, d*dayMs+qe-offMs
			if s >= segEnd {
				break
			}
			if s, e = max(s, seg), min(e, segEnd); s < e {
				add(s, e)
			}
		}
		seg = segEnd
	}
	// Keep what meets [from, to].
	lo := 0
	for lo < len(out) && out[lo].e <= from {
		lo++
	}
	hi := lo
	for hi < len(out) && out[hi].s <= to {
		hi++
	}
	return out[lo:hi]
}

// floorDiv is a/b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
