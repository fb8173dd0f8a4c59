package faultsim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// The apps of the simulated deployment.
const (
	appPlain = "plain" // the limiter's rules only
	appRated = "rated" // a max_rate on both platforms
	appLate  = "late"  // added mid-run on one node (lateNode)
)

// user is a simulated user: its devices and what its devices answer.
type user struct {
	id      string
	devices []payload.Device
	// collapse marks the users collapse-keyed pushes go to.
	collapse bool
}

// jobSpec is one submission the workload makes at offset at.
type jobSpec struct {
	at  time.Duration
	job payload.Job
	// cancelAfter, when positive, cancels the job that long after its
	// submission; cancelTwice cancels it again through another node.
	cancelAfter time.Duration
	cancelTwice bool
	seq         int // submission order
	// sendAtIn and expiresIn, when positive, set send_at and expires_at
	// that long after the submission.
	sendAtIn, expiresIn time.Duration
}

// prefSpec is one write of a user's preferences at offset at: the
// categories the user opts out of from then on (none: opted back in to
// every one).
type prefSpec struct {
	at     time.Duration
	user   string
	optOut []string
}

// fault is one injected fault at offset at.
type fault struct {
	at   time.Duration
	kind string // "kill", "shutdown", "redis", "reload"
	node int
	// span is how long a Redis fault lasts.
	span time.Duration
}

// scenario is everything one seed decides before the run starts.
type scenario struct {
	seed    uint64
	policy  throttle.Policy
	maxRate float64
	quiet   throttle.Quiet // the night category's quiet hours (UTC)
	quietAt time.Time      // the day the window is read on
	skews   []time.Duration
	users   []*user
	rated   []*user // users of appRated
	jobs    []*jobSpec
	faults  []fault
	// prefs are the preference writes, in offset order.
	prefs []*prefSpec
	// lateNode is the node that does not know appLate until its reload
	// (-1: every node knows it from the start).
	lateNode int
	// scripts are the fakes' answers per token, beyond OK; dead are the
	// tokens that answer Unregistered, retryAfter those whose 429 carries
	// a Retry-After.
	scripts    map[string][]fake.Answer
	dead       map[string]bool
	retryAfter map[string]time.Duration
	// ending are the tokens whose answer ends a delivery that has no
	// other device: failed, or expired at its deadline.
	ending map[string]bool
}

// Web Push tokens are subscriptions a fake push service makes; the
// scenario draws placeholders for them (scenario.subscribe).
const (
	webPushPlaceholder = "webpush:"
	webPushHostile     = "hostile-"
)

// subscribe replaces every Web Push placeholder token of sc with a
// subscription from sub (given the placeholder, hostile or not), in the
// users, the jobs and the answer scripts.
func (sc *scenario) subscribe(sub func(hostile bool) (string, error)) error {
	real := map[string]string{}
	swap := func(ds []payload.Device) error {
		for k, d := range ds {
			if d.Platform != payload.WebPush {
				continue
			}
			if _, ok := real[d.Token]; !ok {
				tok, err := sub(strings.HasPrefix(d.Token, webPushHostile))
				if err != nil {
					return err
				}
				real[d.Token] = tok
			}
			ds[k].Token = real[d.Token]
		}
		return nil
	}
	for _, u := range append(slices.Clone(sc.users), sc.rated...) {
		if err := swap(u.devices); err != nil {
			return err
		}
	}
	for _, js := range sc.jobs {
		for _, r := range js.job.Recipients {
			if err := swap(r.Devices); err != nil {
				return err
			}
		}
	}
	for from, to := range real {
		if as, ok := sc.scripts[from]; ok {
			sc.scripts[to] = as
			delete(sc.scripts, from)
		}
		for _, m := range []map[string]bool{sc.dead, sc.ending} {
			if m[from] {
				m[to] = true
				delete(m, from)
			}
		}
		if ra, ok := sc.retryAfter[from]; ok {
			sc.retryAfter[to] = ra
			delete(sc.retryAfter, from)
		}
	}
	return nil
}

