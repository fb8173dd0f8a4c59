package worker

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// scriptHeader is what a job-store script's header comment declares.
type scriptHeader struct {
	keys  []string // KEYS[1..], the key pattern of each
	argv  []string // ARGV[1..n], the name of each
	group []string // ARGV[n+1..], the names of one repeated group; nil: none
}

var (
	headerKey   = regexp.MustCompile(`^-- KEYS\[(\d+)\] .*?(hush:\S+)`)
	headerArg   = regexp.MustCompile(`^-- ARGV\[(\d+)\] +(\w+)`)
	headerGroup = regexp.MustCompile(`^-- ARGV\[(\d+)\.\.\] .*?(\d+) values? each: (.+)$`)
	localArg    = regexp.MustCompile(`^local (\w+) = (?:tonumber\()?ARGV\[(\d+)\]\)?$`)
	literalArg  = regexp.MustCompile(`ARGV\[\d+\]`)
)

// parseScript reads src's header (its leading comment lines) and checks
// its body reads each fixed ARGV into a local of the header's name, in the
// header's order, and indexes ARGV by a literal nowhere else.
func parseScript(src string) (scriptHeader, error) {
	var h scriptHeader
	lines := strings.Split(src, "\n")
	body := 0
	for body < len(lines) && strings.HasPrefix(lines[body], "--") {
		body++
	}
	for _, l := range lines[:body] {
		if m := headerKey.FindStringSubmatch(l); m != nil {
			if n, _ := strconv.Atoi(m[1]); n != len(h.keys)+1 {
				return h, fmt.Errorf("header names KEYS[%d] after %d keys", n, len(h.keys))
			}
			h.keys = append(h.keys, m[2])
		}
		if m := headerArg.FindStringSubmatch(l); m != nil {
			if n, _ := strconv.Atoi(m[1]); n != len(h.argv)+1 || h.group != nil {
				return h, fmt.Errorf("header names ARGV[%d] after %d arguments", n, len(h.argv))
			}
			h.argv = append(h.argv, m[2])
		}
		if m := headerGroup.FindStringSubmatch(l); m != nil {
			if n, _ := strconv.Atoi(m[1]); n != len(h.argv)+1 || h.group != nil {
				return h, fmt.Errorf("header starts a group at ARGV[%d] after %d arguments", n, len(h.argv))
			}
			h.group = strings.Split(m[3], ", ")
			if w, _ := strconv.Atoi(m[2]); w != len(h.group) {
				return h, fmt.Errorf("header's group of %d values names %d: %q", w, len(h.group), m[3])
			}
		}
	}
	var locals []string
	for i, l := range lines[body:] {
		code, _, _ := strings.Cut(l, "--")
		if m := localArg.FindStringSubmatch(strings.TrimSpace(code)); m != nil {
			if n, _ := strconv.Atoi(m[2]); n != len(locals)+1 {
				return h, fmt.Errorf("line %d reads ARGV[%d] into local %s, want ARGV[%d]", body+i+1, n, m[1], len(locals)+1)
			}
			locals = append(locals, m[1])
			continue
		}
		if literalArg.MatchString(code) {
			return h, fmt.Errorf("line %d indexes ARGV by a literal; read it into a named local at the top: %s", body+i+1, l)
		}
	}
	if diff := cmp.Diff(h.argv, locals); diff != "" {
		return h, fmt.Errorf("the locals read from ARGV differ from the header's names (-header +locals):\n%s", diff)
	}
	return h, nil
}

