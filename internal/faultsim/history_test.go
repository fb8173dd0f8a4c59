package faultsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// arrival is one request a fake provider got.
type arrival struct {
	job      string
	user     string
	token    string
	platform payload.Platform
	at       time.Time
	status   int
	// answered is when the fake's answer reached a client still waiting
	// for it (zero: the client went away first, and nothing was pushed).
	answered time.Time
}

// delivered reports whether the request pushed to the device: a success
// answered to a client still waiting for it (fake.Request.Pushed).
func (a arrival) delivered() bool {
	return fake.Request{Status: a.status, Answered: a.answered}.Pushed()
}

func (a arrival) String() string {
	ans := "unanswered"
	if !a.answered.IsZero() {
		ans = "answered " + a.answered.Format("15:04:05.000")
	}
	return fmt.Sprintf("%s %s job %s user %s device %s: %d, %s", a.at.Format("15:04:05.000"), a.platform, a.job, a.user, short(a.token), a.status, ans)
}

// keyInfo is one Redis key left after the run.
type keyInfo struct {
	key   string
	user  string // the user whose limiter key it is ("" for others)
	bytes int64
	ttl   time.Duration // -1: no expiry
}

// history is everything a run leaves for the checks: what the providers
// saw, what hush answered and recorded, and what the run did. Each check
// is a function of it alone (checks_test.go), so a table test can hand it
// a history that must pass or fail.
type history struct {
	arrivals []arrival // sorted by at
	// events are the events hush:events holds, by id, as written;
	// hookPosts every POST the webhook receiver got.
	events    map[string]string
	hookPosts []hookPost
	jobs      map[string]*jobRun
	// status is every tried job hush knows; unknown the tried jobs it
	// answers ErrNotFound for; statusErr the rest.
	status    map[string]worker.JobStatus
	unknown   map[string]bool
	statusErr map[string]error
	// excused are the pushes a kill may have sent twice: the job and
	// device of every call in flight at a kill, or answered within
	// recordWindow before it.
	excused map[callKey]bool
	policy  throttle.Policy
	// quietFrom and quietTo are the night category's quiet hours in the
	// run.
	quietFrom, quietTo time.Time
	maxRate            float64
	skews              []time.Duration
	// dead are the tokens that answer Unregistered; retryAfter the tokens
	// whose 429 carries a Retry-After, and how long.
	dead       map[string]bool
	retryAfter map[string]time.Duration
	// ending are the tokens whose answer ends a delivery with no other
	// live device (failed, or expired at its deadline).
	ending map[string]bool
	// lookups are the recipients lookups of the jobs whose status is
	// final, every page together; lookupErr those that failed.
	lookups   map[string]worker.RecipientsPage
	lookupErr map[string]error
	// pendingCap: some user could hold the limiter's pending cap of
	// bookings, so throttle_full is a state the run allows.
	pendingCap bool
	keys       []keyInfo
	// prefs are the preference writes the run made, in order.
	prefs []prefWrite
}

// failure is one broken promise: the check, what broke, and the shortest
// history that shows it (the arrivals and answers involved).
type failure struct {
	check string
	msg   string
	trace []string
}

func (f failure) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s] %s", f.check, f.msg)
	for _, l := range f.trace {
		b.WriteString("\n\t" + l)
	}
	return b.String()
}

func fail(check string, trace []string, format string, args ...any) failure {
	return failure{check: check, msg: fmt.Sprintf(format, args...), trace: trace}
}

// traceOf is arrivals as trace lines.
func traceOf(as ...arrival) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = a.String()
	}
	return out
}

// byJob is h's arrivals per job.
func (h *history) byJob() map[string][]arrival {
	out := map[string][]arrival{}
	for _, a := range h.arrivals {
		out[a.job] = append(out[a.job], a)
	}
	return out
}

