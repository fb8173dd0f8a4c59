package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/hushpush/hush/client"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// watch submits the burst and follows every push until it settles,
// printing the timeline as things happen.
type watch struct {
	env    *world
	policy throttle.Policy
	quiet  quietHours
	out    io.Writer
	pushes []*pushState
	byID   map[string]*pushState
	t0     time.Time
	seen   map[payload.Platform]int // fake requests already looked at
	booked map[string]int           // user -> pushes with a limiter entry
	tick   int
	// quietBegunSaid, quietEndSaid: the timeline has said the quiet hours
	// began, ended.
	quietBegunSaid, quietEndSaid bool
}

// pushState is what the demo knows about one push.
type pushState struct {
	*burstPush
	submitted time.Time
	deferred  bool
	slot      time.Time // the latest future booking seen
	blame     string    // the rule that set the slot
	arrivals  []pushArrival
	final     string // the job's final state once settled
	settledAt time.Time
}

type pushArrival struct {
	platform payload.Platform
	at       time.Time
	status   int
}

// firstSent is the first pushArrival the provider accepted (zero when none).
func (s *pushState) firstSent() time.Time {
	for _, a := range s.arrivals {
		if a.sent() {
			return a.at
		}
	}
	return time.Time{}
}

// newWatch watches plan, submitted at t0, on env, whose worker keeps
// policy and the quiet hours quiet.
func newWatch(env *world, plan []*burstPush, policy throttle.Policy, quiet quietHours, t0 time.Time, out io.Writer) *watch {
	w := &watch{env: env, policy: policy, quiet: quiet, t0: t0, out: out, byID: map[string]*pushState{},
		seen: map[payload.Platform]int{}, booked: map[string]int{}}
	for _, p := range plan {
		s := &pushState{burstPush: p}
		w.pushes = append(w.pushes, s)
		w.byID[p.id] = s
	}
	return w
}

// timelineLine is one line of output, printed in time order per poll.
type timelineLine struct {
	at   time.Time
	push *pushState // nil for a line about no push (the quiet hours)
	text string
}

func (w *watch) run(ctx context.Context) error {
	// The burst starts at t0, when the quiet hours are where they were
	// planned.
	if wait := time.Until(w.t0); wait > 0 {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
	for _, s := range w.pushes {
		if s.afterBooked == 0 && s.at == 0 {
			if err := w.submit(ctx, s); err != nil {
				return err
			}
		}
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		lines, err := w.poll(ctx)
		if err != nil {
			return err
		}
		slices.SortStableFunc(lines, func(a, b timelineLine) int { return a.at.Compare(b.at) })
		for _, l := range lines {
			if l.push == nil {
				fmt.Fprintf(w.out, "%s  %s\n", w.since(l.at), l.text)
				continue
			}
			fmt.Fprintf(w.out, "%s  %-4s  #%-2d  %s\n", w.since(l.at), l.push.user, l.push.n, l.text)
		}
		if w.settled() == len(w.pushes) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d pushes had not settled when the time was up (--timeout): %w",
				len(w.pushes)-w.settled(), len(w.pushes), ctx.Err())
		case <-tick.C:
		}
	}
}

func (w *watch) since(t time.Time) string {
	return fmt.Sprintf("+%06.3fs", t.Sub(w.t0).Seconds())
}

func (w *watch) settled() int {
	n := 0
	for _, s := range w.pushes {
		if s.final != "" {
			n++
		}
	}
	return n
}

func (w *watch) submit(ctx context.Context, s *pushState) error {
	s.submitted = time.Now()
	acc, err := w.env.api.Submit(ctx, s.job())
	if err != nil {
		return fmt.Errorf("submit %s: %w", s.id, err)
	}
	if acc.Duplicate {
		return fmt.Errorf("submit %s: the worker had accepted it already", s.id)
	}
	return nil
}

