package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
)

// waitPushes waits until at least n pushes were delivered (200) and
// returns how many there were.
func (c *cluster) waitPushes(n int, timeout time.Duration) int {
	c.t.Helper()
	var got int
	c.waitFor(fmt.Sprintf("%d pushes", n), timeout, func() (bool, string) {
		if c.accepted() < n {
			return false, fmt.Sprintf("%d requests at the fakes", c.accepted())
		}
		got = len(delivered(c.arrivals()))
		return got >= n, fmt.Sprintf("%d pushes delivered", got)
	})
	return got
}

// assertDelivered checks that every wanted push arrived with a 200, nothing
// else did, and that at most allowedDups notifications were delivered more
// than once to a device. It returns the number of extra deliveries seen.
func (c *cluster) assertDelivered(arrs []arrival, want []push, allowedDups int) (extra int) {
	t := c.t
	t.Helper()
	got := delivered(arrs)
	wanted := make(map[push]bool, len(want))
	perPlatform := make(map[string]int)
	var missing, unexpected []string
	for _, w := range want {
		wanted[w] = true
		if got[w] == 0 {
			missing = append(missing, w.N+" "+string(w.Platform))
		} else {
			perPlatform[string(w.Platform)]++
		}
	}
	dupNotifications := make(map[string]bool)
	var dups []string
	for p, n := range got {
		if !wanted[p] {
			unexpected = append(unexpected, fmt.Sprintf("%s %s x%d", p.N, p.Platform, n))
		}
		if n > 1 {
			extra += n - 1
			dupNotifications[p.N] = true
			dups = append(dups, fmt.Sprintf("%s %s x%d", p.N, p.Platform, n))
		}
	}
	slices.Sort(missing)
	slices.Sort(dups)
	if len(missing) > 0 {
		t.Errorf("lost: %d of %d pushes never delivered: %s", len(missing), len(want), head(missing, 10))
	}
	if len(unexpected) > 0 {
		t.Errorf("%d unexpected pushes delivered: %s", len(unexpected), head(unexpected, 10))
	}
	if len(dupNotifications) > allowedDups {
		t.Errorf("%d notifications delivered more than once to a device (allowed %d): %s", len(dupNotifications), allowedDups, head(dups, 10))
	} else if len(dups) > 0 {
		t.Logf("duplicates within the allowance (%d notifications, allowed %d): %s", len(dupNotifications), allowedDups, head(dups, 10))
	}
	t.Logf("delivered exactly-or-more-once: %v; extra deliveries %d", perPlatform, extra)
	return extra
}

// killWindow is how long before the kill a provider's answer may have come
// and still not be recorded by the killed process: the answer's way back to
// it, the group commit's linger (2 ms) and one Redis write, with room for a
// loaded 2-core test machine scheduling three processes, Redis and the
// fakes.
const killWindow = 100 * time.Millisecond

// assertDuplicatesAtKill checks that every push delivered more than once
// had its first copy answered by the fake within killWindow before the kill
// began (killing) or while it was under way (before killed): a duplicate of
// a push answered earlier is one hush had time to record and sent again.
func (c *cluster) assertDuplicatesAtKill(arrs []arrival, killing, killed time.Time) {
	t := c.t
	t.Helper()
	first := make(map[push]time.Time)
	count := make(map[push]int)
	for _, a := range arrs {
		if !a.pushed() {
			continue
		}
		count[a.push]++
		if f, ok := first[a.push]; !ok || a.Answered.Before(f) {
			first[a.push] = a.Answered
		}
	}
	var bad, ok []string
	for p, n := range count {
		if n < 2 {
			continue
		}
		before := killing.Sub(first[p])
		line := fmt.Sprintf("%s %s first answered %s before the kill", p.N, p.Platform, before.Round(time.Millisecond))
		if before > killWindow || first[p].After(killed) {
			bad = append(bad, line)
		} else {
			ok = append(ok, line)
		}
	}
	slices.Sort(bad)
	slices.Sort(ok)
	if len(bad) > 0 {
		t.Errorf("%d pushes sent twice although their first copy was answered outside the kill's window (%s before it, or after it): %s",
			len(bad), killWindow, head(bad, 10))
	}
	t.Logf("%d duplicates answered within %s of the kill (the contract's exception): %s", len(ok), killWindow, head(ok, 10))
}