// arrivals reads both fakes' logs.
func (s *sim) arrivals() []arrival {
	owner := map[string]string{}
	for _, u := range append(slices.Clone(s.sc.users), s.sc.rated...) {
		for _, d := range u.devices {
			owner[d.Token] = u.id
		}
	}
	var out []arrival
	add := func(rs []fake.Request, pl payload.Platform) {
		for _, r := range rs {
			var body struct {
				J       string            `json:"j"`
				Data    map[string]string `json:"data"` // Web Push
				Message struct {
					Data map[string]string `json:"data"`
				} `json:"message"`
			}
			_ = json.Unmarshal(r.Body, &body)
			j := body.J
			switch pl {
			case payload.FCM:
				j = body.Message.Data["j"]
			case payload.WebPush:
				j = body.Data["j"]
			}
			out = append(out, arrival{job: j, user: owner[r.Token], token: r.Token, platform: pl, at: r.At, status: r.Status, answered: r.Answered})
		}
	}
	add(s.fakes.apns.Requests(), payload.APNs)
	add(s.fakes.fcm.Requests(), payload.FCM)
	add(s.fakes.webpush.Requests(), payload.WebPush)
	add(s.fakes.hostile.Requests(), payload.WebPush)
	slices.SortFunc(out, func(a, b arrival) int { return a.at.Compare(b.at) })
	return out
}

// history gathers the run's history once its workers have stopped.
func (s *sim) history(rdb redis.UniversalClient) *history {
	h := &history{
		arrivals: s.arrivals(), jobs: map[string]*jobRun{},
		status: map[string]worker.JobStatus{}, unknown: map[string]bool{}, statusErr: map[string]error{},
		excused: map[callKey]bool{}, policy: s.sc.policy, maxRate: s.sc.maxRate, skews: s.sc.skews,
		quietFrom: s.sc.quietAt.Add(s.sc.quiet.From), quietTo: s.sc.quietAt.Add(s.sc.quiet.To),
		dead: map[string]bool{}, retryAfter: map[string]time.Duration{},
		lookups: map[string]worker.RecipientsPage{}, lookupErr: map[string]error{},
	}
	for _, n := range s.all {
		n.mu.Lock()
		for k := range n.atRisk {
			h.excused[k] = true
		}
		n.mu.Unlock()
	}
	perUser := map[string]int{}
	for _, jr := range s.jobList() {
		h.jobs[jr.spec.job.ID] = jr
		for _, r := range jr.spec.job.Recipients {
			perUser[r.UserID]++
		}
		if !jr.tried {
			continue
		}
		id := jr.spec.job.ID
		st, err := s.obs.Status(context.Background(), id)
		switch {
		case errors.Is(err, worker.ErrNotFound):
			h.unknown[id] = true
		case err != nil:
			h.statusErr[id] = err
		default:
			h.status[id] = st
		}
	}
	for _, n := range perUser {
		h.pendingCap = h.pendingCap || n >= throttle.DefaultMaxPending
	}
	s.lookups(h)
	h.dead, h.retryAfter, h.ending = s.sc.dead, s.sc.retryAfter, s.sc.ending
	s.mu.Lock()
	h.prefs = slices.Clone(s.prefs)
	s.mu.Unlock()
	h.keys = s.keys(rdb)
	h.events, h.hookPosts = streamEvents(rdb), s.hook.got()
	return h
}

// keyPrefixes are the keys hush writes that must expire: the limiter's,
// the pacer's and the job store's (docs/operations.md, Redis memory).
var keyPrefixes = []string{throttle.DefaultPrefix, throttle.DefaultPacerPrefix, "hush:job:"}

// keys reads every key of keyPrefixes left after the run, on every
// master, with its size and TTL.
func (s *sim) keys(rdb redis.UniversalClient) []keyInfo {
	var out []keyInfo
	owner := map[string]string{} // a user's limiter key, under each scope
	for _, l := range s.all[0].lims {
		for _, u := range append(slices.Clone(s.sc.users), s.sc.rated...) {
			owner[l.Key(u.id)] = u.id
		}
	}
	ctx := context.Background()
	err := eachMaster(ctx, rdb, func(ctx context.Context, m *redis.Client) error {
		for _, p := range keyPrefixes {
			ks, err := m.Keys(ctx, p+"*").Result()
			if err != nil {
				return err
			}
			for _, k := range ks {
				ki := keyInfo{key: k, ttl: -1}
				if i := strings.IndexByte(k, '}'); i > 0 {
					ki.user = owner[k[:i+1]]
				}
				ki.bytes, _ = m.MemoryUsage(ctx, k).Result()
				if d, err := m.PTTL(ctx, k).Result(); err == nil && d >= 0 {
					ki.ttl = d
				}
				out = append(out, ki)
			}
		}
		return nil
	})
	if err != nil {
		s.logf("keys: %v", err)
	}
	return out
}