// poll looks at the fakes, the limiter and the jobs once and returns what
// changed.
func (w *watch) poll(ctx context.Context) ([]timelineLine, error) {
	w.tick++
	w.takeArrivals(payload.APNs, w.env.apns.Requests())
	w.takeArrivals(payload.FCM, w.env.fcm.Requests())
	w.takeArrivals(payload.WebPush, w.env.webpush.Requests())
	var lines []timelineLine
	users := map[string]bool{}
	for _, s := range w.pushes {
		if s.final == "" {
			users[s.user] = true
		}
	}
	for _, u := range slices.Sorted(maps.Keys(users)) {
		ls, err := w.pollLimiter(ctx, u)
		if err != nil {
			return nil, err
		}
		lines = append(lines, ls...)
	}
	lines = append(lines, w.quietLines()...)
	// A push held back goes in once its user has afterBooked pushes booked
	// (or after three seconds, whichever comes first), or at its time.
	for _, s := range w.pushes {
		if !s.submitted.IsZero() {
			continue
		}
		since := time.Since(w.t0)
		if (s.afterBooked > 0 && (w.booked[s.user] >= s.afterBooked || since > 3*time.Second)) || (s.at > 0 && since >= s.at) {
			if err := w.submit(ctx, s); err != nil {
				return nil, err
			}
		}
	}
	for _, s := range w.pushes {
		if s.final != "" || s.submitted.IsZero() {
			continue
		}
		l, ok, err := w.pollJob(ctx, s)
		if err != nil {
			return nil, err
		}
		if ok {
			lines = append(lines, l)
		}
	}
	return lines, nil
}

// takeArrivals files the fake's new requests under their pushes.
func (w *watch) takeArrivals(platform payload.Platform, reqs []fake.Request) {
	for _, r := range reqs[min(w.seen[platform], len(reqs)):] {
		if s, ok := w.byID[pushID(r.Body)]; ok {
			s.arrivals = append(s.arrivals, pushArrival{platform: platform, at: r.At, status: r.Status})
		}
	}
	w.seen[platform] = len(reqs)
}

