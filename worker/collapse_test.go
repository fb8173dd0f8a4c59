package worker

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/task"
)

// collapseBench is a Redis limiter at an explicit clock, shared by the
// apps of one throttle group, and the bookings requestOf makes for it.
type collapseBench struct {
	t     *testing.T
	w     *Worker
	lim   *throttle.Redis
	now   time.Time
	apps  map[string]*App
	start time.Time
}

func newCollapseBench(t *testing.T) *collapseBench {
	t.Helper()
	rdb := redistest.Client(t)
	b := &collapseBench{t: t, w: &Worker{}, now: time.Date(2027, 1, 12, 12, 0, 0, 0, time.UTC)}
	b.start = b.now
	lim, err := throttle.NewRedis(rdb, throttle.Policy{MinGap: 10 * time.Second},
		throttle.Options{Prefix: redistest.Prefix(t), Clock: func() time.Time { return b.now }, CollapseMargin: CollapseMargin})
	if err != nil {
		t.Fatal(err)
	}
	b.lim = lim
	b.apps = map[string]*App{}
	for _, name := range []string{"shop", "shop-lite"} {
		b.apps[name] = &App{Name: name, Limiter: lim, Policy: lim.Policy()}
	}
	return b
}

// push is a delivery of job id to user u of app, with collapse key score,
// accepted at offset after the bench's start.
func (b *collapseBench) push(app, id string, accepted time.Duration) *task.Delivery {
	return &task.Delivery{Job: id, UserID: "u", AcceptedAt: b.start.Add(accepted),
		Content: payload.Content{App: app, CollapseKey: "score"}}
}

// book is the booking of d's attempt n, as the worker asks for it, and
// what it means.
func (b *collapseBench) book(d *task.Delivery, n int) (throttle.Reservation, decide.Step) {
	b.t.Helper()
	rs, err := b.lim.ReserveBatch(context.Background(), []throttle.Request{b.w.requestOf(b.apps[d.Content.App], d, n, time.Time{})})
	if err != nil {
		b.t.Fatal(err)
	}
	return rs[0], decide.Plan(rs[0], b.now, b.now, b.now, d.Deadline, n > 0).Step
}

// The newest accepted push wins in collapse: push "old" reached one
// device and its retry books after push "latest" (same collapse key) was
// held; the retry ends collapsed and latest keeps its slot.
func TestCollapseNewestAcceptedWins(t *testing.T) {
	t.Parallel()
	b := newCollapseBench(t)
	old, latest := b.push("shop", "old", 0), b.push("shop", "latest", time.Second)
	if r, s := b.book(old, 0); s != decide.StepSend {
		t.Fatalf("old's first attempt: %+v (%s), want sent now", r, s)
	}
	b.now = b.now.Add(2 * time.Second)
	held, s := b.book(latest, 0)
	if s != decide.StepDefer || held.Collapsed != "" {
		t.Fatalf("latest: %+v (%s), want held 8 s, collapsing nothing", held, s)
	}
	b.now = b.now.Add(time.Second)
	if r, s := b.book(old, 1); s != decide.StepCollapsed {
		t.Errorf("old's retry: %+v (%s), want collapsed", r, s)
	}
	if r, _ := b.book(latest, 0); !r.Existing || !r.At.Equal(held.At) {
		t.Errorf("latest after old's retry: %+v, want its slot %s still held", r, held.At)
	}
	// Sent at its slot, latest still outranks old's next retry.
	b.now = held.At.Add(time.Second)
	if r, s := b.book(old, 2); s != decide.StepCollapsed {
		t.Errorf("old's retry after latest was sent: %+v (%s), want collapsed", r, s)
	}
}

// Collapse keys are per app: in a throttle group, another app's push with
// the same collapse key leaves a held push alone, while the same app's
// newer push takes its place.
func TestCollapseKeysArePerApp(t *testing.T) {
	t.Parallel()
	b := newCollapseBench(t)
	if r, s := b.book(b.push("shop", "first", 0), 0); s != decide.StepSend {
		t.Fatalf("first: %+v (%s), want sent now", r, s)
	}
	held, _ := b.book(b.push("shop", "held", time.Second), 0)
	lite, _ := b.book(b.push("shop-lite", "lite", 2*time.Second), 0)
	if held.Wait == 0 || lite.Collapsed != "" || lite.Refused != "" {
		t.Fatalf("shop-lite's push %+v after shop's held one %+v: want it booked, collapsing nothing", lite, held)
	}
	if r, _ := b.book(b.push("shop", "held", time.Second), 0); !r.Existing {
		t.Errorf("shop's held push after shop-lite's: %+v, want its booking kept", r)
	}
	if r, _ := b.book(b.push("shop", "newer", 3*time.Second), 0); r.Collapsed != task.Member("held", 0, 0) {
		t.Errorf("shop's newer push collapsed %q, want shop's held push", r.Collapsed)
	}
}

// collapseInside books through the env's limiter and, the first time a
// booking of member comes back, runs inside before handing it back: the
// moment between a push's booking and the write of its held marker.
type collapseInside struct {
	*recordingLimiter
	member string
	inside func()
	once   sync.Once
}

func (l *collapseInside) ReserveBatch(ctx context.Context, reqs []throttle.Request) ([]throttle.Reservation, error) {
	return l.ReserveBatchWith(ctx, reqs, nil)
}