// newScenario draws a scenario from seed for a run of span, starting at
// start, with nodes workers.
func newScenario(seed uint64, start time.Time, span time.Duration, nodes int, maxSkew time.Duration, kb knownBroken) *scenario {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	dur := func(lo, hi time.Duration) time.Duration { return lo + time.Duration(rng.Int64N(int64(hi-lo)+1)) }
	sc := &scenario{seed: seed, maxRate: float64(4 + rng.IntN(5)), scripts: map[string][]fake.Answer{}, lateNode: -1,
		dead: map[string]bool{}, retryAfter: map[string]time.Duration{}, ending: map[string]bool{}}

	// Short windows, so that the rules bite within the run.
	global, _ := throttle.ParseLimits(fmt.Sprintf("%d/2s", 2+rng.IntN(2)))
	promo, _ := throttle.ParseLimits("1/2s")
	// Quiet hours of a few seconds, starting a little into the run, on
	// the UTC wall clock (recipients without a zone are in UTC).
	qs := start.Add(dur(span/4, span/2)).UTC()
	qe := qs.Add(dur(2*time.Second, 4*time.Second))
	day := time.Date(qs.Year(), qs.Month(), qs.Day(), 0, 0, 0, 0, time.UTC)
	sc.quiet = throttle.Quiet{From: qs.Sub(day).Truncate(time.Millisecond), To: qe.Sub(day).Truncate(time.Millisecond)}
	sc.quietAt = day
	q := sc.quiet
	sc.policy = throttle.Policy{
		Limits: global,
		// Gaps well above the 250 ms tolerance, so that a push early by
		// half its gap breaks the check.
		MinGap: dur(minGapLo, minGapHi).Truncate(time.Millisecond),
		Categories: map[string]throttle.Category{
			"promo": {Limits: promo},
			"night": {Quiet: &q},
			"ops":   {SkipGlobal: true},
		},
	}

	if !kb.on(skewStall) {
		maxSkew = min(maxSkew, skewSafe)
	}
	for i := range nodes {
		if maxSkew > 0 {
			sc.skews = append(sc.skews, dur(-maxSkew, maxSkew))
		} else {
			sc.skews = append(sc.skews, 0)
		}
		_ = i
	}

	// Users with one or two devices; some tokens answer 429 (with and
	// without Retry-After), 503, slowly, or are dead.
	mkUser := func(prefix string, i int, collapse, rated bool) *user {
		u := &user{id: fmt.Sprintf("%s-%d", prefix, i), collapse: collapse}
		for d := range 1 + rng.IntN(2) {
			pl := payload.APNs
			switch rng.IntN(4) {
			case 0:
				pl = payload.FCM
			case 1:
				pl = payload.WebPush
			}
			tok := fmt.Sprintf("%s%s%02dd%d", seedTag(seed), prefix, i, d)
			switch pl {
			case payload.APNs:
				tok = apnsToken(tok)
			case payload.WebPush:
				// A placeholder until the run subscribes at a fake push
				// service (scenario.subscribe); one in three at the
				// hostile one, slow to dial and to shake hands.
				tok = webPushPlaceholder + tok
				if rng.IntN(3) == 0 {
					tok = webPushHostile + tok
				}
			}
			u.devices = append(u.devices, payload.Device{Platform: pl, Token: tok})
			// A collapse user's second device answers 503 first: an
			// older push's retry must not collapse the newer one.
			// It answers 503 to every other request, so that older
			// pushes' retries keep meeting newer pushes of their key.
			if collapse && d == 1 {
				var as []fake.Answer
				for range 12 {
					as = append(as, fake.Status(503), fake.OK())
				}
				sc.scripts[tok] = append(as, fake.OK())
				continue
			}
			switch r := rng.IntN(20); {
			case r == 0:
				sc.scripts[tok] = []fake.Answer{fake.TooMany(0), fake.OK()}
			case r == 1 && pl == payload.FCM:
				ra := dur(retryAfterLo, retryAfterHi).Truncate(time.Second)
				sc.scripts[tok] = []fake.Answer{fake.TooMany(ra), fake.OK()}
				sc.retryAfter[tok] = ra
			case r == 2 && !(rated && pl == payload.FCM):
				// The FCM SDK retries a 503 itself, unpaced: not for a
				// rated app, whose rate check counts every request.
				sc.scripts[tok] = []fake.Answer{fake.Status(503), fake.OK()}
			case r == 3:
				sc.scripts[tok] = []fake.Answer{fake.Unregistered()}
				sc.dead[tok] = true
			case r == 4:
				sc.scripts[tok] = []fake.Answer{fake.OK().WithLatency(dur(200*time.Millisecond, 800*time.Millisecond)), fake.OK()}
			case r == 5 && pl == payload.WebPush:
				// A push service that never ends its answers' bodies:
				// hush reads no 2xx body, and a bounded part of an error's.
				sc.scripts[tok] = []fake.Answer{fake.Status(500).WithEndlessBody(), fake.OK().WithEndlessBody()}
			case r == 6 && pl == payload.WebPush && !rated:
				// A subscriber's push service that refuses the key for its
				// subscription: that subscription ends, nothing else.
				sc.scripts[tok] = []fake.Answer{fake.Status(403)}
				sc.dead[tok] = true
			case r == 7 && pl == payload.WebPush && !rated:
				// An absurd Retry-After (ten years): the delivery ends
				// (failed, or expired at its deadline), it is not
				// scheduled past it.
				sc.scripts[tok] = []fake.Answer{fake.TooMany(0).WithRetryAfterHeader("315360000")}
				sc.ending[tok] = true
			case r == 8 && pl == payload.WebPush:
				ra := dur(retryAfterLo, retryAfterHi).Truncate(time.Second)
				sc.scripts[tok] = []fake.Answer{fake.TooMany(ra), fake.OK()}
				sc.retryAfter[tok] = ra
			}
		}
		return u
	}
	for i := range 10 {
		sc.users = append(sc.users, mkUser("u", i, i < 3, false))
	}
	// One plain user's first device is always an FCM token throttled
	// with a Retry-After, so that every seed checks it.
	if u := sc.users[3]; true {
		tok := fmt.Sprintf("%su03throttled", seedTag(seed))
		ra := dur(retryAfterLo, retryAfterHi).Truncate(time.Second)
		u.devices[0] = payload.Device{Platform: payload.FCM, Token: tok}
		sc.scripts[tok] = []fake.Answer{fake.TooMany(ra), fake.OK()}
		sc.retryAfter[tok] = ra
	}
	// And another's first device is a subscription at the hostile push
	// service.
	sc.users[4].devices[0] = payload.Device{Platform: payload.WebPush, Token: webPushHostile + webPushPlaceholder + seedTag(seed) + "u04hostile"}
	plain := sc.users[3:] // the users plain fan-outs and night pushes go to
	const rated = 20      // waves of recipients with slots of their own
	for i := range rated {
		sc.rated = append(sc.rated, mkUser("r", i, false, true))
	}

	// Jobs over the span.
	n := 25 + rng.IntN(15)
	for i := range n {
		at := dur(0, span)
		js := &jobSpec{at: at}
		j := &js.job
		j.ID = fmt.Sprintf("%s-j%03d", seedTag(seed), i)
		j.App = appPlain
		j.Alert = &payload.Alert{Title: "t", Body: j.ID}
		j.Data = map[string]string{"j": j.ID}
		j.Priority = payload.PriorityNormal
		sendAt := func(lo, hi time.Duration) { js.sendAtIn = dur(lo, hi) }
		expires := func(lo, hi time.Duration) { js.expiresIn = dur(lo, hi) }
		switch k := rng.IntN(10); {
		case k < 3: // collapse: one collapse user, a key, often after another
			u := sc.users[rng.IntN(3)]
			j.Recipients = []payload.Recipient{recipient(u)}
			// Mostly one key, so that a user's pushes meet.
			j.CollapseKey = "k0"
			if rng.IntN(4) == 0 {
				j.CollapseKey = "k1"
			}
			// Held beyond worker.CollapseMargin, so that a newer push
			// with its key collapses it.
			if rng.IntN(2) == 0 {
				sendAt(worker.CollapseMargin+time.Second, worker.CollapseMargin+3*time.Second)
			}
		case k < 5: // the rated app: a fan-out paced by max_rate
			j.App = appRated
			// Long paced queues (issue 39 items 1 and 5): every rated user.
			perm := rng.Perm(len(sc.rated))
			for _, p := range perm {
				j.Recipients = append(j.Recipients, recipient(sc.rated[p]))
			}
			// Held waves of a rated app keep max_rate (issue 39 item 1).
			if rng.IntN(2) == 0 {
				sendAt(300*time.Millisecond, 1500*time.Millisecond)
			}
			// A paced send never leaves after expires_at (item 5).
			if rng.IntN(2) == 0 {
				expires(200*time.Millisecond, 1500*time.Millisecond)
			}
		default: // app plain: a fan-out over non-collapse users
			perm := rng.Perm(len(plain))[:1+rng.IntN(4)]
			for _, p := range perm {
				j.Recipients = append(j.Recipients, recipient(plain[p]))
			}
			switch c := rng.IntN(6); c {
			case 0:
				j.Category = "promo"
			case 1:
				j.Category = "night"
			case 2:
				j.Category = "ops"
			}
			if rng.IntN(3) == 0 {
				sendAt(200*time.Millisecond, 3*time.Second)
			}
			if rng.IntN(4) == 0 {
				expires(300*time.Millisecond, 4*time.Second)
			}
			if rng.IntN(8) == 0 {
				j.Priority = payload.PriorityCritical // bypass
			} else if rng.IntN(4) == 0 {
				j.Priority = payload.PriorityHigh
			}
			if rng.IntN(3) == 0 {
				j.App = appLate
			}
		}
		if rng.IntN(6) == 0 {
			js.cancelAfter = dur(50*time.Millisecond, 2*time.Second)
			// A repeated cancel answered on another node's clock.
			js.cancelTwice = rng.IntN(2) == 0
		}
		sc.jobs = append(sc.jobs, js)
	}
	// Every seed has a rated fan-out.
	if !slices.ContainsFunc(sc.jobs, func(js *jobSpec) bool { return js.job.App == appRated }) {
		js := &jobSpec{at: span / 2}
		j := &js.job
		j.ID = fmt.Sprintf("%s-r", seedTag(seed))
		j.App, j.Priority = appRated, payload.PriorityNormal
		j.Alert = &payload.Alert{Title: "t", Body: j.ID}
		j.Data = map[string]string{"j": j.ID}
		for _, p := range rng.Perm(len(sc.rated)) {
			j.Recipients = append(j.Recipients, recipient(sc.rated[p]))
		}
		sc.jobs = append(sc.jobs, js)
	}
	// Night pushes submitted inside the quiet hours, so that every seed
	// holds some back.
	for k := range 3 {
		from := qs.Sub(start)
		js := &jobSpec{at: dur(from, from+qe.Sub(qs)/2)}
		j := &js.job
		j.ID = fmt.Sprintf("%s-n%d", seedTag(seed), k)
		j.App, j.Category, j.Priority = appPlain, "night", payload.PriorityNormal
		j.Alert = &payload.Alert{Title: "t", Body: j.ID}
		j.Data = map[string]string{"j": j.ID}
		for _, p := range rng.Perm(len(plain))[:2] {
			j.Recipients = append(j.Recipients, recipient(plain[p]))
		}
		sc.jobs = append(sc.jobs, js)
	}

	// Faults: one kill (most seeds), a graceful restart, Redis faults,
	// an apps reload.
	if rng.IntN(4) != 0 {
		sc.faults = append(sc.faults, fault{at: dur(span/4, span*3/4), kind: "kill", node: rng.IntN(nodes)})
	}
	if rng.IntN(2) == 0 {
		sc.faults = append(sc.faults, fault{at: dur(span/4, span), kind: "shutdown", node: rng.IntN(nodes)})
	}
	// Redis faults may overlap cancellations (issue 39 item 3).
	redisEnd := span
	for range rng.IntN(4) {
		if redisEnd < 200*time.Millisecond {
			break
		}
		sp := dur(100*time.Millisecond, 400*time.Millisecond)
		at := dur(0, redisEnd-100*time.Millisecond)
		if at+sp > redisEnd {
			sp = redisEnd - at
		}
		sc.faults = append(sc.faults, fault{at: at, kind: "redis", node: rng.IntN(nodes), span: sp})
	}
	// Redis fails on every node around each cancellation's answer too,
	// where a wave's read of the mark may fail.
	for _, js := range sc.jobs {
		if js.cancelAfter > 0 {
			for k := range nodes {
				sc.faults = append(sc.faults, fault{at: js.at + js.cancelAfter, kind: "redis", node: k, span: cancelFaultSpan})
			}
		}
	}
	sc.lateNode = rng.IntN(nodes)
	sc.faults = append(sc.faults, fault{at: dur(span/2, span), kind: "reload", node: sc.lateNode})
	slices.SortStableFunc(sc.faults, func(a, b fault) int { return int(a.at - b.at) })
	// Drawn last, so that the rest of a seed's workload and faults stay
	// what they were without it.
	sc.collapsePair(rng, dur, span)
	sc.optOuts(rng, dur, span)
	sc.cancelNear(span)
	slices.SortStableFunc(sc.jobs, func(a, b *jobSpec) int { return int(a.at - b.at) })
	for i, js := range sc.jobs {
		js.seq = i
	}
	return sc
}

