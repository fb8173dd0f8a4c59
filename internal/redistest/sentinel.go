package redistest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/testkit"
)

// Sentinel is a Redis master, its replicas and the Redis Sentinels that
// watch them, all private to one test and on free loopback ports, for
// failover tests. Everything is stopped when the test ends.
type Sentinel struct {
	// Name is the master's name in the Sentinels' configuration.
	Name string
	// Master is the master at start; Replicas replicate from it.
	Master   *Server
	Replicas []*Server
	// Addrs are the Sentinels' host:port.
	Addrs []string
	tb    testing.TB
}

// SentinelOptions change how StartSentinel sets the group up.
type SentinelOptions struct {
	// Name is the master's name; default "hushmaster".
	Name string
	// Replicas is the number of replicas; default 1.
	Replicas int
	// Sentinels is the number of Sentinels; default 1. The quorum is a
	// majority of them.
	Sentinels int
	// DownAfter is the Sentinels' down-after-milliseconds: how long the
	// master must be unreachable before it is considered down; default 500ms.
	DownAfter time.Duration
	// FailoverTimeout is the Sentinels' failover-timeout; default 2s.
	FailoverTimeout time.Duration
}

// StartSentinel starts a master, its replicas and Sentinels (the
// redis-server binary run with --sentinel), and returns once every replica
// is in sync and every Sentinel sees every replica (and the other
// Sentinels), so a failover can happen at once. A test that starts
// Sentinels is in the slow tier (testkit.Slow). Without a redis-server
// binary the test is skipped, or fails under CI=true; a redis-server that
// cannot run as a Sentinel fails the test.
func StartSentinel(tb testing.TB, opts ...SentinelOptions) *Sentinel {
	tb.Helper()
	testkit.Slow(tb, "starts Redis Sentinels")
	var o SentinelOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	o.Name = cmp.Or(o.Name, "hushmaster")
	o.Replicas = max(o.Replicas, 1)
	o.Sentinels = max(o.Sentinels, 1)
	if o.DownAfter <= 0 {
		o.DownAfter = 500 * time.Millisecond
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = 2 * time.Second
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testkit.InCI() {
			tb.Fatalf("redistest: CI=true but no redis-server binary on PATH (.ci/run installs it): %v", err)
		}
		tb.Skip("redistest: a Sentinel test needs a real redis-server (none on PATH)")
	}

	s := &Sentinel{Name: o.Name, tb: tb}
	// Without this a master waits 5 s for more replicas before it starts a
	// (diskless) full sync.
	noDelay := []string{"--repl-diskless-sync-delay", "0"}
	s.Master = Start(tb, Options{Args: noDelay})
	_, masterPort, _ := strings.Cut(s.Master.Addr, ":")
	for range o.Replicas {
		s.Replicas = append(s.Replicas, Start(tb, Options{Args: append([]string{"--replicaof", "127.0.0.1", masterPort}, noDelay...)}))
	}
	// Replicas first: a Sentinel learns of replicas from the master's INFO,
	// which it asks once on connecting and then only every 10 s.
	for _, r := range s.Replicas {
		rdb := r.Client(tb)
		waitUntil(tb, 10*time.Second, "replica "+r.Addr+" in sync", func(ctx context.Context) error {
			info, err := rdb.Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "master_link_status:up") {
				return fmt.Errorf("not in sync:\n%s", info)
			}
			return nil
		})
	}
	quorum := o.Sentinels/2 + 1
	for range o.Sentinels {
		s.Addrs = append(s.Addrs, s.startSentinel(bin, masterPort, quorum, o))
	}
	for _, addr := range s.Addrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		tb.Cleanup(func() { _ = sc.Close() })
		waitUntil(tb, 15*time.Second, "Sentinel "+addr+" sees every replica and Sentinel", func(ctx context.Context) error {
			return s.ready(ctx, sc, o.Sentinels-1)
		})
	}
	return s
}

