package worker

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// heldCreationLost is a hook that runs the first command creating a held
// task (a hush:held task of job, or a hush:waiting-jobs group joining its
// second) and then loses its answer: the task exists, its creator is told
// it failed, and the run that held the recipients back fails and runs
// again.
//
// With after set, the job task's re-run (its start.lua call) waits until
// after holds (or 20 s): the held task may have run and ended by then.
type heldCreationLost struct {
	job    string
	lost   atomic.Bool
	after  func() bool
	waited atomic.Int64 // how long the re-run waited for after
}

// rerun reports whether cmd is the job's start.lua call.
func (h *heldCreationLost) rerun(cmd redis.Cmder) bool {
	args := cmd.Args()
	if len(args) < 4 || !strings.EqualFold(fmt.Sprint(args[0]), "evalsha") || args[1] != store.StartScript.Hash() {
		return false
	}
	for _, a := range args[3:] {
		if a == store.JobKey(h.job) {
			return true
		}
	}
	return false
}

func (h *heldCreationLost) creates(cmd redis.Cmder) bool {
	args := cmd.Args()
	name := strings.ToLower(fmt.Sprint(args[0]))
	if name != "evalsha" && name != "eval" {
		return false
	}
	for _, a := range args[1:] {
		s, _ := a.(string)
		if strings.Contains(s, ":t:wait:"+h.job+"/") || strings.HasPrefix(s, "jobs:job:"+h.job+"/") {
			return true
		}
	}
	return false
}

func (h *heldCreationLost) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *heldCreationLost) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.after != nil && h.lost.Load() && h.rerun(cmd) {
			start := time.Now()
			for deadline := start.Add(20 * time.Second); !h.after() && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			h.waited.Store(int64(time.Since(start)))
		}
		err := next(ctx, cmd)
		if err == nil && h.creates(cmd) && h.lost.CompareAndSwap(false, true) {
			return errDropped // it ran (not a NOSCRIPT answer): the task exists
		}
		return err
	}
}

func (h *heldCreationLost) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestHeldCreationWithLostReplySendsOnce: a recipient held back for its
// slot, whose held task's creation ran but answered an error, reaches its
// device once. The run that held it back fails and runs again; its re-run
// finds the marker naming the task and creates it again under the same id
// (refused while it exists), so only that task sends. Both shapes: a
// job's chunk of several recipients (a hush:held task) and a job of one
// (a hush:waiting-jobs group).
func TestHeldCreationWithLostReplySendsOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		users []string
		// late: the job task's re-run comes after the held task has
		// sent (its id is free again once it is done).
		late bool
	}{
		{"held task", []string{"hl-a", "hl-b", "hl-c"}, false},
		{"held task, re-run after it sent", []string{"hl-e", "hl-f", "hl-g", "hl-h"}, true},
		{"waiting-jobs group", []string{"hl-d"}, false},
		{"waiting-jobs group, re-run after it sent", []string{"hl-i", "hl-j"}[:1], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, envOptions{noRun: true, gap: "3s"})
			id := "hlost-" + tc.users[0]
			h := &heldCreationLost{job: id}
			if tc.late {
				h.after = func() bool {
					for _, u := range tc.users {
						if len(requestsFor(e.apns.Requests(), apnsToken(u+"/held"))) == 0 {
							return false
						}
					}
					return true
				}
			}
			e.rdb.AddHook(h)
			e.start()
			t.Cleanup(e.shutdown)
			var first, held []payload.Recipient
			for _, u := range tc.users {
				first = append(first, apnsRecipient(u, apnsToken(u+"/first")))
				held = append(held, apnsRecipient(u, apnsToken(u+"/held")))
			}
			e.waitDone(e.submit(alertJob(id+"-first", "first", first...)), 15*time.Second)
			st := e.waitDone(e.submit(alertJob(id, "held", held...)), 45*time.Second)
			if !h.lost.Load() {
				t.Fatal("no held task's creation was reached: the recipients were not held back")
			}
			if st.Counts[task.Delivered] != len(tc.users) {
				t.Errorf("counts %v, want %d delivered", st.Counts, len(tc.users))
			}
			e.waitQuiet(30 * time.Second)
			t.Logf("re-run waited %s; counts %v", time.Duration(h.waited.Load()), st.Counts)
			for _, u := range tc.users {
				if n := len(requestsFor(e.apns.Requests(), apnsToken(u+"/held"))); n != 1 {
					t.Errorf("recipient %s got %d pushes, want 1", u, n)
				}
			}
		})
	}
}
