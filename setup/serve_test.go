package setup

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/worker"
)

// serveFromEnv runs Serve with the configuration LoadConfig reads from env
// and returns the API's base URL; Serve is stopped (and must return nil)
// when the test ends.
func serveFromEnv(t *testing.T, env map[string]string) (string, *testkit.Buffer) {
	t.Helper()
	return serveWith(t, env, Serve)
}

// serveWith is serveFromEnv running run instead of Serve.
func serveWith(t *testing.T, env map[string]string, run func(context.Context, Config, *slog.Logger) error) (string, *testkit.Buffer) {
	t.Helper()
	clearEnv(t)
	// The kernel picks the port, read back from the log: a port found free
	// beforehand can be taken by another test before Serve binds it.
	t.Setenv("HUSH_HTTP_ADDR", "127.0.0.1:0")
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	var logs testkit.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, slog.New(slog.NewTextHandler(&logs, nil))) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Errorf("Serve did not return within 20s of its context ending")
		}
	})
	var base string
	testkit.WaitFor(t, 15*time.Second, "/readyz", func() bool {
		select {
		case err := <-done:
			t.Fatalf("Serve returned early: %v\nlogs:\n%s", err, logs.String())
		default:
		}
		if base == "" {
			_, rest, ok := strings.Cut(logs.String(), `msg="http listening" addr=`)
			if !ok {
				return false
			}
			addr, _, _ := strings.Cut(rest, " ")
			base = "http://" + addr
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, &logs
}

// postAndWait submits body and waits until the job is done.
func postAndWait(t *testing.T, base, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(base+"/v1/notifications", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var acc worker.Accepted
	err = json.NewDecoder(resp.Body).Decode(&acc)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST: %d %+v %v", resp.StatusCode, acc, err)
	}
	var st map[string]any
	testkit.WaitFor(t, 15*time.Second, "job done", func() bool {
		resp, err := http.Get(base + "/v1/notifications/" + acc.ID)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		st = nil
		return json.NewDecoder(resp.Body).Decode(&st) == nil && st["state"] == "done"
	})
	return st
}

func TestServeEmbeddedDevelopmentDefaults(t *testing.T) {
	base, logs := serveFromEnv(t, nil)
	st := postAndWait(t, base, `{"recipients":[{"user_id":"u-1","devices":[{"platform":"fcm","token":"dev-token-1"}]}],"alert":{"title":"hi"}}`)
	if c, _ := st["counts"].(map[string]any); c["delivered"] != 1.0 {
		t.Errorf("dry-run job: %v, want delivered", st)
	}
	for _, want := range []string{"EMBEDDED IN-MEMORY Redis", "DRY-RUN"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack the %q warning:\n%s", want, logs.String())
		}
	}
}

func TestServeWithProviders(t *testing.T) {
	srv := redistest.Start(t)
	fa, env := apnsEnv(t)
	ff, fcmKeys := fcmEnv(t)
	maps.Copy(env, fcmKeys)
	env["HUSH_REDIS_URL"] = srv.URL()
	base, logs := serveFromEnv(t, env)
	tok := testkit.APNsToken("serve")
	body := `{"recipients":[{"user_id":"u-1","devices":[{"platform":"apns","token":"` + tok + `"},{"platform":"fcm","token":"` + testkit.FCMToken("serve") + `"}]}],"alert":{"title":"hi"}}`
	st := postAndWait(t, base, body)
	if c, _ := st["counts"].(map[string]any); c["delivered"] != 1.0 {
		t.Errorf("job: %v, want delivered", st)
	}
	if len(fa.Requests()) != 1 || len(ff.Requests()) != 1 {
		t.Errorf("fakes got %d APNs and %d FCM requests, want 1 each", len(fa.Requests()), len(ff.Requests()))
	}
	if strings.Contains(logs.String(), tok) {
		t.Errorf("logs contain a whole device token")
	}
}

// TestServeLogsTheLimiterRules: the start's "http listening" line says
// the categories, the quiet hours and the default zone Serve runs with.
func TestServeLogsTheLimiterRules(t *testing.T) {
	_, logs := serveFromEnv(t, map[string]string{
		"HUSH_THROTTLE_CATEGORIES": "social=10/1h@30s; marketing=2/1d quiet=21:00-09:00; transactional=none global=off",
		"HUSH_QUIET_HOURS":         "22:00-08:00",
		"HUSH_DEFAULT_TIMEZONE":    "Europe/Berlin",
	})
	var line string // logged once the listener is up, perhaps after /readyz answered
	testkit.WaitFor(t, 5*time.Second, "the http listening line", func() bool {
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, `msg="http listening"`) {
				line = l
			}
		}
		return line != ""
	})
	for _, want := range []string{`limits="10/1m,100/24h min-gap 3s"`, "categories=marketing,social,transactional", "quiet_hours=22:00-08:00", "timezone=Europe/Berlin"} {
		if !strings.Contains(line, want) {
			t.Errorf("http listening line %q lacks %s", line, want)
		}
	}
}

// TestServeRedissToAPlainRedisSaysTLS: rediss:// to a server that does not
// speak TLS (it answers the handshake as Redis answers a command it does
// not know) fails with an error that points at the scheme.
func TestServeRedissToAPlainRedisSaysTLS(t *testing.T) {
	clearEnv(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("-ERR unknown command\r\n"))
			_ = c.Close()
		}
	}()
	t.Setenv("HUSH_REDIS_URL", "rediss://"+l.Addr().String()+"/0")
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	err = Serve(t.Context(), cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "rediss:// speaks TLS") {
		t.Fatalf("Serve = %v, want an error saying rediss:// needs a Redis with TLS", err)
	}
}

// TestServeRedisDownNamesTheKey: with nothing listening at HUSH_REDIS_URL,
// Serve fails with one error that names the key and where it points,
// without the password.
func TestServeRedisDownNamesTheKey(t *testing.T) {
	clearEnv(t)
	url := "redis://:s3cret@127.0.0.1:" + strconv.Itoa(redistest.FreePort(t)) + "/0"
	t.Setenv("HUSH_REDIS_URL", url)
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	err = Serve(t.Context(), cfg, slog.New(slog.DiscardHandler))
	var ke *KeyError
	if !errors.As(err, &ke) || ke.Key != "HUSH_REDIS_URL" || !strings.Contains(err.Error(), "does not answer") {
		t.Fatalf("Serve = %v, want a HUSH_REDIS_URL error saying Redis does not answer", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the password: %v", err)
	}
}

// TestRedisLoggerLevels: go-redis's messages come out through slog, dial
// failures at debug (hush reports the outage itself), Sentinel news at
// info, the rest at warn.
func TestRedisLoggerLevels(t *testing.T) {
	var b testkit.Buffer
	l := RedisLogger(slog.New(slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})))
	l.Printf(t.Context(), "redis: connection pool: failed to dial after %d attempts: %s", 5, "dial tcp 127.0.0.1:1: connect: connection refused")
	l.Printf(t.Context(), "sentinel: new master=%q addr=%q", "m", "127.0.0.1:2")
	l.Printf(t.Context(), "something else")
	var levels []string
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		levels = append(levels, rec["level"].(string))
	}
	if want := []string{"DEBUG", "INFO", "WARN"}; !slices.Equal(levels, want) {
		t.Errorf("levels %v, want %v", levels, want)
	}
}