// TestScriptArgs: each job-store script's header names its KEYS as store.JobKeys
// makes them and its ARGV in the order its Go builder sends them, value by
// value, so the two cannot drift apart silently.
func TestScriptArgs(t *testing.T) {
	accepted := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	deadline := accepted.Add(6 * time.Hour)
	tests := []struct {
		script string
		src    string
		got    []any          // the builder's ARGV
		fixed  map[string]any // the value the builder must send under each fixed name
		groups [][]any        // the values of each repeated group, in order
	}{
		{
			script: "start.lua",
			src:    store.StartSrc,
			got: store.StartArgs(store.RecordInfo{ID: "j", Queue: "high", Task: "batch:b1", App: "courier", Recipients: 250, AcceptedAt: accepted, Deadline: deadline},
				store.JobFanning, false, 90*time.Second, &task.Chunk{Recipients: []payload.Recipient{
					{Devices: make([]payload.Device, 3)}, {Devices: make([]payload.Device, 1)},
				}}),
			fixed: map[string]any{
				"queue": "high", "task": "batch:b1", "accepted_at": "2025-03-01T12:00:00Z", "recipients": 250,
				"deadline": "2025-03-01T18:00:00Z", "state": store.JobFanning, "keep": int64(0), "ttl": int64(90000), "nread": 2, "app": "courier",
			},
			groups: [][]any{{3}, {1}},
		},
		{
			script: "start.lua without a chunk to read",
			src:    store.StartSrc,
			got:    store.StartArgs(store.RecordInfo{ID: "j", Queue: "low", Recipients: 1, AcceptedAt: accepted}, store.JobQueued, true, time.Minute, nil),
			fixed: map[string]any{
				"queue": "low", "task": "", "accepted_at": "2025-03-01T12:00:00Z", "recipients": 1,
				"deadline": "", "state": store.JobQueued, "keep": int64(1), "ttl": int64(60000), "nread": 0, "app": "",
			},
		},
		{
			script: "record.lua",
			src:    store.RecordSrc,
			got:    store.RecordArgs(2*time.Hour, 5, 1700000000000, "7/0", task.Delivered, "0", []any{7, task.Delivered, "", 9, "", "normal.2", 11, task.Failed, "gave up"}),
			fixed: map[string]any{"ttl": int64(7200000), "deferrals": 5, "expire_at": int64(1700000000000),
				"dev_field": "7/0", "dev_state": task.Delivered, "range": "0"},
			groups: [][]any{{7, task.Delivered}, {9, "@normal.2"}, {11, "failed|gave up"}},
		},
		{
			script: "cancel.lua",
			src:    store.CancelSrc,
			got:    store.CancelArgs(accepted),
			fixed:  map[string]any{"at": "2025-03-01T12:00:00Z"},
		},
		{
			script: "chunk.lua",
			src:    store.ChunkSrc,
			got:    store.ChunkArgs(&task.Chunk{From: 200}, true, []string{"200", "201"}, []string{"200/0", "200/a"}),
			fixed:  map[string]any{"mark": "s:200", "always": int64(1), "nread": 2},
			groups: [][]any{{"200"}, {"201"}, {"200/0"}, {"200/a"}},
		},
		{
			script: "fanned.lua",
			src:    store.FannedSrc,
			got:    store.FannedArgs(300, 1700000000000),
			fixed:  map[string]any{"cursor": 300, "expire_at": int64(1700000000000)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			h, err := parseScript(tt.src)
			if err != nil {
				t.Fatal(err)
			}
			if len(h.keys) == 0 || len(h.argv) == 0 {
				t.Fatalf("header names %d KEYS and %d ARGV, want both", len(h.keys), len(h.argv))
			}
			n := min(len(h.keys), 3)
			if diff := cmp.Diff(store.JobKeys("<id>")[:n], h.keys[:n]); diff != "" {
				t.Errorf("header KEYS differ from store.JobKeys (-store.JobKeys +header):\n%s", diff)
			}
			for i, k := range h.keys[n:] {
				// Done buckets, then, for the scripts that retire a job
				// (store.retiring's order), its exceptions.
				last := n+i == len(h.keys)-1
				if k != "hush:done:{<tag>}:<width>:<bucket>" && (k != store.ExceptKey("<id>") || !last || i == 0) {
					t.Errorf("header names KEYS %q after the job's keys, want done buckets, then its exceptions", k)
				}
			}
			var want []any
			for _, name := range h.argv {
				v, ok := tt.fixed[name]
				if !ok {
					t.Fatalf("header names ARGV %q, which the test gives no value", name)
				}
				want = append(want, v)
			}
			if len(tt.fixed) != len(h.argv) {
				t.Errorf("header names %d fixed ARGV %q, the test expects %d", len(h.argv), h.argv, len(tt.fixed))
			}
			for _, g := range tt.groups {
				if len(g) != len(h.group) {
					t.Fatalf("a group of %d values, the header's group has %d (%q)", len(g), len(h.group), h.group)
				}
				want = append(want, g...)
			}
			if diff := cmp.Diff(want, tt.got); diff != "" {
				t.Errorf("builder's ARGV differ from the header's order (-header +builder):\n%s", diff)
			}
		})
	}
}