// calm is the earliest offset from from on after which no fault starts or
// lasts for span: no Redis fault delays a retry there, and no kill or
// restart leaves a task leased.
func (sc *scenario) calm(from, span time.Duration) time.Duration {
	at := from
	for moved := true; moved; {
		moved = false
		for _, f := range sc.faults {
			end := f.at + max(f.span, faultSettle)
			if f.at < at+span && end > at {
				at, moved = end, true
			}
		}
	}
	return at
}

// collapsePair adds a user of its own and two pushes to it of one
// collapse key in the pair category (a gap of pairGap), at a calm moment
// of the run (pairCalm without a fault, from a moment in its first half),
// so that every seed has an older push whose retry is booked after a
// newer push of its key was held: the older one reaches the user's first
// device, its second answers 503 once, and its retry books a second or
// two later; the newer one, submitted pairNextLo to pairNextHi after it,
// is held by the gap until well beyond worker.CollapseMargin after that
// retry's booking. The newest accepted push wins: the retry is refused,
// and the newer push is delivered at its slot. A limiter that orders the
// key's pushes by their bookings instead (the collapseByBooking mutant)
// lets the retry collapse the newer push, which the collapse check
// reports. A send_at would not hold the newer push: its job is not run,
// nor booked, until shortly before it.
func (sc *scenario) collapsePair(rng *rand.Rand, dur func(lo, hi time.Duration) time.Duration, span time.Duration) {
	u := &user{id: "c-0", collapse: true}
	for d := range 2 {
		// APNs: the FCM SDK would retry the 503 itself.
		tok := apnsToken(fmt.Sprintf("%sc00d%d", seedTag(sc.seed), d))
		u.devices = append(u.devices, payload.Device{Platform: payload.APNs, Token: tok})
		if d == 1 {
			sc.scripts[tok] = []fake.Answer{fake.Status(503), fake.OK()}
		}
	}
	sc.users = append(sc.users, u)
	sc.policy.Categories[pairCategory] = throttle.Category{MinGap: pairGap}
	at := sc.calm(dur(0, span/2), pairCalm)
	for k, js := range []*jobSpec{{at: at}, {at: at + dur(pairNextLo, pairNextHi)}} {
		j := &js.job
		j.ID = fmt.Sprintf("%s-c%d", seedTag(sc.seed), k)
		j.App, j.Priority, j.Category, j.CollapseKey = appPlain, payload.PriorityNormal, pairCategory, "pair"
		j.Alert = &payload.Alert{Title: "t", Body: j.ID}
		j.Data = map[string]string{"j": j.ID}
		j.Recipients = []payload.Recipient{recipient(u)}
		sc.jobs = append(sc.jobs, js)
	}
}

