package worker

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestDropLogNamesNoDeadlineWithoutOne: a collapsed push of a job without
// a ttl is logged without a deadline, not with the zero instant.
func TestDropLogNamesNoDeadlineWithoutOne(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	logs := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	// A held booking within CollapseMargin (5 s) of its slot is never
	// collapsed: a 10 s gap leaves time to submit the newer push.
	e := newEnv(t, envOptions{gap: "10s", logs: logs})
	e.waitDone(e.submit(alertJob("score-0", "0", apnsRecipient("u-c", apnsToken("c")))), 10*time.Second)
	held := alertJob("score-1", "1", apnsRecipient("u-c", apnsToken("c")))
	held.CollapseKey = "score"
	first := e.submit(held)
	// score-1 held, its mark written: the newer push's collapse wakes it
	// then, instead of leaving it to find its booking gone at its slot.
	waitFor(t, 10*time.Second, "score-1 held back by the gap", func() bool {
		st, err := e.client.Status(t.Context(), first)
		return err == nil && st.Deferrals > 0 && e.rdb.HExists(t.Context(), store.JobKey(first), store.HeldPrefix+"0").Val()
	})
	newer := held
	newer.ID, newer.CollapseKey = "score-2", "score"
	e.submit(newer)
	if st := e.waitDone(first, 15*time.Second); st.Counts[task.Collapsed] != 1 {
		t.Fatalf("score-1: %+v, want collapsed by score-2", st)
	}
	// The drop is logged where score-1 collapses; score-2 goes out a gap
	// later and writes no drop line, so the test need not wait for it.
	var dropped []string
	waitFor(t, 10*time.Second, "the collapsed push's drop line", func() bool {
		mu.Lock()
		defer mu.Unlock()
		dropped = dropped[:0]
		for _, line := range strings.Split(buf.String(), "\n") {
			if strings.Contains(line, `"delivery dropped"`) {
				dropped = append(dropped, line)
			}
		}
		return len(dropped) > 0
	})
	for _, line := range dropped {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if d, ok := rec["deadline"]; ok {
			t.Errorf("dropped line %s: deadline %v for a job without one, want none", line, d)
		}
	}
}
