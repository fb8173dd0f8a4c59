package faultsim

import (
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/providers/fcm"
	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
)

// errKilled is what a killed node's Redis commands and provider calls get.
var errKilled = errors.New("faultsim: process killed")

// errDropped is what a command hit by an injected Redis fault gets.
var errDropped = errors.New("faultsim: connection dropped")

// faultHook is a go-redis hook that fails one node's commands (on a
// Cluster, on its connections to every master): all of them once the
// node is killed (its connections are gone), a share of them while a
// Redis fault is on. Half of the failures happen after the
// command ran (the reply is lost), half before (it never reached Redis).
type faultHook struct {
	dead atomic.Bool
	rate atomic.Uint32 // failures per 1000 commands while a fault is on

	mu  sync.Mutex
	rng *rand.Rand
}

func (h *faultHook) draw() (fail, after bool) {
	r := h.rate.Load()
	if r == 0 {
		return false, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.rng.Uint32N(1000) < r, h.rng.IntN(2) == 0
}

func (h *faultHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if h.dead.Load() {
			return nil, errKilled
		}
		return next(ctx, network, addr)
	}
}

func (h *faultHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.dead.Load() {
			cmd.SetErr(errKilled)
			return errKilled
		}
		fail, after := h.draw()
		if fail && !after {
			cmd.SetErr(errDropped)
			return errDropped
		}
		err := next(ctx, cmd)
		if fail || h.dead.Load() {
			cmd.SetErr(errDropped)
			return errDropped
		}
		return err
	}
}

func (h *faultHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		fail, after := h.draw()
		if h.dead.Load() || (fail && !after) {
			err := errDropped
			if h.dead.Load() {
				err = errKilled
			}
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		err := next(ctx, cmds)
		if fail || h.dead.Load() {
			for _, c := range cmds {
				c.SetErr(errDropped)
			}
			return errDropped
		}
		return err
	}
}

// skewClock is a node's clock: the system's, shifted.
type skewClock struct{ skew time.Duration }

func (c skewClock) Now() time.Time { return time.Now().Add(c.skew) }

// call is a provider call a node has under way.
type call struct {
	key    callKey
	cancel context.CancelFunc
}

// callKey is one job's push to one device: what a kill may send twice.
type callKey struct{ job, token string }

// callOf is p's job and device (the workload's pushes carry their job's
// id in their data, "j").
func callOf(p providers.Push) callKey {
	k := callKey{token: p.Token}
	if p.Content != nil {
		k.job = p.Content.Data["j"]
	}
	return k
}

// node is one hush serve process: a Worker on a Redis client of its own,
// with senders it can abandon.
type node struct {
	id   int
	gen  int // restarts of this slot
	skew time.Duration
	hook *faultHook
	rdb  redis.UniversalClient
	w    *worker.Worker
	apps *worker.Apps
	lims map[string]*throttle.Redis // by scope
	ss   map[payload.Platform]worker.Sender
	stop context.CancelFunc
	done chan struct{}

	mu       sync.Mutex
	calls    map[int]call
	next     int
	recent   map[callKey]time.Time // when each push's last call ended
	atRisk   map[callKey]bool      // pushes a kill may have sent twice
	killedAt time.Time
}

// killSender is a node's sender: after a kill it calls no provider, and
// an answer that comes back after the kill is lost with the process.
type killSender struct {
	next worker.Sender
	n    *node
}