// optOuts adds users of their own whose preferences change while their
// pushes are held or about to leave: each gets a push of the opt category, which takes
// the category's gap (optGap), then a fan-out of it to both is held for
// the gap; meanwhile the first opts out of it (and of the required
// category, which changes nothing) and the second opts out and back in
// before the fan-out's slot. Once its opt-out was answered the first
// also gets a push of the opt category (nothing of it may be sent), a
// critical one (which skips the limiter) and one of the required category
// (both are sent). The writes are drive's (writePrefs).
func (sc *scenario) optOuts(rng *rand.Rand, dur func(lo, hi time.Duration) time.Duration, span time.Duration) {
	var us []*user
	for k := range 2 {
		u := &user{id: fmt.Sprintf("%s-%d", optUserPrefix, k)}
		u.devices = []payload.Device{{Platform: payload.APNs, Token: apnsToken(fmt.Sprintf("%so%02dd0", seedTag(sc.seed), k))}}
		sc.users = append(sc.users, u)
		us = append(us, u)
	}
	sc.policy.Categories[optCategory] = throttle.Category{MinGap: optGap}
	sc.policy.Categories[requiredCategory] = throttle.Category{Required: true}
	at := dur(0, span/2)
	add := func(id string, at time.Duration, cat string, prio payload.Priority, to ...*user) {
		js := &jobSpec{at: at}
		j := &js.job
		j.ID = fmt.Sprintf("%s-%s", seedTag(sc.seed), id)
		j.App, j.Priority, j.Category = appPlain, prio, cat
		j.Alert = &payload.Alert{Title: "t", Body: j.ID}
		j.Data = map[string]string{"j": j.ID}
		for _, u := range to {
			j.Recipients = append(j.Recipients, recipient(u))
		}
		sc.jobs = append(sc.jobs, js)
	}
	for k, u := range us {
		add(fmt.Sprintf("o%d", k), at, optCategory, payload.PriorityNormal, u)
	}
	add("of", at+dur(200*time.Millisecond, 400*time.Millisecond), optCategory, payload.PriorityNormal, us...)
	out := at + dur(time.Second, 2*time.Second)
	back := out + dur(time.Second, 2*time.Second)
	sc.prefs = append(sc.prefs,
		&prefSpec{at: out, user: us[0].id, optOut: []string{optCategory, requiredCategory}},
		&prefSpec{at: out, user: us[1].id, optOut: []string{optCategory}},
		&prefSpec{at: back, user: us[1].id})
	later := out + optAnswer + dur(500*time.Millisecond, time.Second)
	add("on", later, optCategory, payload.PriorityNormal, us[0])
	add("oc", later, optCategory, payload.PriorityCritical, us[0])
	add("or", later+dur(0, 500*time.Millisecond), requiredCategory, payload.PriorityNormal, us[0])
	// A third user gets two pushes of a category of its own shortly before
	// opting out of it: the second's slot, the category's gap after the
	// first, comes after the write, near enough to be waited for in place
	// by the task that booked it before the write (nothing drawn: the rest
	// of the seed stays as it was). It leaves after the write was made:
	// were the write answered at once, it would leave after the answer.
	g := &user{id: fmt.Sprintf("%s-%d", optUserPrefix, 2)}
	g.devices = []payload.Device{{Platform: payload.APNs, Token: apnsToken(fmt.Sprintf("%so%02dd0", seedTag(sc.seed), 2))}}
	sc.users = append(sc.users, g)
	sc.policy.Categories[optNearCategory] = throttle.Category{MinGap: optNearGap}
	add("og", out-optNearLead-200*time.Millisecond, optNearCategory, payload.PriorityNormal, g)
	add("on2", out-optNearLead, optNearCategory, payload.PriorityNormal, g)
	sc.prefs = append(sc.prefs, &prefSpec{at: out, user: g.id, optOut: []string{optNearCategory}})
	slices.SortStableFunc(sc.prefs, func(a, b *prefSpec) int { return int(a.at - b.at) })
}

