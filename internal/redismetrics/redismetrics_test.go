package redismetrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
)

func TestResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"answered", nil, ResultOK},
		{"nil answer", redis.Nil, ResultNil},
		{"nil answer, wrapped", fmt.Errorf("get: %w", redis.Nil), ResultNil},
		{"unknown script digest", errorReply(t, "NOSCRIPT No matching script. Please use EVAL."), ResultNoScript},
		{"out of memory", errorReply(t, "OOM command not allowed when used memory > 'maxmemory'."), ResultReplyError},
		{"a replica", errorReply(t, "READONLY You can't write against a read only replica."), ResultReplyError},
		{"caller gave up", context.Canceled, ResultCanceled},
		{"deadline", context.DeadlineExceeded, ResultError},
		{"refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, ResultError},
		{"closed client", redis.ErrClosed, ResultError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Result(tt.err); got != tt.want {
				t.Errorf("Result(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// errorReply is the error go-redis returns for a Redis error reply, got
// from a real Redis where the reply can be had, else built the way
// go-redis builds it.
func errorReply(t *testing.T, msg string) error {
	t.Helper()
	rdb := redistest.Client(t)
	err := rdb.Eval(context.Background(), "return redis.error_reply(ARGV[1])", nil, msg).Err()
	var re redis.Error
	if !errors.As(err, &re) || err.Error() != msg {
		t.Fatalf("an error reply %q: got %v (%T)", msg, err, err)
	}
	return err
}

// counts is hush_redis_commands_total by result, and the round trips
// hush_redis_round_trip_seconds observed.
func counts(t *testing.T, h *Hook) (map[string]float64, uint64) {
	t.Helper()
	got := map[string]float64{}
	for _, r := range results {
		if n := testutil.ToFloat64(h.commands.WithLabelValues(r)); n != 0 {
			got[r] = n
		}
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(h)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var trips uint64
	for _, mf := range mfs {
		if mf.GetName() == "hush_redis_round_trip_seconds" {
			trips = mf.GetMetric()[0].GetHistogram().GetSampleCount()
		}
	}
	return got, trips
}

// TestHookCountsWhatRedisAnswered: commands sent through a hooked client
// to a real Redis are counted by what Redis answered, each command of a
// pipeline on its own, and each command or pipeline is one round trip.
func TestHookCountsWhatRedisAnswered(t *testing.T) {
	t.Parallel()
	rdb := redistest.Client(t)
	h := New()
	rdb.AddHook(h)
	ctx := context.Background()
	key := redistest.Prefix(t) + "k"
	t.Cleanup(func() { rdb.Del(context.Background(), key) })

	_ = rdb.Set(ctx, key, "v", 0).Err()    // ok
	_ = rdb.Get(ctx, key+":missing").Err() // nil
	_ = rdb.LPush(ctx, key, "x").Err()     // WRONGTYPE: reply_error
	// A script of its own, so Redis has not seen its digest: EVALSHA
	// answers noscript, then EVAL ok.
	_ = redis.NewScript(fmt.Sprintf("return %q", key)).Run(ctx, rdb, nil).Err()
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, key)            // ok
		p.Get(ctx, key+":missing") // nil
		p.HGet(ctx, key, "f")      // WRONGTYPE: reply_error
		return nil
	})
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_ = rdb.Get(cancelled, key).Err() // canceled

	got, trips := counts(t, h)
	want := map[string]float64{ResultOK: 3, ResultNil: 2, ResultNoScript: 1, ResultReplyError: 2, ResultCanceled: 1}
	wantTrips := uint64(7)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hush_redis_commands_total (-want +got):\n%s", diff)
	}
	if trips != wantTrips {
		t.Errorf("hush_redis_round_trip_seconds observed %d round trips, want %d", trips, wantTrips)
	}
}

// TestHookCountsNoAnswer: a command to a Redis that is not there is an
// error, and a pipeline's commands each count it.
func TestHookCountsNoAnswer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialerRetries: 1})
	t.Cleanup(func() { _ = rdb.Close() })
	h := New()
	rdb.AddHook(h)
	ctx := context.Background()
	if err := rdb.Ping(ctx).Err(); err == nil {
		t.Fatalf("PING %s answered: want nothing listening", addr)
	}
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "a")
		p.Get(ctx, "b")
		return nil
	})
	got, trips := counts(t, h)
	if diff := cmp.Diff(map[string]float64{ResultError: 3}, got); diff != "" {
		t.Errorf("hush_redis_commands_total (-want +got):\n%s", diff)
	}
	if trips != 2 {
		t.Errorf("hush_redis_round_trip_seconds observed %d round trips, want 2", trips)
	}
}

// TestEveryResultHasASeries: each result's series is exported before its
// first command, so an alert's expression on it evaluates from the start.
func TestEveryResultHasASeries(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(New())
	n, err := testutil.GatherAndCount(reg, "hush_redis_commands_total")
	if err != nil {
		t.Fatal(err)
	}
	if n != len(results) {
		t.Errorf("hush_redis_commands_total has %d series before any command, want %d (one per result)", n, len(results))
	}
}
