package throttle

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ParseLimits parses a comma-separated list of rolling-window caps such as
// "10/1m,100/24h". Each item is N/W with N a positive integer and W a
// positive duration: a number with unit ms, s, m, h or d, or any Go duration
// ("1m30s"). Spaces around items are tolerated; an empty string yields no
// limits. Errors are *ParseError quoting the bad item.
func ParseLimits(s string) ([]Limit, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Limit
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		l, err := parseLimit(item)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

func parseLimit(item string) (Limit, error) {
	bad := func(reason string, err error) (Limit, error) {
		return Limit{}, &ParseError{What: "limit", Text: item, Reason: reason, Err: err}
	}
	if item == "" {
		return bad("empty item (stray comma?)", nil)
	}
	ns, ws, ok := strings.Cut(item, "/")
	if !ok {
		return bad("want N/W, e.g. 10/1m", nil)
	}
	ns, ws = strings.TrimSpace(ns), strings.TrimSpace(ws)
	if signed(ns) {
		return bad("count "+strconv.Quote(ns)+": write the number without a sign", nil)
	}
	if signed(ws) {
		return bad("window "+strconv.Quote(ws)+": write the duration without a sign", nil)
	}
	n, err := strconv.Atoi(ns)
	if err != nil {
		return bad("count "+strconv.Quote(ns)+" is not an integer", err)
	}
	if n <= 0 {
		return bad("count must be positive", nil)
	}
	w, err := parseDuration(ws)
	if err != nil {
		return bad(windowHint(ws), err)
	}
	if w <= 0 {
		return bad("window must be positive", nil)
	}
	if w%time.Millisecond != 0 {
		return bad("window must be a whole number of milliseconds", nil)
	}
	return Limit{N: n, Window: w}, nil
}

// windowHint says what a window that is not a duration should look like,
// and that rules are separated by commas when ws holds another rule.
func windowHint(ws string) string {
	msg := "window " + strconv.Quote(ws) + " is not a duration: write a number and a unit (ms, s, m, h or d), e.g. 1m or 24h"
	if strings.ContainsAny(ws, ";/ ") {
		msg += `; separate rules with commas, e.g. "10/1m,100/24h"`
	}
	return msg
}

// signed reports whether s starts with a plus sign, which strconv and
// time.ParseDuration accept but the rules grammar does not: "+5/1m" is
// most likely a typo, and one spelling per value keeps rules comparable.
// A minus sign is read, and refused as not positive.
func signed(s string) bool { return strings.HasPrefix(s, "+") }

// parseDuration accepts Go durations plus a whole number of days ("7d").
func parseDuration(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("days %q: not an integer", days)
		}
		if n > int64(1<<63-1)/int64(24*time.Hour) || n < -int64(1<<63-1)/int64(24*time.Hour) {
			return 0, fmt.Errorf("%q: too large", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	return time.ParseDuration(s)
}

// ParsePolicy parses limits (see ParseLimits) and a minimum gap (a duration
// as accepted by ParseLimits, or "" / "0" for none) and validates the result.
func ParsePolicy(limits, minGap string) (Policy, error) {
	ls, err := ParseLimits(limits)
	if err != nil {
		return Policy{}, err
	}
	gap, err := parseGap(minGap)
	if err != nil {
		return Policy{}, err
	}
	p := Policy{Limits: ls, MinGap: gap}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// String is the canonical form "N/W", e.g. "10/1m"; it round-trips through
// ParseLimits.
func (l Limit) String() string {
	return strconv.Itoa(l.N) + "/" + formatDuration(l.Window)
}

// String renders the policy as "10/1m,100/24h min-gap 3s" ("min-gap 3s"
// alone when there are no limits).
func (p Policy) String() string {
	parts := make([]string, 0, len(p.Limits))
	for _, l := range p.Limits {
		parts = append(parts, l.String())
	}
	s := strings.Join(parts, ",")
	if p.MinGap > 0 {
		if s != "" {
			s += " "
		}
		s += gapName(p.MinGap)
	}
	return s
}

// Validate checks that every limit has N > 0 and a positive window, that the
// gap is not negative, that durations are whole milliseconds (the limiter's
// resolution), that there is at least one global limit or a gap, and that
// the quiet hours and every category (name, rules, quiet hours) are valid;
// a category may have no rules of its own. Errors wrap ErrInvalidPolicy.
func (p Policy) Validate() error {
	if err := validateRules(p.Limits, p.MinGap); err != nil {
		return err
	}
	if len(p.Limits) == 0 && p.MinGap == 0 {
		return fmt.Errorf("%w: no limit and no min gap", ErrInvalidPolicy)
	}
	if err := p.Quiet.validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPolicy, err)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Categories)) {
		if err := p.Categories[name].validate(name); err != nil {
			return err
		}
	}
	return nil
}

// validateRules checks one rule set's limits and gap.
func validateRules(limits []Limit, gap time.Duration) error {
	if len(limits) >= maxHeldRule { // the gap takes the code after the limits' (held.go)
		return fmt.Errorf("%w: %d limits: at most %d", ErrInvalidPolicy, len(limits), maxHeldRule-1)
	}
	for i, l := range limits {
		switch {
		case l.N <= 0:
			return fmt.Errorf("%w: limit %d (%s): N must be positive", ErrInvalidPolicy, i+1, l)
		case l.Window <= 0:
			return fmt.Errorf("%w: limit %d (%s): window must be positive", ErrInvalidPolicy, i+1, l)
		case l.Window%time.Millisecond != 0:
			return fmt.Errorf("%w: limit %d (%s): window must be a whole number of milliseconds", ErrInvalidPolicy, i+1, l)
		}
	}
	switch {
	case gap < 0:
		return fmt.Errorf("%w: min gap %s must not be negative", ErrInvalidPolicy, gap)
	case gap%time.Millisecond != 0:
		return fmt.Errorf("%w: min gap %s must be a whole number of milliseconds", ErrInvalidPolicy, gap)
	}
	return nil
}

func gapName(d time.Duration) string { return "min-gap " + formatDuration(d) }

// formatDuration writes d in the largest of h, m, s, ms that divides it,
// falling back to Go's form ("1m30.5s" cannot happen for whole ms; sub-ms
// values print as Go durations).
func formatDuration(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if d%u.d == 0 {
			return strconv.FormatInt(int64(d/u.d), 10) + u.name
		}
	}
	return d.String()
}