func (s killSender) Send(ctx context.Context, p providers.Push) providers.Result {
	if s.n.hook.dead.Load() {
		return providers.Result{Outcome: providers.Transient, Reason: "killed", Err: errKilled}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.n.mu.Lock()
	k := s.n.next
	s.n.next++
	s.n.calls[k] = call{key: callOf(p), cancel: cancel}
	s.n.mu.Unlock()
	r := s.next.Send(ctx, p)
	s.n.mu.Lock()
	delete(s.n.calls, k)
	s.n.recent[callOf(p)] = time.Now()
	s.n.mu.Unlock()
	if s.n.hook.dead.Load() {
		return providers.Result{Outcome: providers.Transient, Reason: "killed", Err: errKilled}
	}
	return r
}

// recordWindow is how long after a provider's answer its outcome may
// still be unwritten: recordLinger (2 ms) and a Redis round trip, with
// room for a loaded machine under -race (docs/delivery.md section 9).
const recordWindow = 250 * time.Millisecond

// kill stops n as kill -9 would: its Redis connections fail from now on,
// its provider calls under way are abandoned (their answers lost), and it
// starts no more. Calls under way, or answered within recordWindow, may
// reach their device again through another node.
func (n *node) kill() {
	n.hook.dead.Store(true)
	n.mu.Lock()
	n.killedAt = time.Now()
	for _, c := range n.calls {
		n.atRisk[c.key] = true
		c.cancel()
	}
	for k, at := range n.recent {
		if n.killedAt.Sub(at) <= recordWindow {
			n.atRisk[k] = true
		}
	}
	n.mu.Unlock()
	n.stop() // its goroutines wind down on dead connections; nothing waits for them
}

// shutdown stops n gracefully (SIGTERM) and waits for Run to return.
func (n *node) shutdown(timeout time.Duration) bool {
	n.stop()
	select {
	case <-n.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// senders are the real SDK senders pointed at the fakes.
type senders struct {
	apns, fcm, webpush worker.Sender
}

// fakes are the run's fake providers: APNs, FCM, and two Web Push
// services, one of them hostile (slow to dial and to shake hands).
type fakes struct {
	apns             *fake.APNs
	fcm              *fake.FCM
	webpush, hostile *fake.WebPush
	vapidPublic      string // the key the subscriptions are made for
}

// hostileDelay is how long the hostile Web Push service holds each new
// connection's dial and its TLS handshake.
const hostileDelay = 150 * time.Millisecond

func startFakes(t *testing.T) (fakes, senders) {
	t.Helper()
	fa, ff, ss := startSDKFakes(t)
	f := fakes{apns: fa, fcm: ff}
	dir := t.TempDir()
	var ca []byte
	for _, o := range []fake.WebPushOptions{{}, {DialDelay: hostileDelay, TLSDelay: hostileDelay}} {
		fw, err := fake.StartWebPushWith(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(fw.Close)
		ca = append(ca, fw.CAPEM()...)
		if f.webpush == nil {
			f.webpush = fw
		} else {
			f.hostile = fw
		}
	}
	caFile := filepath.Join(dir, "webpush-cas.pem")
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}
	key, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	// The fakes listen on 127.0.0.1: the egress policy's test setting
	// lets the real sender dial them.
	ws, err := webpush.New(webpush.Config{PrivateKey: key.PrivateKey(), Subject: "mailto:sim@example.com", CAFile: caFile,
		Egress: webpush.Egress{Origins: []string{webpush.OriginsPublic}, PrivateNetworks: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ws.Close)
	ss.webpush, f.vapidPublic = ws, key.PublicKey()
	return f, ss
}

func startSDKFakes(t *testing.T) (*fake.APNs, *fake.FCM, senders) {
	t.Helper()
	fa, err := fake.StartAPNs()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fa.Close)
	dir := t.TempDir()
	keyFile, keyID, teamID, err := fake.WriteAPNsKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	caFile, err := fa.WriteCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	as, err := apns.New(apns.Config{KeyFile: keyFile, KeyID: keyID, TeamID: teamID, Topic: "com.example.sim", Endpoint: fa.URL, CAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(as.Close)
	ff, err := fake.StartFCM()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ff.Close)
	sa, err := fake.WriteServiceAccount(dir, ff.TokenURL(), "sim-project")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := fcm.New(t.Context(), fcm.Config{CredentialsFile: sa, Endpoint: ff.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	return fa, ff, senders{apns: as, fcm: fs}
}

// The limiters' scopes, as production scopes apps (setup/apps.go): the
// plain and late apps are one throttle_group, sharing each user's budget
// under the group's scope; the rated app has a scope of its own.
const (
	scopeMain  = "main"
	scopeRated = "rated"
)

// scopedLimiters are a node's limiters, one per scope, with the options
// production gives them: the scope, the default pending cap, the collapse
// margin the worker needs.
func scopedLimiters(rdb redis.UniversalClient, p throttle.Policy) (map[string]*throttle.Redis, error) {
	out := map[string]*throttle.Redis{}
	for _, scope := range []string{scopeMain, scopeRated} {
		l, err := throttle.NewRedis(rdb, p, throttle.Options{Scope: scope, CollapseMargin: worker.CollapseMargin})
		if err != nil {
			return nil, err
		}
		out[scope] = l
	}
	return out, nil
}

// appSet builds a node's apps over its limiter and senders; late is
// whether it knows the app the workload adds mid-run.
func appSet(sc *scenario, lims map[string]*throttle.Redis, ss map[payload.Platform]worker.Sender, late bool) []worker.App {
	apps := []worker.App{
		{Name: appPlain, Senders: ss, Limiter: lims[scopeMain], Policy: sc.policy},
		{Name: appRated, Senders: ss, Limiter: lims[scopeRated], Policy: sc.policy, MaxRate: map[payload.Platform]float64{payload.APNs: sc.maxRate, payload.FCM: sc.maxRate, payload.WebPush: sc.maxRate}},
	}
	if late {
		apps = append(apps, worker.App{Name: appLate, Senders: ss, Limiter: lims[scopeMain], Policy: sc.policy})
	}
	return apps
}

// start runs a new node in slot id; knowsLate says whether its apps
// include appLate.
func (s *sim) startNode(id int, knowsLate bool) *node {
	t := s.t
	h := &faultHook{rng: rand.New(rand.NewPCG(s.seed, uint64(id)<<32|uint64(s.gen)))}
	rdb := s.world.client(h)
	n := &node{id: id, gen: s.gen, skew: s.sc.skews[id], hook: h, rdb: rdb, done: make(chan struct{}),
		calls: map[int]call{}, recent: map[callKey]time.Time{}, atRisk: map[callKey]bool{}}
	s.gen++
	lims, err := scopedLimiters(rdb, s.sc.policy)
	if err != nil {
		t.Fatal(err)
	}
	pacer, err := throttle.NewPacer(rdb, throttle.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ss := map[payload.Platform]worker.Sender{payload.APNs: killSender{s.senders.apns, n}, payload.FCM: killSender{s.senders.fcm, n},
		payload.WebPush: killSender{s.senders.webpush, n}}
	n.lims, n.ss = lims, ss
	if n.apps, err = worker.NewApps(appSet(s.sc, lims, ss, knowsLate)...); err != nil {
		t.Fatal(err)
	}
	opts := worker.Options{
		Apps:            n.apps,
		Pacer:           pacer,
		Policy:          s.sc.policy,
		Concurrency:     8,
		MaxRetry:        3,
		MaxThrottled:    time.Hour, // HUSH_MAX_THROTTLED's default
		Bypass:          []payload.Priority{payload.PriorityCritical},
		ShutdownTimeout: 2 * time.Second,
		Clock:           skewClock{n.skew},
	}
	s.hook.hookOptions(&opts)
	n.w, err = worker.New(rdb, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.stop = cancel
	go func() {
		defer close(n.done)
		if err := n.w.Run(ctx); err != nil && !n.hook.dead.Load() {
			s.logf("node %d: run: %v", id, err)
		}
	}()
	return n
}