// TestParseScriptCatchesDrift: parseScript (the check behind TestScriptArgs)
// fails a script whose locals, literals or header disagree.
func TestParseScriptCatchesDrift(t *testing.T) {
	tests := []struct {
		name string
		src  string
	}{
		{"locals swapped", "-- ARGV[1] a\n-- ARGV[2] b\nlocal b = ARGV[2]\nlocal a = ARGV[1]\n"},
		{"local misnamed", "-- ARGV[1] a\n-- ARGV[2] b\nlocal a = ARGV[1]\nlocal c = ARGV[2]\n"},
		{"literal in the body", "-- ARGV[1] a\nlocal a = ARGV[1]\nreturn ARGV[2]\n"},
		{"header skips one", "-- ARGV[1] a\n-- ARGV[3] b\nlocal a = ARGV[1]\n"},
		{"local not in the header", "-- ARGV[1] a\nlocal a = ARGV[1]\nlocal b = ARGV[2]\n"},
		{"group width", "-- ARGV[1] a\n-- ARGV[2..] per x, 3 values each: b, c\nlocal a = ARGV[1]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := parseScript(tt.src); err == nil {
				t.Errorf("parseScript(%q) passed, want an error", tt.src)
			}
		})
	}
}

// TestStoreRecordScript: record.lua records each final state once, counts
// it and the deferrals, and answers per final state whether it recorded it.
func TestStoreRecordScript(t *testing.T) {
	ctx := context.Background()
	s := jobStore{rdb: redistest.Client(t)}
	c := &task.Chunk{Job: redistest.Prefix(t) + "rec", AcceptedAt: time.Now()}
	t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(c.Job)...) })
	s.rdb.HSet(ctx, store.JobKey(c.Job), "queue", "normal", "state", store.JobFanning, "recipients", 4)

	rec := &chunkRecord{deferrals: 2}
	rec.final(0, task.Delivered, Event{})
	rec.final(1, task.Failed, Event{})
	rec.held(2, "normal.1")
	got, err := s.record(ctx, c, rec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{true, true, false}, got); diff != "" {
		t.Errorf("first record (-want +got):\n%s", diff)
	}
	if q := s.rdb.HGet(ctx, store.JobKey(c.Job), store.HeldPrefix+"2").Val(); q != "normal.1" {
		t.Errorf("recipient 2 held on %q, want normal.1", q)
	}
	// The second call reads which of its recipients have a final state
	// already (1 has); a held recipient before them takes no place in
	// that read.
	rec = &chunkRecord{deferrals: 1}
	rec.held(3, "normal.2")
	rec.final(1, task.Expired, Event{})
	rec.final(2, task.Delivered, Event{})
	if got, err = s.record(ctx, c, rec); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{false, false, true}, got); diff != "" {
		t.Errorf("second record (-want +got):\n%s", diff)
	}

	job, err := s.rdb.HGetAll(ctx, store.JobKey(c.Job)).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"queue": "normal", "state": store.JobFanning, "recipients": "4", task.Delivered: "2", task.Failed: "1", "deferrals": "3",
		store.HeldPrefix + "3": "normal.2"}
	if diff := cmp.Diff(want, job); diff != "" {
		t.Errorf("job record (-want +got):\n%s", diff)
	}
	finals, err := s.rdb.HGetAll(ctx, store.RecpKey(c.Job)).Result()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"0": task.Delivered, "1": task.Failed, "2": task.Delivered}, finals); diff != "" {
		t.Errorf("recipient states (-want +got):\n%s", diff)
	}
	for _, k := range store.JobKeys(c.Job)[:2] {
		if ttl := s.rdb.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("%s has TTL %v, want one", k, ttl)
		}
	}
}