// pushID finds the "demo_push" data value in a provider request body
// (APNs puts data at the top level, FCM under message.data).
func pushID(body []byte) string {
	const key = `"demo_push":"`
	i := bytes.Index(body, []byte(key))
	if i < 0 {
		return ""
	}
	rest := body[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// quietLines are the timeline's lines for the quiet hours beginning and
// ending, once each, when their time has come.
func (w *watch) quietLines() []timelineLine {
	if w.quiet.off() {
		return nil
	}
	var lines []timelineLine
	now := time.Now()
	if !w.quietBegunSaid && !now.Before(w.quiet.from) {
		w.quietBegunSaid = true
		lines = append(lines, timelineLine{at: w.quiet.from,
			text: "quiet hours begin: pushes that keep them are held until " + w.since(w.quiet.to)})
	}
	if !w.quietEndSaid && !now.Before(w.quiet.to) {
		w.quietEndSaid = true
		lines = append(lines, timelineLine{at: w.quiet.to, text: "quiet hours end"})
	}
	return lines
}

// pollLimiter reads user's limiter entries, the global rules' and each
// category's: a booking in the future is a deferred push.
func (w *watch) pollLimiter(ctx context.Context, user string) ([]timelineLine, error) {
	st, err := w.env.api.UserThrottle(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("limiter status of %s: %w", user, err)
	}
	own := map[string][]client.ThrottleEntry{}
	for _, c := range st.Categories {
		own[c.Name] = c.Entries
	}
	// Every entry once: a push of a category that keeps the global rules
	// is in both sets.
	entries := slices.Clone(st.Entries)
	for _, c := range st.Categories {
		for _, e := range c.Entries {
			if !slices.ContainsFunc(entries, func(o client.ThrottleEntry) bool { return o.Member == e.Member }) {
				entries = append(entries, e)
			}
		}
	}
	var lines []timelineLine
	at := time.Now()
	w.booked[user] = 0
	for _, e := range entries {
		id, _, _ := strings.Cut(e.Member, "/")
		s, ok := w.byID[id]
		if !ok {
			continue
		}
		w.booked[user]++
		if !e.At.After(st.Now) || s.final != "" || !s.firstSent().IsZero() || e.At.Equal(s.slot) {
			continue
		}
		others := func(es []client.ThrottleEntry) []time.Time {
			ts := make([]time.Time, 0, len(es))
			for _, o := range es {
				if o.Member != e.Member {
					ts = append(ts, o.At)
				}
			}
			return ts
		}
		verb := "deferred"
		if !s.slot.IsZero() {
			verb = "rebooked"
		}
		s.deferred, s.slot = true, e.At
		s.blame = blameRule(w.policy, s.category, e.At, others(st.Entries), others(own[s.category]), 0)
		lines = append(lines, timelineLine{at: at, push: s,
			text: fmt.Sprintf("%s until %s  (%s)%s", verb, w.since(e.At), s.blame, s.tag(""))})
	}
	return lines, nil
}

// pollJob reads the push's job and, once it is done, says how it ended.
func (w *watch) pollJob(ctx context.Context, s *pushState) (timelineLine, bool, error) {
	// Jobs are read every other tick: the fakes' arrivals carry the exact
	// times anyway.
	if w.tick%2 == 1 && len(s.arrivals) == 0 {
		return timelineLine{}, false, nil
	}
	js, err := w.env.api.Status(ctx, s.id)
	if apiErr, ok := errors.AsType[*client.Error](err); ok && apiErr.Status == http.StatusNotFound {
		return timelineLine{}, false, nil
	}
	if err != nil {
		return timelineLine{}, false, fmt.Errorf("status of %s: %w", s.id, err)
	}
	if js.State != client.StateDone {
		return timelineLine{}, false, nil
	}
	for _, state := range worker.FinalStates() {
		if js.Counts[state] > 0 {
			s.final = state
		}
	}
	if s.final == "" {
		s.final = "failed"
	}
	s.settledAt = time.Now()
	// The requests of a push that just settled may have arrived after this
	// poll's first look at the fakes.
	w.takeArrivals(payload.APNs, w.env.apns.Requests())
	w.takeArrivals(payload.FCM, w.env.fcm.Requests())
	w.takeArrivals(payload.WebPush, w.env.webpush.Requests())
	return w.settleLine(s, js), true, nil
}

// settleLine is the timeline line of a push that settled.
func (w *watch) settleLine(s *pushState, js client.JobStatus) timelineLine {
	var sent, invalid []string
	at := s.settledAt
	for _, a := range s.arrivals {
		if a.sent() {
			sent = append(sent, string(a.platform))
		} else {
			invalid = append(invalid, string(a.platform))
		}
	}
	// The fakes' answers can be seen in either order, one poll apart: name
	// the platforms in one order (seen in CI: "sent (fcm, apns)").
	slices.Sort(sent)
	slices.Sort(invalid)
	if t := s.firstSent(); !t.IsZero() {
		at = t
	} else if n := len(s.arrivals); n > 0 {
		at = s.arrivals[n-1].at
	}
	var text string
	switch s.final {
	case "delivered":
		text = "sent (" + strings.Join(sent, ", ") + ")"
		if len(invalid) > 0 {
			text += "; " + strings.Join(invalid, ", ") + " token invalid"
		}
		switch {
		case s.critical:
			text += "  critical: bypasses the limiter"
		case !s.deferred && (js.Deferrals > 0 || w.spacedByRule(s, at)):
			// The booking came and went between two polls: name the rule
			// from the user's earlier sends.
			s.deferred = true
			s.blame = w.blameSent(s, at)
		}
		if s.deferred && !s.critical {
			text += "  (was deferred)"
		}
		note := ""
		if !s.critical && quietOf(w.policy, s.category).Off() && inQuiet(w.policy.Quiet, at) {
			note = ": keeps no quiet hours"
		}
		text += s.tag(note)
	case "token_invalid":
		text = "token invalid (" + strings.Join(invalid, ", ") + "): nothing reached the user"
	case "expired":
		text = "dropped: expired (ttl " + s.ttl.String()
		if !s.slot.IsZero() {
			text += ", its slot was " + w.since(s.slot)
		}
		text += ")" + s.tag("")
	default:
		text = s.final + " (run with -v for the worker's logs)"
	}
	return timelineLine{at: at, push: s, text: text}
}

// tag is the end of a timeline line of a push of a category: the
// category and note in brackets; "" for a push of none.
func (s *pushState) tag(note string) string {
	if s.category == "" {
		return ""
	}
	return "  [" + s.category + note + "]"
}

// sentTimes are the first send times, before before, of user's limited
// pushes other than except for which keep is true.
func (w *watch) sentTimes(user string, except *pushState, before time.Time, keep func(*pushState) bool) []time.Time {
	var ts []time.Time
	for _, s := range w.pushes {
		if s.user == user && s != except && !s.critical && keep(s) {
			if t := s.firstSent(); !t.IsZero() && t.Before(before) {
				ts = append(ts, t)
			}
		}
	}
	return ts
}

// blameSent names the rule that held s, sent at at, back, from the sends
// before it: the user's pushes that keep the global rules, and those of
// s's category.
func (w *watch) blameSent(s *pushState, at time.Time) string {
	global := w.sentTimes(s.user, s, at, func(o *pushState) bool { return keepsGlobal(w.policy, o.category) })
	own := w.sentTimes(s.user, s, at, func(o *pushState) bool { return o.category == s.category })
	return blameRule(w.policy, s.category, at, global, own, jitter)
}

// spacedByRule says whether a send at at sits one rule (a window or the
// gap) after an earlier send to the same user, or where the quiet hours
// end: it was held back.
func (w *watch) spacedByRule(s *pushState, at time.Time) bool {
	return w.blameSent(s, at) != blameUnknown
}
