package worker

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// rangeJob is a fanned-out job of 300 recipients for record.lua's range
// tests, on rdb: its record, and calls of record.lua with a range or
// without.
type rangeJob struct {
	t   *testing.T
	s   jobStore
	id  string
	ctx context.Context
}

func newRangeJob(t *testing.T, s jobStore, id string) *rangeJob {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(id)...) })
	if err := s.rdb.HSet(ctx, store.JobKey(id), "queue", "normal", "state", store.JobFannedOut, "recipients", 300,
		"accepted_at", "2026-11-27T10:00:00Z").Err(); err != nil {
		t.Fatal(err)
	}
	return &rangeJob{t: t, s: s, id: id, ctx: ctx}
}

// record calls record.lua with range rng for recipients, each delivered,
// and returns its reply.
func (j *rangeJob) record(rng string, recipients ...int) []int64 {
	j.t.Helper()
	var entries []any
	for _, r := range recipients {
		entries = append(entries, r, task.Delivered, "")
	}
	keys, at := j.s.retiring(j.id)
	out, err := store.RecordScript.Run(j.ctx, j.s.rdb, keys, store.RecordArgs(time.Hour, 0, at, "", "", rng, entries)...).Int64Slice()
	if err != nil {
		j.t.Fatal(err)
	}
	return out
}

// delivered is the job's count of delivered recipients.
func (j *rangeJob) delivered() int {
	j.t.Helper()
	n, _ := strconv.Atoi(j.s.rdb.HGet(j.ctx, store.JobKey(j.id), task.Delivered).Val())
	return n
}

func (j *rangeJob) want(got []int64, want []int64, delivered int, why string) {
	j.t.Helper()
	if !slices.Equal(got, want) || j.delivered() != delivered {
		j.t.Errorf("%s: replies %v and %d delivered, want %v and %d", why, got, j.delivered(), want, delivered)
	}
}

// TestRecordRangeNeverCountsARecipientTwice: a record call given its
// recipients' range skips reading their final states only while nobody
// can have written one in that range; every other writer makes it read,
// so no recipient is counted twice: the range's own earlier calls (a
// chunk run's call sent again after its reply was lost), a delivery task's
// finalize (one entry, no range), a call without a range, and a version before ranges
// (which writes a final state and its count only).
func TestRecordRangeNeverCountsARecipientTwice(t *testing.T) {
	s := newStore(redistest.Client(t), DefaultJobRetention)
	prefix := redistest.Prefix(t)

	j := newRangeJob(t, s, prefix+"own")
	j.want(j.record("1", 100, 101), []int64{1, 1}, 2, "a fresh range")
	j.want(j.record("1", 101, 102), []int64{0, 1}, 3, "the range's own earlier call recorded 101")

	j = newRangeJob(t, s, prefix+"finalize")
	j.want(j.record("0", 1), []int64{1}, 1, "a fresh range")
	if _, err := s.finalize(j.ctx, j.id, 150, task.Delivered, Event{}, time.Hour); err != nil {
		t.Fatal(err)
	}
	j.want(j.record("1", 150, 151), []int64{0, 1}, 3, "a delivery task's finalize recorded 150")

	j = newRangeJob(t, s, prefix+"unranged")
	j.want(j.record("", 199, 200), []int64{1, 1}, 2, "a call without a range")
	j.want(j.record("2", 200, 201), []int64{0, 1}, 3, "a call without a range recorded 200")

	j = newRangeJob(t, s, prefix+"older")
	j.want(j.record("0", 1), []int64{1}, 1, "a fresh range")
	s.rdb.HSet(j.ctx, store.RecpKey(j.id), "250", task.Failed)
	s.rdb.HIncrBy(j.ctx, store.JobKey(j.id), task.Failed, 1)
	j.want(j.record("2", 250, 251), []int64{0, 1}, 2, "250 already recorded by another run")
	if f := s.rdb.HGet(j.ctx, store.RecpKey(j.id), "250").Val(); f != task.Failed {
		t.Errorf("recipient 250 reads %q, want its first final state, failed", f)
	}
}

// TestRecordRangeSkipsTheRead: in a fresh range of a job that has other
// final states, the call makes one HMGET (the job record's), not two. On
// a redis-server of its own, counted by INFO commandstats.
func TestRecordRangeSkipsTheRead(t *testing.T) {
	srv := redistest.Start(t)
	if !srv.Real() {
		t.Skip("counts commands with INFO commandstats: needs a real redis-server")
	}
	rdb := srv.Client(t)
	s := newStore(rdb, DefaultJobRetention)
	hmgets := func() int {
		t.Helper()
		info := rdb.Info(context.Background(), "commandstats").Val()
		for _, line := range strings.Split(info, "\n") {
			if rest, ok := strings.CutPrefix(line, "cmdstat_hmget:calls="); ok {
				n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
				return n
			}
		}
		return 0
	}
	j := newRangeJob(t, s, "skip")
	j.record("0", 1, 2)
	for _, c := range []struct {
		rng   string
		want  int
		label string
	}{
		{"1", 1, "a fresh range"},
		{"", 2, "no range"},
		{"1", 2, "a range with final states"},
	} {
		from := hmgets()
		j.record(c.rng, 100+from) // a recipient of range 1 not recorded yet
		if got := hmgets() - from; got != c.want {
			t.Errorf("%s: %d HMGETs, want %d", c.label, got, c.want)
		}
	}
}

func TestRecordRange(t *testing.T) {
	many := &task.Chunk{From: 100, Recipients: make([]payload.Recipient, 100)}
	one := &task.Chunk{From: 0, Recipients: make([]payload.Recipient, 1)}
	held := &task.Chunk{From: 100, Recipients: make([]payload.Recipient, 2), Indices: []int{120, 130}, Wake: 1764237600}
	for _, c := range []struct {
		c       *task.Chunk
		entries []any
		want    string
	}{
		{many, []any{100, task.Delivered, "", 199, "", "normal"}, "1"},
		{many, []any{199, task.Delivered, "", 200, task.Delivered, ""}, ""},
		{many, []any{5, task.Delivered, ""}, "0"},
		{many, nil, ""},
		{one, []any{0, task.Delivered, ""}, ""},
		{held, []any{120, task.Delivered, "", 130, task.Delivered, ""}, ""},
	} {
		if got := store.RecordRange(c.c, c.entries); got != c.want {
			t.Errorf("store.RecordRange(%d recipients, %v) = %q, want %q", len(c.c.Recipients), c.entries, got, c.want)
		}
	}
}