// startSentinel runs one Sentinel and returns its address. Sentinel
// rewrites its configuration file, so it lives in the test's own directory.
func (s *Sentinel) startSentinel(bin, masterPort string, quorum int, o SentinelOptions) string {
	tb := s.tb
	for attempt := 1; ; attempt++ {
		dir := tb.TempDir()
		port := strconv.Itoa(pickPorts(tb, 1)[0])
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf(`port %s
bind 127.0.0.1
protected-mode no
daemonize no
dir %s
sentinel monitor %s 127.0.0.1 %s %d
sentinel down-after-milliseconds %s %d
sentinel failover-timeout %s %d
sentinel parallel-syncs %s 1
`, port, dir, o.Name, masterPort, quorum, o.Name, o.DownAfter.Milliseconds(), o.Name, o.FailoverTimeout.Milliseconds(), o.Name)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			tb.Fatalf("redistest: %v", err)
		}
		srv := &Server{Addr: "127.0.0.1:" + port, dir: dir, tb: tb, args: []string{conf, "--sentinel"}}
		err := srv.start(bin)
		if err == nil {
			tb.Cleanup(srv.Stop)
			return srv.Addr
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			tb.Fatalf("redistest: %v (can this redis-server run as a Sentinel?)", err)
		}
		tb.Logf("redistest: Sentinel: %v; trying another port", err)
	}
}

// ready reports nil once the Sentinel knows the master, sees every replica
// up and knows the other Sentinels.
func (s *Sentinel) ready(ctx context.Context, sc *redis.SentinelClient, others int) error {
	m, err := sc.Master(ctx, s.Name).Result()
	if err != nil {
		return err
	}
	if m["flags"] != "master" {
		return fmt.Errorf("master flags %q", m["flags"])
	}
	if got := m["num-other-sentinels"]; got != strconv.Itoa(others) {
		return fmt.Errorf("knows %s other Sentinels, want %d", got, others)
	}
	reps, err := sc.Replicas(ctx, s.Name).Result()
	if err != nil {
		return err
	}
	var up []string
	for _, r := range reps {
		if r["flags"] == "slave" && r["master-link-status"] == "ok" {
			up = append(up, r["ip"]+":"+r["port"])
		}
	}
	for _, r := range s.Replicas {
		if !slices.Contains(up, r.Addr) {
			return fmt.Errorf("replica %s not seen up (seen: %v)", r.Addr, up)
		}
	}
	return nil
}

// MasterAddr asks the Sentinels which node is the master now.
func (s *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	var errs []error
	for _, addr := range s.Addrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr, MaxRetries: -1})
		hp, err := sc.GetMasterAddrByName(ctx, s.Name).Result()
		_ = sc.Close()
		if err == nil && len(hp) == 2 {
			return hp[0] + ":" + hp[1], nil
		}
		errs = append(errs, fmt.Errorf("%s: %v %w", addr, hp, err))
	}
	return "", fmt.Errorf("redistest: no Sentinel names the master: %v", errs)
}

// WaitFailover waits until the Sentinels name a master other than old and
// that node answers as a master, and returns its address.
func (s *Sentinel) WaitFailover(tb testing.TB, old string, timeout time.Duration) string {
	tb.Helper()
	var addr string
	waitUntil(tb, timeout, "a Sentinel failover away from "+old, func(ctx context.Context) error {
		var err error
		if addr, err = s.MasterAddr(ctx); err != nil {
			return err
		}
		if addr == old {
			return fmt.Errorf("the Sentinels still name %s", old)
		}
		rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		defer rdb.Close()
		info, err := rdb.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		if !strings.Contains(info, "role:master") {
			return fmt.Errorf("%s is named but not yet a master", addr)
		}
		return nil
	})
	return addr
}

// Kill ends the server with SIGKILL, like a crash: no shutdown, no final
// write, clients see their connections reset.
func (s *Server) Kill() {
	if s.mini != nil {
		s.mini.Close()
		return
	}
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	s.cmd = nil
}

// waitUntil polls check until it returns nil, failing the test with the last
// error after timeout.
func waitUntil(tb testing.TB, timeout time.Duration, what string, check func(context.Context) error) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := check(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: timed out after %s waiting for %s: %v", timeout, what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