// TestStoreFinalizeScript: finalize (record.lua with one entry) records a recipient's final state
// once and counts it; while the job goes on its records' TTLs are renewed,
// and the last final state retires the job (its records deleted, its
// done-hash entry written) without renewing them first.
func TestStoreFinalizeScript(t *testing.T) {
	ctx := context.Background()
	s := newStore(redistest.Client(t), DefaultJobRetention)
	id := redistest.Prefix(t) + "fin"
	t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(id)...) })
	s.rdb.HSet(ctx, store.JobKey(id), "queue", "normal", "state", store.JobFannedOut, "recipients", 2,
		"accepted_at", "2026-11-25T10:00:00Z", "h:0", "normal")

	for range 2 { // the second call records nothing
		if _, err := s.finalize(ctx, id, 0, task.Delivered, Event{}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	job := s.rdb.HGetAll(ctx, store.JobKey(id)).Val()
	if job[task.Delivered] != "1" || job["h:0"] != "" {
		t.Errorf("after recipient 0: job record %v, want delivered 1 and no longer held", job)
	}
	for _, k := range store.JobKeys(id)[:2] {
		if ttl := s.rdb.PTTL(ctx, k).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("%s has TTL %v, want the hour given", k, ttl)
		}
	}

	recorded, err := s.finalize(ctx, id, 1, task.Expired, Event{}, time.Hour)
	if err != nil || !recorded {
		t.Fatalf("recipient 1: recorded %v, err %v", recorded, err)
	}
	if n := s.rdb.Exists(ctx, store.JobKeys(id)...).Val(); n != 0 {
		t.Errorf("%d of the job's records left after its last final state, want none", n)
	}
	st, err := s.status(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != jobDone || st.Counts[task.Delivered] != 1 || st.Counts[task.Expired] != 1 {
		t.Errorf("retired status %+v, want done with 1 delivered and 1 expired", st)
	}
}

// TestStoreRecordFinishesInOneWrite: the record.lua call that gives a job
// its last final states retires it from what the record holds plus what
// the call brings (the states and the deferrals it would have written),
// without writing them first; a recipient named twice in one call, or
// already final, is counted once.
func TestStoreRecordFinishesInOneWrite(t *testing.T) {
	ctx := context.Background()
	s := newStore(redistest.Client(t), DefaultJobRetention)
	c := &task.Chunk{Job: redistest.Prefix(t) + "one", AcceptedAt: time.Now()}
	t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(c.Job)...) })
	s.rdb.HSet(ctx, store.JobKey(c.Job), "queue", "normal", "state", store.JobFannedOut, "recipients", 3,
		"accepted_at", "2026-11-25T10:00:00Z", "deferrals", 2, "h:1", "normal")

	rec := &chunkRecord{deferrals: 1}
	rec.final(0, task.Delivered, Event{})
	rec.final(0, task.Failed, Event{}) // the same recipient again: not counted
	rec.held(1, "normal.2")
	got, err := s.record(ctx, c, rec)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{true, false, false}, got); diff != "" {
		t.Errorf("first record (-want +got):\n%s", diff)
	}
	job := s.rdb.HGetAll(ctx, store.JobKey(c.Job)).Val()
	if job[task.Delivered] != "1" || job[task.Failed] != "" || job["deferrals"] != "3" || job["h:1"] != "normal.2" {
		t.Errorf("after the first record: job record %v, want delivered 1, deferrals 3, recipient 1 held on normal.2", job)
	}

	rec = &chunkRecord{deferrals: 4}
	rec.final(0, task.Expired, Event{}) // already final
	rec.final(1, task.Delivered, Event{})
	rec.final(2, task.TokenInvalid, Event{})
	if got, err = s.record(ctx, c, rec); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{false, true, true}, got); diff != "" {
		t.Errorf("last record (-want +got):\n%s", diff)
	}
	if n := s.rdb.Exists(ctx, store.JobKeys(c.Job)...).Val(); n != 0 {
		t.Errorf("%d of the job's records left after its last final states, want none", n)
	}
	st, err := s.status(ctx, c.Job)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{task.Delivered: 2, task.TokenInvalid: 1}
	for k, v := range st.Counts {
		if v == 0 {
			delete(st.Counts, k)
		}
	}
	if st.State != jobDone || st.Deferrals != 7 || !cmp.Equal(want, st.Counts) {
		t.Errorf("retired status %+v, want done, 7 deferrals, counts %v", st, want)
	}
}