func (l *collapseInside) ReserveBatchWith(ctx context.Context, reqs []throttle.Request, queue func(redis.Pipeliner)) ([]throttle.Reservation, error) {
	rs, err := l.recordingLimiter.ReserveBatchWith(ctx, reqs, queue)
	if slices.ContainsFunc(reqs, func(r throttle.Request) bool { return r.Member == l.member }) {
		l.once.Do(l.inside)
	}
	return rs, err
}

// TestCollapsedBeforeItsHeldMarkerEndsAtOnce: a held push that a newer
// push of its collapse key collapses after its booking and before its held
// marker is written (so the newer push's wake finds no task to wake) ends
// collapsed when its run has written the marker, not at its slot a minute
// later: a job of one recipient (held in a hush:waiting-jobs group) and a
// fan-out's recipient (held in a hush:held task).
func TestCollapsedBeforeItsHeldMarkerEndsAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		users int // recipients of the held job; the last one is collapsed
	}{
		{"job of one recipient", 1},
		{"fan-out", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var logs bytes.Buffer
			var e *env
			id := fmt.Sprintf("c-old%d", tc.users)
			last := fmt.Sprintf("u-c%d", tc.users-1)
			lim := &collapseInside{member: fmt.Sprintf("%s/%d", id, tc.users-1)}
			lim.inside = func() {
				newer := alertJob(id+"-new", "new", apnsRecipient(last, apnsToken(id+"-new")))
				newer.CollapseKey = "score"
				e.submit(newer)
				// The newer push has booked, collapsed this one and tried
				// to wake it: no marker names its task yet.
				waitFor(t, 10*time.Second, "the newer push's wake", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return strings.Contains(logs.String(), "held push collapsed by a newer one")
				})
			}
			e = newEnv(t, envOptions{gap: "1m",
				logs: writerFunc(func(p []byte) (int, error) {
					mu.Lock()
					defer mu.Unlock()
					return logs.Write(p)
				}),
				wrap: func(l Limiter) Limiter { lim.recordingLimiter = l.(*recordingLimiter); return lim }})
			t.Cleanup(func() {
				if !t.Failed() {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				for _, l := range strings.Split(logs.String(), "\n") {
					if strings.Contains(l, id) || strings.Contains(l, "collapse") {
						t.Log(l)
					}
				}
			})
			var first, held []payload.Recipient
			for k := range tc.users {
				u := fmt.Sprintf("u-c%d", k)
				first = append(first, apnsRecipient(u, apnsToken(id+"-first-"+u)))
				held = append(held, apnsRecipient(u, apnsToken(id+"-"+u)))
			}
			e.waitDone(e.submit(alertJob(id+"-first", "first", first...)), 10*time.Second)
			old := alertJob(id, "old", held...)
			old.CollapseKey = "score"
			e.submit(old)
			// Its slot is the gap, a minute, after the first push: left
			// to its slot, it would still be pending long after this wait.
			waitFor(t, 20*time.Second, id+" collapsed", func() bool {
				st, err := e.client.Status(t.Context(), id)
				return err == nil && st.Counts[task.Collapsed] == 1
			})
			if got := len(requestsFor(e.apns.Requests(), apnsToken(id+"-"+last))); got != 0 {
				t.Errorf("the collapsed push was sent %d times", got)
			}
			e.checkCollapsedEvent(id, last, id+"-new")
		})
	}
}

// TestRetryCollapsedBeforeItsHoldEndsAtOnce: a delivery task's retry that
// books a far slot and is collapsed by a newer push before it records
// itself held (its task, running, cannot be woken) ends collapsed when it
// has recorded the hold, not at its slot a minute later.
func TestRetryCollapsedBeforeItsHoldEndsAtOnce(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var logs bytes.Buffer
	var e *env
	lim := &collapseInside{member: "r-old/0#1"}
	lim.inside = func() {
		newer := alertJob("r-new", "new", apnsRecipient("u-r", apnsToken("r-new")))
		newer.CollapseKey = "score"
		e.submit(newer)
		waitFor(t, 10*time.Second, "the newer push's wake", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return strings.Contains(logs.String(), "held push collapsed by a newer one")
		})
	}
	e = newEnv(t, envOptions{gap: "1m",
		logs: writerFunc(func(p []byte) (int, error) {
			mu.Lock()
			defer mu.Unlock()
			return logs.Write(p)
		}),
		wrap: func(l Limiter) Limiter { lim.recordingLimiter = l.(*recordingLimiter); return lim }})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "r-old") || strings.Contains(l, "collapse") {
				t.Log(l)
			}
		}
	})
	// r-old's first attempt is throttled and gives its slot back; r-mid
	// takes the user's next slot, so r-old's retry books a minute later.
	oldTok := apnsToken("r-old")
	e.apns.Script(oldTok, fake.TooMany(0), fake.OK())
	old := alertJob("r-old", "old", apnsRecipient("u-r", oldTok))
	old.CollapseKey = "score"
	e.submit(old)
	waitFor(t, 10*time.Second, "r-old's 429", func() bool { return len(requestsFor(e.apns.Requests(), oldTok)) == 1 })
	e.waitDone(e.submit(alertJob("r-mid", "mid", apnsRecipient("u-r", apnsToken("r-mid")))), 10*time.Second)
	waitFor(t, 20*time.Second, "r-old collapsed", func() bool {
		st, err := e.client.Status(t.Context(), "r-old")
		return err == nil && st.Counts[task.Collapsed] == 1
	})
	if got := len(requestsFor(e.apns.Requests(), oldTok)); got != 1 {
		t.Errorf("the collapsed push was sent %d times, want only its first, throttled, attempt", got)
	}
}