// cancelNear adds a user of its own whose second push waits in place for
// its slot, the gap of a category of its own after the first, when its
// job is cancelled, at a calm moment of the run (cancelNearCalm without a
// fault): the booking read the job's record before the
// cancellation, so the push leaves after the cancellation was written,
// and before its answer only because the answer waits the grace
// (docs/delivery.md section 3a). Nothing is drawn: the rest of the seed
// stays as it was.
func (sc *scenario) cancelNear(span time.Duration) {
	u := &user{id: cancelNearUser}
	u.devices = []payload.Device{{Platform: payload.APNs, Token: apnsToken(seedTag(sc.seed) + "cn00d0")}}
	sc.users = append(sc.users, u)
	sc.policy.Categories[cancelNearCategory] = throttle.Category{MinGap: cancelNearGap}
	at := sc.calm(span/3, cancelNearCalm)
	for k, off := range []time.Duration{0, cancelNearNext} {
		js := &jobSpec{at: at + off}
		j := &js.job
		j.ID = fmt.Sprintf("%s-cn%d", seedTag(sc.seed), k)
		j.App, j.Priority, j.Category = appPlain, payload.PriorityNormal, cancelNearCategory
		j.Alert = &payload.Alert{Title: "t", Body: j.ID}
		j.Data = map[string]string{"j": j.ID}
		j.Recipients = []payload.Recipient{recipient(u)}
		if k == 1 {
			js.cancelAfter = cancelNearAfter
		}
		sc.jobs = append(sc.jobs, js)
	}
}