// TestStartKeepsAFoundRecordsExpiry: start.lua sets the TTL of a record it
// writes, but a record it finds (written by the accepting client, whose
// TTL ends where the task's would) keeps its expiry, unless the task's TTL
// is at task.TTLFor's one-minute floor, which may reach past it.
func TestStartKeepsAFoundRecordsExpiry(t *testing.T) {
	ctx := context.Background()
	s := newStore(redistest.Client(t), DefaultJobRetention)
	id := redistest.Prefix(t) + "ttl"
	t.Cleanup(func() { s.rdb.Del(context.Background(), store.JobKeys(id)...) })
	r := store.RecordInfo{ID: id, Queue: "normal", Recipients: 1, AcceptedAt: time.Now(), Retain: time.Now()}
	run := func(ttl time.Duration) {
		t.Helper()
		c := s.startCallWith(r, store.JobFanning, false, nil)
		c.args[7] = ttl.Milliseconds() // ARGV[8] ttl
		if _, _, _, err := c.result(ctx, store.StartScript.Run(ctx, s.rdb, c.keys, c.args...)); err != nil {
			t.Fatal(err)
		}
	}
	run(time.Hour) // writes the record
	if ttl := s.rdb.PTTL(ctx, store.JobKey(id)).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("a new record's TTL %v, want the hour given", ttl)
	}
	run(2 * time.Hour) // finds it
	if ttl := s.rdb.PTTL(ctx, store.JobKey(id)).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Errorf("a found record's TTL %v, want its hour kept", ttl)
	}
	s.rdb.PExpire(ctx, store.JobKey(id), 10*time.Second)
	run(time.Minute) // the floor
	if ttl := s.rdb.PTTL(ctx, store.JobKey(id)).Val(); ttl <= 50*time.Second {
		t.Errorf("a found record at the floor has TTL %v, want the minute given", ttl)
	}
}

// TestStoreHoldCountsADeferralOnce: hold marks a recipient held and counts
// its deferral in the job's record, renewing its TTL, both ways store.write
// writes it: plain commands in the device outcomes' group commits (a
// Worker's jobStore) and record.lua (a store without a store.Recorder). A hold of a
// job whose record is gone (retired, or its TTL ran out) must not leave a
// record behind without a TTL: record.lua writes nothing, the plain
// commands one that expires with the TTL given.
func TestStoreHoldCountsADeferralOnce(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(map[bool]string{false: "record.lua", true: "plain"}[plain], func(t *testing.T) {
			ctx := context.Background()
			rdb := redistest.Client(t)
			s := newStore(rdb, DefaultJobRetention)
			if plain {
				s.held = store.NewRecorder(rdb, newEvents(rdb, 0, newMetrics()))
			}
			id := redistest.Prefix(t) + "hold"
			gone := redistest.Prefix(t) + "gone"
			t.Cleanup(func() { s.rdb.Del(context.Background(), append(store.JobKeys(id), store.JobKeys(gone)...)...) })
			s.rdb.HSet(ctx, store.JobKey(id), "queue", "normal", "state", store.JobFannedOut, "recipients", 2,
				"accepted_at", "2026-11-25T10:00:00Z", "deferrals", 1)

			if err := s.hold(ctx, id, 1, "normal.3", time.Hour); err != nil {
				t.Fatal(err)
			}
			job := s.rdb.HGetAll(ctx, store.JobKey(id)).Val()
			if job["deferrals"] != "2" || job["h:1"] != "normal.3" {
				t.Errorf("job record %v, want deferrals 2 and recipient 1 held on normal.3", job)
			}
			if ttl := s.rdb.PTTL(ctx, store.JobKey(id)).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
				t.Errorf("job record has TTL %v, want the hour given", ttl)
			}

			if err := s.hold(ctx, gone, 0, "normal", time.Hour); err != nil {
				t.Fatal(err)
			}
			n := s.rdb.Exists(ctx, store.JobKeys(gone)...).Val()
			ttl := s.rdb.PTTL(ctx, store.JobKey(gone)).Val()
			switch {
			case !plain && n != 0:
				t.Errorf("a hold of a job without a record left %d keys, want none", n)
			case plain && n != 0 && (ttl <= 0 || ttl > time.Hour):
				t.Errorf("a hold of a job without a record left it with TTL %v, want at most the hour given", ttl)
			}
		})
	}
}
