package store

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestPersistOutlivesARedisOutage: a write issued while Redis is down lands
// once Redis is back, instead of being given up (which would make the next
// run send an acknowledged push again).
func TestPersistOutlivesARedisOutage(t *testing.T) {
	testkit.Slow(t, "stops and restarts Redis")
	srv := redistest.Start(t)
	if !srv.Real() {
		t.Skip("needs a real redis-server to stop and restart")
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	srv.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tries := 0
	done := make(chan error, 1)
	go func() {
		done <- Persist(ctx, func(ctx context.Context) error {
			tries++
			return rdb.HSet(ctx, "hush:job:{p}:dev", "0/0", task.Delivered).Err()
		})
	}()
	// Let it fail at least once against the stopped server before Redis
	// comes back.
	probe := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = probe.Close() })
	if err := probe.Ping(ctx).Err(); err == nil {
		t.Fatal("Redis still answers after Stop")
	}
	srv.Restart()
	if err := <-done; err != nil {
		t.Fatalf("persist: %v", err)
	}
	if tries < 2 {
		t.Errorf("write tried %d times, want a failed try before Redis came back", tries)
	}
	got, err := probe.HGet(ctx, "hush:job:{p}:dev", "0/0").Result()
	if err != nil || got != task.Delivered {
		t.Errorf("recorded state = %q, %v; want %q", got, err, task.Delivered)
	}
}

// TestPersistReturnsReplyErrors: an error Redis answered is not retried.
func TestPersistReturnsReplyErrors(t *testing.T) {
	rdb := redistest.Client(t)
	ctx := context.Background()
	key := redistest.Prefix(t) + "string"
	if err := rdb.Set(ctx, key, "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	tries := 0
	err := Persist(ctx, func(ctx context.Context) error {
		tries++
		return rdb.HSet(ctx, key, "f", "v").Err() // WRONGTYPE
	})
	var reply redis.Error
	if !errors.As(err, &reply) {
		t.Fatalf("persist = %v, want the WRONGTYPE reply error", err)
	}
	if tries != 1 {
		t.Errorf("tried %d times, want 1", tries)
	}
}

// TestPersistStopsWithItsContext: a shutdown ends the tries.
func TestPersistStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tries := 0
	errDown := errors.New("connection refused")
	err := Persist(ctx, func(context.Context) error {
		tries++
		if tries == 3 {
			cancel()
		}
		return errDown
	})
	if !errors.Is(err, errDown) || tries != 3 {
		t.Errorf("persist = %v after %d tries, want %v after 3", err, tries, errDown)
	}
}

// replyError is an error as Redis answers it (redis.Error).
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// TestPersistWaitsOutTransientReplies: the replies Redis gives while it
// cannot serve a write for a moment (loading its data after a restart, a
// cluster failing over, ...) are tried again, like an unreachable Redis;
// other replies are returned at once.
func TestPersistWaitsOutTransientReplies(t *testing.T) {
	tests := []struct {
		reply string
		again bool
	}{
		{"LOADING Redis is loading the dataset in memory", true},
		{"BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.", true},
		{"TRYAGAIN Multiple keys request during rehashing of slot", true},
		{"CLUSTERDOWN The cluster is down", true},
		{"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.", true},
		{"READONLY You can't write against a read only replica.", true},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", false},
		{"BUSYKEY Target key name already exists.", false},
		{"ERR unknown command", false},
	}
	for _, tt := range tests {
		t.Run(strings.Fields(tt.reply)[0], func(t *testing.T) {
			tries := 0
			err := Persist(context.Background(), func(context.Context) error {
				tries++
				if tries < 3 {
					return replyError(tt.reply)
				}
				return nil
			})
			switch {
			case tt.again && (err != nil || tries != 3):
				t.Errorf("persist = %v after %d tries, want nil after 3", err, tries)
			case !tt.again && (err == nil || tries != 1):
				t.Errorf("persist = %v after %d tries, want the reply after 1", err, tries)
			}
		})
	}
}

// TestPersistWaitsOutALoadingRedis: a write issued while Redis restarts
// with a data set to read back meets connections refused, then LOADING
// answers, and lands once Redis serves again. (Given up on LOADING, the
// acknowledged push would be sent again: TestE2ERedisRestart once caught
// exactly that.)
func TestPersistWaitsOutALoadingRedis(t *testing.T) {
	testkit.Slow(t, "restarts Redis with a data set to load")
	srv := redistest.Start(t, redistest.Options{Args: []string{"--appendonly", "yes", "--appendfsync", "no"}})
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Enough data that reading it back takes a while: its append-only
	// file holds a million SETs.
	const keys, batch = 1_000_000, 20_000
	for from := 0; from < keys; from += batch {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := from; i < from+batch; i++ {
				p.Set(ctx, "fill:"+strconv.Itoa(i), i, 0)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	srv.Stop()
	srv.Launch()

	var answers []string
	err := Persist(ctx, func(ctx context.Context) error {
		err := rdb.HSet(ctx, "hush:job:{p}:dev", "0/0", task.Delivered).Err()
		if err != nil {
			answers = append(answers, strings.Fields(err.Error())[0])
		}
		return err
	})
	if err != nil {
		t.Fatalf("persist: %v (answers before: %v)", err, answers)
	}
	t.Logf("answers before the write landed: %v", answers)
	if !slices.Contains(answers, "LOADING") {
		t.Fatalf("no LOADING answer among %v: Redis read its data back too fast, the test proves nothing", answers)
	}
	if got := rdb.HGet(ctx, "hush:job:{p}:dev", "0/0").Val(); got != task.Delivered {
		t.Errorf("recorded state %q, want %q", got, task.Delivered)
	}
}