// The workload's drawn bounds.
const (
	// cancelFaultSpan is how long Redis fails on every node from each
	// cancellation: through its call and its first tries, not the whole
	// run (the workload's other pushes would then mostly wait out retries,
	// and the rules' and quiet hours' checks see little).
	cancelFaultSpan = 1500 * time.Millisecond
	// minGapLo and minGapHi bound the global minimum gap: above twice the
	// rules' tolerance, so that a gap half kept is caught.
	minGapLo, minGapHi = 600 * time.Millisecond, 900 * time.Millisecond
	// retryAfterLo and retryAfterHi bound a throttling token's
	// Retry-After (whole seconds): above hush's own second of margin
	// (worker retryWake) and its first backoff, so that a retry that
	// ignores the Retry-After is caught.
	retryAfterLo, retryAfterHi = 3 * time.Second, 4 * time.Second
	// pairCategory is the collapse pair's category, pairGap its gap: the
	// newer push's slot is still more than worker.CollapseMargin away when
	// the older push's retry books, up to about 3 s after the older push.
	pairCategory = "pair"
	pairGap      = worker.CollapseMargin + 5*time.Second
	// pairNextLo and pairNextHi bound how long after the collapse pair's
	// older push the newer one is submitted: before the older one's retry
	// (a backoff of half a second to a second, and Asynq's second more).
	pairNextLo, pairNextHi = 200 * time.Millisecond, 500 * time.Millisecond
	// pairCalm is how long the collapse pair's run goes without a fault:
	// its two submissions and the older push's retry.
	pairCalm = 4 * time.Second
	// optUserPrefix names the users whose preferences change; optCategory
	// is the category they opt out of, optGap its gap: the fan-out of it
	// is held past the opt-out's answer, so a push sent anyway is caught;
	// optAnswer is how long an opt-out's write takes to answer (the
	// worker's grace of 3.5 s, and the write). requiredCategory is a
	// category users cannot opt out of.
	optUserPrefix    = "o"
	optCategory      = "opt"
	optGap           = 8 * time.Second
	optAnswer        = 4 * time.Second
	requiredCategory = "receipt"
	// optNearCategory is the third opt user's category, optNearGap its
	// gap (within a wait in place), optNearLead how long before the user's
	// opt-out its second push is submitted: its slot comes after the
	// write.
	optNearCategory = "optnear"
	optNearGap      = 2 * time.Second
	optNearLead     = 1300 * time.Millisecond
	// cancelNearUser and cancelNearCategory are cancelNear's user and
	// category, cancelNearGap the category's gap (within a wait in place),
	// cancelNearNext how long after the first push the second is
	// submitted, cancelNearAfter how long after that it is cancelled:
	// before its slot, after its booking.
	cancelNearUser     = "cn-0"
	cancelNearCategory = "cancelnear"
	cancelNearGap      = 2 * time.Second
	cancelNearNext     = 200 * time.Millisecond
	cancelNearAfter    = 800 * time.Millisecond
	cancelNearCalm     = 3 * time.Second
	// prefTries is how many times a preference write is made before the
	// workload gives up on it, prefPause the pause between tries.
	prefTries = 8
	prefPause = 100 * time.Millisecond
	// faultSettle is how long a fault without a span (a kill, a restart,
	// a reload) is taken to disturb the run.
	faultSettle = time.Second
)

func recipient(u *user) payload.Recipient {
	return payload.Recipient{UserID: u.id, Devices: slices.Clone(u.devices)}
}

// seedTag keeps tokens and ids of different seeds apart.
func seedTag(seed uint64) string { return fmt.Sprintf("s%d", seed) }

// apnsToken makes s into a 64-hex-digit APNs device token.
func apnsToken(s string) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 64)
	for i := range b {
		c := byte(0)
		if i < len(s) {
			c = s[i]
		}
		b[i] = hex[(int(c)+i*7)%16]
	}
	// Keep tokens distinct: the name's bytes in hex at the end.
	enc := fmt.Sprintf("%x", s)
	if len(enc) > 64 {
		enc = enc[len(enc)-64:]
	}
	copy(b[64-len(enc):], enc)
	return string(b)
}