// assertTimelines checks the limiter's rules on every user's timeline (the
// first arrival of each notification over the user's devices) and on every
// device's own timeline.
func (c *cluster) assertTimelines(arrs []arrival) {
	t := c.t
	t.Helper()
	r := c.rules()
	for _, g := range []struct {
		name string
		fn   func(arrival) string
	}{{"user", byUser}, {"device", byDevice}} {
		v, st := checkTimelines(arrs, g.fn, r)
		if len(v) > 0 {
			timingErrorf(t, "per %s: %d rule violations (%d/%s, gap %s, tolerance %s): %s", g.name, len(v), r.n, r.window, r.gap, r.tolerance, head(v, 10))
			if g.name == "user" {
				for _, u := range st.violating[:min(2, len(st.violating))] {
					u = strings.TrimPrefix(u, "user ")
					t.Logf("timeline of %s (offset, platform, notification, status):%s", u, timeline(arrs, u))
				}
			}
		}
		t.Logf("per %s: %d timelines; smallest span of %d consecutive notifications %s (rule: >= %s - %s); smallest gap %s (rule: >= %s - %s); most in any raw %s window: %d",
			g.name, st.timelines, r.n+1, st.minSpan.Round(time.Millisecond), r.window, r.tolerance,
			st.minGap.Round(time.Millisecond), r.gap, r.tolerance, r.window, st.maxInWindow)
	}
}

// assertNothingArchived fails when any task was archived.
func (c *cluster) assertNothingArchived() {
	c.t.Helper()
	if a := c.archivedErrors(); len(a) > 0 {
		c.t.Errorf("%d tasks archived: %s", len(a), head(a, 10))
	}
}

// assertJobsDone checks, through GET /v1/notifications/{id}, that every job
// reports its recipient delivered and none pending.
func (c *cluster) assertJobsDone(jobs []payload.Job) {
	t := c.t
	t.Helper()
	var live *hushProc
	for _, p := range c.procs {
		if p.alive() {
			live = p
			break
		}
	}
	var bad []string
	for _, j := range jobs {
		st, err := c.jobStatus(live, j.ID, "")
		if err != nil {
			bad = append(bad, err.Error())
			continue
		}
		counts, _ := st["counts"].(map[string]any)
		if counts["delivered"] != float64(len(j.Recipients)) || counts["pending"] != float64(0) {
			bad = append(bad, fmt.Sprintf("%s: state %v counts %v", j.ID, st["state"], counts))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d of %d jobs not reported delivered by the API: %s", len(bad), len(jobs), head(bad, 5))
	}
}

// retryWait is the time between the first non-2xx answer to token and the
// next request for the same notification.
func retryWait(arrs []arrival, p payload.Platform, token string) (time.Duration, bool) {
	var failed *arrival
	for _, a := range sortedByTime(arrs) {
		if a.Platform != p || a.Token != token {
			continue
		}
		if failed == nil && !a.ok() {
			failed = &a
			continue
		}
		if failed != nil && a.N == failed.N {
			return a.At.Sub(failed.At), true
		}
	}
	return 0, false
}

func sortedByTime(arrs []arrival) []arrival {
	out := slices.Clone(arrs)
	slices.SortStableFunc(out, func(a, b arrival) int { return a.At.Compare(b.At) })
	return out
}

func head(s []string, n int) string {
	if len(s) > n {
		return strings.Join(s[:n], "; ") + fmt.Sprintf("; ... (%d more)", len(s)-n)
	}
	return strings.Join(s, "; ")
}
