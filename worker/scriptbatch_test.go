package worker

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// pipelineCount counts the pipelines of script calls and the single
// commands a client sends.
type pipelineCount struct{ pipelines, singles atomic.Int64 }

func (p *pipelineCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (p *pipelineCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, c redis.Cmder) error { p.singles.Add(1); return next(ctx, c) }
}
func (p *pipelineCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cs []redis.Cmder) error {
		if slices.ContainsFunc(cs, func(c redis.Cmder) bool { return c.Name() == "evalsha" }) {
			p.pipelines.Add(1)
		}
		return next(ctx, cs)
	}
}

// The record.lua calls of many jobs finishing together share one
// pipeline, and each gets its own answer as if it had run alone: a job's
// final state recorded once, a second call for it
// answered "already recorded", a job whose record is gone answered with
// nothing recorded, and a job whose key holds the wrong type fails alone.
// On a server that lost its scripts (SCRIPT FLUSH: a restart) every call
// still runs.
func TestRecordCallsShareARoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := t.Context()
	count := &pipelineCount{}
	rdb.AddHook(count)
	s := newStore(rdb, time.Hour)
	// A long linger: every call below joins the first batch.
	s.records = store.NewScriptBatcher(rdb, store.RecordScript, nil, 300*time.Millisecond)

	const jobs = 30
	chunks := make([]*task.Chunk, jobs)
	for i := range chunks {
		chunks[i] = &task.Chunk{Job: fmt.Sprintf("batched-%d", i), AcceptedAt: time.Now()}
		r := store.RecordInfo{ID: chunks[i].Job, Queue: "normal", Recipients: 1, AcceptedAt: time.Now(), Retain: time.Now()}
		if i == 7 {
			continue // no record: gone
		}
		if _, err := s.create(ctx, r, store.JobQueued); err != nil {
			t.Fatal(err)
		}
	}
	// Job 9's recipient states are a string: its call fails, alone.
	if err := rdb.Set(ctx, store.RecpKey(chunks[9].Job), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for round, want := range []bool{true, false} {
		if round == 0 {
			if err := rdb.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}
		before, singles := count.pipelines.Load(), count.singles.Load()
		type answer struct {
			got []bool
			err error
		}
		answers := make([]answer, jobs)
		var wg sync.WaitGroup
		for i, c := range chunks {
			wg.Go(func() {
				rec := &chunkRecord{}
				rec.final(0, task.Delivered, Event{})
				answers[i].got, answers[i].err = s.record(ctx, c, rec)
			})
		}
		wg.Wait()
		for i, a := range answers {
			switch {
			case i == 9:
				if a.err == nil || !redis.HasErrorPrefix(errorsUnwrapAll(a.err), "WRONGTYPE") {
					t.Errorf("round %d: job %d with a bad key: %v, %v; want its own WRONGTYPE", round, i, a.got, a.err)
				}
			case a.err != nil || len(a.got) != 1:
				t.Errorf("round %d: job %d: %v, %v", round, i, a.got, a.err)
			case i == 7 && a.got[0]:
				t.Errorf("round %d: job %d without a record: recorded", round, i)
			case i != 7 && a.got[0] != want:
				t.Errorf("round %d: job %d: recorded %v, want %v", round, i, a.got[0], want)
			}
		}
		if n := count.pipelines.Load() - before; n != 1 {
			t.Errorf("round %d: %d calls in %d pipelines, want 1", round, jobs, n)
		}
		if n := count.singles.Load() - singles; round == 0 && n < jobs {
			t.Errorf("after SCRIPT FLUSH: %d commands alone, want each call run again alone", n)
		}
	}
	for i, c := range chunks {
		if i == 7 || i == 9 {
			continue
		}
		if st, err := s.status(ctx, c.Job); err != nil || st.Counts[task.Delivered] != 1 {
			t.Errorf("job %d: %+v, %v; want its recipient delivered, once", i, st, err)
		}
	}
	if err := s.records.Drain(ctx); err != nil {
		t.Error(err)
	}

	// A caller whose context ends stops waiting.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.records.Run(cctx, store.JobKeys("gone"), nil, "1").Err(); err != context.Canceled {
		t.Errorf("a cancelled caller got %v, want context.Canceled", err)
	}
}

// errorsUnwrapAll is err's innermost error.
func errorsUnwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// TestRecordEventsLeadTheirStates: on one node the events of a batch's
// record calls lead the calls in their one pipeline, so a final state is
// never written before its event; when Redis refuses the appends the
// states are written all the same and the events counted lost.
func TestRecordEventsLeadTheirStates(t *testing.T) {
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	ctx := t.Context()
	count := &pipelineCount{}
	rdb.AddHook(count)
	m := newMetrics()
	s := newStore(rdb, time.Hour)
	s.records = store.NewScriptBatcher(rdb, store.RecordScript, newEvents(rdb, 1000, m), 300*time.Millisecond)

	run := func(prefix string) []error {
		const jobs = 5
		errs := make([]error, jobs)
		var wg sync.WaitGroup
		for i := range jobs {
			c := &task.Chunk{Job: fmt.Sprintf("%s-%d", prefix, i), AcceptedAt: time.Now()}
			if _, err := s.create(ctx, store.RecordInfo{ID: c.Job, Queue: "normal", Recipients: 1, AcceptedAt: time.Now(), Retain: time.Now()}, store.JobQueued); err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				rec := &chunkRecord{}
				rec.final(0, task.Delivered, Event{Job: c.Job, App: DefaultApp, UserID: "u", At: time.Now()})
				_, errs[i] = s.record(ctx, c, rec)
			})
		}
		wg.Wait()
		return errs
	}

	before := count.pipelines.Load()
	for i, err := range run("lead") {
		if err != nil {
			t.Errorf("job %d: %v", i, err)
		}
	}
	if n := count.pipelines.Load() - before; n != 1 {
		t.Errorf("%d pipelines, want 1: the events and the calls share one round trip", n)
	}
	if n := rdb.XLen(ctx, EventsStream).Val(); n != 5 {
		t.Errorf("the stream holds %d events, want 5", n)
	}

	rdb.Del(ctx, EventsStream)
	rdb.Set(ctx, EventsStream, "not a stream", 0)
	for i, err := range run("refused") {
		if err != nil {
			t.Errorf("job %d with its event refused: %v; want its state written", i, err)
		}
	}
	for i := range 5 {
		if st, _ := s.status(ctx, fmt.Sprintf("refused-%d", i)); st.Counts[task.Delivered] != 1 {
			t.Errorf("job refused-%d: counts %v, want its delivery recorded", i, st.Counts)
		}
	}
	if n := testutil.ToFloat64(m.eventsDropped.WithLabelValues("stream")); n != 5 {
		t.Errorf("hush_events_dropped_total{sink=\"stream\"} %v, want 5", n)
	}
}
