// Package redistest gives tests a real Redis.
//
// Client connects to a shared Redis (HUSH_TEST_REDIS_URL, else 127.0.0.1:6379);
// tests sharing it isolate themselves with Prefix. Start runs a private
// redis-server on a free loopback port, for tests that need a whole server to
// themselves (Asynq queues, restarts, several processes).
//
// When no Redis can be had, both fall back to miniredis so a laptop without
// Redis still runs the suite; under CI=true that fallback is a test failure,
// because CI must prove the code against the real server.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/testkit"
)

// Client returns a client to the shared test Redis, closed when the test ends.
// Keys written through it must carry Prefix(t) (or another unique prefix).
func Client(tb testing.TB) *redis.Client {
	tb.Helper()
	url := os.Getenv("HUSH_TEST_REDIS_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatalf("redistest: HUSH_TEST_REDIS_URL %q: %v", url, err)
	}
	rdb := redis.NewClient(opt)
	if err := ping(rdb); err == nil {
		tb.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	_ = rdb.Close()
	return Start(tb).Client(tb)
}

// Prefix returns a key prefix unique to this test run, ending in ":".
func Prefix(tb testing.TB) string {
	tb.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name())
	return "test:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}

// Server is a Redis server owned by one test.
type Server struct {
	Addr string
	dir  string
	cmd  *exec.Cmd
	mini *miniredis.Miniredis
	tb   testing.TB
	args []string
}

// Real reports whether this is a real redis-server (not the miniredis fallback).
func (s *Server) Real() bool { return s.mini == nil }

// URL is the server's redis:// URL.
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Client returns a new client to this server, closed when the test ends.
func (s *Server) Client(tb testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// Options change how Start runs redis-server.
type Options struct {
	// Persist turns on an append-only file fsynced on every write, so that
	// Restart keeps the data (a Redis restart in production keeps its queues).
	Persist bool
	// Cluster turns cluster mode on, with the cluster bus on a free port of
	// its own: by default Redis takes port+10000, which nobody checked.
	Cluster bool
	// Args are extra redis-server arguments, e.g. "--cluster-node-timeout", "5000".
	Args []string
}

// portAttempts is how many times Start picks new ports when redis-server
// finds one taken: a port free a moment ago can be bound by another test
// process before redis-server binds it.
const portAttempts = 5

// Start runs a private redis-server on a free loopback port; it is stopped
// when the test ends. Without a redis-server binary it falls back to miniredis
// (a failure under CI=true).
func Start(tb testing.TB, opts ...Options) *Server {
	tb.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if testkit.InCI() {
			tb.Fatalf("redistest: CI=true but no redis-server binary on PATH (.ci/run installs it): %v", err)
		}
		if o.Persist || o.Cluster || len(o.Args) > 0 {
			tb.Skip("redistest: this test needs a real redis-server (none on PATH)")
		}
		m := miniredis.RunT(tb)
		tb.Logf("redistest: no redis-server on PATH, using miniredis at %s", m.Addr())
		return &Server{Addr: m.Addr(), mini: m, tb: tb}
	}
	s := &Server{tb: tb}
	for attempt := 1; ; attempt++ {
		n := 1
		if o.Cluster {
			n = 2
		}
		ports := pickPorts(tb, n)
		// A fresh directory each time: a node that failed to bind may have
		// written its cluster configuration already.
		dir := tb.TempDir()
		s.dir = dir
		s.Addr = "127.0.0.1:" + strconv.Itoa(ports[0])
		s.args = []string{"--port", strconv.Itoa(ports[0]), "--bind", "127.0.0.1", "--save", "", "--dir", dir, "--daemonize", "no", "--protected-mode", "no"}
		if o.Persist {
			s.args = append(s.args, "--appendonly", "yes", "--appendfsync", "always")
		} else {
			s.args = append(s.args, "--appendonly", "no")
		}
		if o.Cluster {
			s.args = append(s.args, "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(ports[1]))
		}
		s.args = append(s.args, o.Args...)
		err := s.start(bin)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == portAttempts {
			tb.Fatalf("redistest: %v", err)
		}
		tb.Logf("redistest: %v; trying other ports", err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// errPortTaken is start's error when redis-server could not bind a port.
var errPortTaken = errors.New("a port was taken")

func (s *Server) start(bin string) error {
	out, err := s.launch(bin)
	if err != nil {
		return err
	}
	cmd := s.cmd
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// redis-server says so and exits when a port is taken; waiting the
		// whole deadline for it would only delay the retry.
		taken := strings.Contains(out.String(), "Address already in use")
		var err error
		if !taken {
			// Whoever took the port may be another test's Redis, which
			// answers too: only our process will do. INFO answers while
			// the server still loads its data; PING waits for the data.
			err = answersAs(rdb, cmd.Process.Pid)
			if err == nil {
				err = ping(rdb)
			}
			if err == nil {
				return nil
			}
		}
		if taken || time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			s.cmd = nil
			if taken {
				return fmt.Errorf("redis-server on %s: %w; its output:\n%s", s.Addr, errPortTaken, out.String())
			}
			return fmt.Errorf("redis-server on %s did not answer within 10s: %w; its output:\n%s", s.Addr, err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// launch starts redis-server with the server's arguments (its port among
// them) in its directory; its output goes to the buffer returned.
func (s *Server) launch(bin string) (*testkit.Buffer, error) {
	out := &testkit.Buffer{}
	cmd := exec.Command(bin, s.args...)
	cmd.Dir = s.dir
	cmd.Stdout = out
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd = cmd
	return out, nil
}

// Launch starts a stopped server again on the same port and data
// directory, without waiting for it to answer, so that a test sees it come
// up: connections refused, then LOADING answers while it reads its data
// back (Options.Persist or an appendonly Args).
func (s *Server) Launch() {
	s.tb.Helper()
	if s.mini != nil {
		s.tb.Fatal("redistest: Launch needs a real redis-server")
	}
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		s.tb.Fatalf("redistest: %v", err)
	}
	if _, err := s.launch(bin); err != nil {
		s.tb.Fatalf("redistest: launch: %v", err)
	}
}

// Stop stops the server (SIGTERM, so a persistent server writes its file).
func (s *Server) Stop() {
	if s.mini != nil {
		s.mini.Close()
		return
	}
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Down stops the server for good and keeps its port taken until the test
// ends, by a listener that closes every connection it accepts: a client
// of the server then fails as against a Redis that is down, and never
// reaches another test's server started on the freed port.
func (s *Server) Down() {
	s.tb.Helper()
	s.Stop()
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		s.tb.Fatalf("redistest: holding the port of the stopped server %s: %v", s.Addr, err)
	}
	s.tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
}

// Restart stops the server and starts it again on the same port and data
// directory. With Options.Persist the data survives.
func (s *Server) Restart() {
	s.tb.Helper()
	if s.mini != nil {
		s.tb.Fatal("redistest: Restart needs a real redis-server")
	}
	s.Stop()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		s.tb.Fatalf("redistest: %v", err)
	}
	if err := s.start(bin); err != nil {
		s.tb.Fatalf("redistest: restart: %v", err)
	}
}

// Dir is the server's working directory (its data files live there).
func (s *Server) Dir() string { return filepath.Clean(s.dir) }

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	return FreePorts(tb, 1)[0]
}

// pickPorts chooses Start's ports; a test replaces it to hand out a taken one.
var pickPorts = FreePorts

// FreePorts returns n different TCP ports on 127.0.0.1 that were free a
// moment ago. They are held open together while chosen: ports taken one
// after the other can come back the same.
func FreePorts(tb testing.TB, n int) []int {
	tb.Helper()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatalf("redistest: free port: %v", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}

// answersAs checks that the server at rdb is the process pid.
func answersAs(rdb *redis.Client, pid int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return err
	}
	want := "process_id:" + strconv.Itoa(pid) + "\r\n"
	if !strings.Contains(info, want) {
		return fmt.Errorf("another server answers on %s (no %q in its INFO)", rdb.Options().Addr, strings.TrimSpace(want))
	}
	return nil
}

func ping(rdb *redis.Client) error {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	return rdb.Ping(ctx).Err()
}
