package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/testkit"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/fake"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// recipientsJob runs, on a worker limiting each user to 1 push an hour, a
// job whose recipients end delivered (two devices), token_invalid, failed,
// held (its user had a push this hour) and delivered, and returns its id
// once only the held one is left.
func recipientsJob(t *testing.T, e *env) string {
	t.Helper()
	e.apns.Script(apnsToken("dead"), fake.Unregistered())
	e.apns.Script(apnsToken("bad"), fake.APNsReason(400, "BadTopic"))
	first := e.submit(alertJob("rcp-first", "first", apnsRecipient("u-busy", apnsToken("busy-0"))))
	e.waitDone(first, 10*time.Second)
	id := e.submit(alertJob("rcp-job", "hello",
		apnsRecipient("u-ok", apnsToken("ok-0"), apnsToken("ok-1")),
		apnsRecipient("u-dead", apnsToken("dead")),
		apnsRecipient("u-fail", apnsToken("bad")),
		apnsRecipient("u-busy", apnsToken("busy-1")),
		apnsRecipient("u-ok2", apnsToken("ok2-0"))))
	waitFor(t, 10*time.Second, "four recipients final and one held", func() bool {
		st, err := e.client.Status(context.Background(), id)
		return err == nil && st.Counts["pending"] == 1 && st.Counts["delivered"] == 2 &&
			st.Counts["token_invalid"] == 1 && st.Counts["failed"] == 1 && st.Deferrals > 0
	})
	return id
}

// TestRecipientsOfALiveJob: a live job's page lists each recipient's final
// state, its devices' recorded states and, for the held one, the task
// holding it, and a failure's reason; it pages by cursor and filters by
// state; once the job finishes (the held recipient cancelled), the counts
// remain and every recipient's final state.
func TestRecipientsOfALiveJob(t *testing.T) {
	e := newEnv(t, envOptions{limits: "1/1h"})
	id := recipientsJob(t, e)
	ctx := context.Background()

	all, err := e.client.Recipients(ctx, id, RecipientsQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 5 || all.Items[3].Held == nil {
		t.Fatalf("page: %+v", all)
	}
	held := all.Items[3].Held
	if !strings.HasPrefix(held.Task, "wait:"+id+"/0/") && held.Task != task.DeliveryID(id, 3) || held.Queue == "" {
		t.Errorf("held recipient's task: %+v", held)
	}
	if !held.WakesAt.IsZero() && (held.WakesAt.Before(time.Now().Add(50*time.Minute)) || held.WakesAt.After(time.Now().Add(61*time.Minute))) {
		t.Errorf("held recipient wakes at %v, want about an hour from now", held.WakesAt)
	}
	want := RecipientsPage{ID: id, App: all.App, State: store.JobFannedOut, Recipients: 5, Items: []RecipientState{
		{Index: 0, State: task.Delivered, Devices: []DeviceState{{Device: 0, State: task.Delivered}, {Device: 1, State: task.Delivered}}},
		{Index: 1, State: task.TokenInvalid, Devices: []DeviceState{{Device: 0, State: task.TokenInvalid}}},
		{Index: 2, State: task.Failed, Reason: "permanent provider failure (BadTopic): apns: 400 BadTopic"},
		{Index: 3, State: RecipientHeld, Held: held},
		{Index: 4, State: task.Delivered},
	}}
	// A one-device recipient's delivered state may be folded into its
	// record call, which writes no device state when nothing else does.
	ignoreDevices := cmpopts.IgnoreFields(RecipientState{}, "Devices", "Attempts")
	if diff := cmp.Diff(want, all, ignoreDevices); diff != "" {
		t.Errorf("page (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Items[:2], all.Items[:2], cmpopts.IgnoreFields(RecipientState{}, "Attempts")); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}

	t.Run("held slot and rule", func(t *testing.T) {
		p, err := e.client.Recipients(ctx, id, RecipientsQuery{State: RecipientHeld})
		if err != nil {
			t.Fatal(err)
		}
		n, err := e.w.ExplainHeld(ctx, &p)
		if err != nil || n != 1 {
			t.Fatalf("ExplainHeld: %d looked up, %v", n, err)
		}
		h := p.Items[0].Held
		slot, ok := e.lim.slot(task.Member(id, 3, 0))
		if !ok || !h.Slot.Equal(slot) || h.HeldBy != "1/1h" {
			t.Errorf("held: slot %v held by %q, want the booked %v (%v) held by 1/1h", h.Slot, h.HeldBy, slot, ok)
		}
	})
	t.Run("paged", func(t *testing.T) {
		var got []RecipientState
		var cursors []string
		q := RecipientsQuery{Limit: 2}
		for {
			p, err := e.client.Recipients(ctx, id, q)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, p.Items...)
			if p.Next == "" {
				break
			}
			cursors = append(cursors, p.Next)
			q.Cursor = p.Next
		}
		if diff := cmp.Diff([]string{"2", "4"}, cursors); diff != "" {
			t.Errorf("cursors (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(all.Items, got); diff != "" {
			t.Errorf("pages together (-want +got):\n%s", diff)
		}
	})
	t.Run("filtered", func(t *testing.T) {
		for _, tc := range []struct {
			state string
			want  []int
		}{
			{task.Delivered, []int{0, 4}},
			{task.Failed, []int{2}},
			{task.TokenInvalid, []int{1}},
			{RecipientHeld, []int{3}},
			{RecipientPending, nil},
			{task.Cancelled, nil},
		} {
			t.Run(tc.state, func(t *testing.T) {
				p, err := e.client.Recipients(ctx, id, RecipientsQuery{State: tc.state})
				if err != nil {
					t.Fatal(err)
				}
				var got []int
				for _, r := range p.Items {
					got = append(got, r.Index)
					if r.State != tc.state {
						t.Errorf("recipient %d is %s, listed under %s", r.Index, r.State, tc.state)
					}
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("indices (-want +got):\n%s", diff)
				}
			})
		}
		// A filtered page reads Limit recipients and may be short.
		p, err := e.client.Recipients(ctx, id, RecipientsQuery{State: task.Delivered, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Items) != 1 || p.Next != "3" {
			t.Errorf("delivered, limit 3: %d items, next %q; want 1, \"3\"", len(p.Items), p.Next)
		}
	})
	t.Run("retired", func(t *testing.T) {
		if _, err := e.client.Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 10*time.Second, "the job retired", func() bool {
			p, err := e.client.Recipients(ctx, id, RecipientsQuery{})
			return err == nil && p.Retired
		})
		p, err := e.client.Recipients(ctx, id, RecipientsQuery{State: task.Failed})
		if err != nil {
			t.Fatal(err)
		}
		counts := map[string]int{"pending": 0, task.Delivered: 2, task.TokenInvalid: 1, task.Failed: 1, task.Cancelled: 1,
			task.Expired: 0, task.ThrottleFull: 0, task.Collapsed: 0, task.OptedOut: 0}
		want := RecipientsPage{ID: id, App: all.App, State: jobCancelled, Recipients: 5, Retired: true, Counts: counts,
			Items: []RecipientState{{Index: 2, State: task.Failed, Reason: "permanent provider failure (BadTopic): apns: 400 BadTopic"}}}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("retired page, failed (-want +got):\n%s", diff)
		}
		// Every recipient's final state, from the exceptions the job
		// keeps: delivered unless one says otherwise; no devices.
		p, err = e.client.Recipients(ctx, id, RecipientsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		want.Items = []RecipientState{
			{Index: 0, State: task.Delivered},
			{Index: 1, State: task.TokenInvalid},
			{Index: 2, State: task.Failed, Reason: "permanent provider failure (BadTopic): apns: 400 BadTopic"},
			{Index: 3, State: task.Cancelled},
			{Index: 4, State: task.Delivered},
		}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("retired page (-want +got):\n%s", diff)
		}
		// The exceptions expire with the job's done entry; a job that
		// reached everyone keeps none.
		if ttl := e.rdb.PTTL(ctx, store.ExceptKey(id)).Val(); ttl <= 0 {
			t.Errorf("exceptions of the retired job: TTL %s, want one", ttl)
		}
		if n := e.rdb.Exists(ctx, store.ExceptKey("rcp-first")).Val(); n != 0 {
			t.Errorf("a job delivered to everyone keeps %d exceptions key, want none", n)
		}
		first, err := e.client.Recipients(ctx, "rcp-first", RecipientsQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Items) != 1 || first.Items[0].State != task.Delivered || !first.Retired {
			t.Errorf("the delivered job's page: %+v, want its one recipient delivered", first)
		}
	})
}

// TestRecipientsQueryProblems: a bad state, limit or cursor is a
// *QueryError naming it; an unknown job wraps ErrNotFound.
func TestRecipientsQueryProblems(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		q     RecipientsQuery
		field string
	}{
		{"unknown state", RecipientsQuery{State: "lost"}, "state"},
		{"limit too big", RecipientsQuery{Limit: MaxRecipientsLimit + 1}, "limit"},
		{"negative limit", RecipientsQuery{Limit: -1}, "limit"},
		{"cursor not a number", RecipientsQuery{Cursor: "abc"}, "cursor"},
		{"negative cursor", RecipientsQuery{Cursor: "-1"}, "cursor"},
		{"cursor with a sign", RecipientsQuery{Cursor: "+5"}, "cursor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.client.Recipients(ctx, "no-such-job", tc.q)
			qe, ok := errors.AsType[*QueryError](err)
			if !ok || qe.Field != tc.field {
				t.Errorf("error %v, want a QueryError naming %s", err, tc.field)
			}
		})
	}
	if _, err := e.client.Recipients(ctx, "no-such-job", RecipientsQuery{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown job: %v, want ErrNotFound", err)
	}
}

// countingHook counts the round trips and commands a client sends.
type countingHook struct{ trips, cmds int }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.trips++
		h.cmds++
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.trips++
		h.cmds += len(cmds)
		return next(ctx, cmds)
	}
}

// TestRecipientsPageCost: a page of a job of 100,000 recipients reads its
// page alone, in one round trip of a fixed number of commands.
func TestRecipientsPageCost(t *testing.T) {
	e := newEnv(t, envOptions{noRun: true})
	ctx := context.Background()
	const id = "big"
	if err := e.rdb.HSet(ctx, store.JobKey(id), "queue", "normal", "state", store.JobFannedOut, "recipients", 100000, "h:50999", "held-normal wait:big/509/1796301542").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.rdb.HSet(ctx, store.RecpKey(id), "50000", task.Delivered, "49999", task.Failed, "51000", task.Failed).Err(); err != nil {
		t.Fatal(err)
	}
	h := &countingHook{}
	e.rdb.AddHook(h)
	// The first read may open a connection, whose handshake is counted.
	if _, err := e.client.Recipients(ctx, id, RecipientsQuery{}); err != nil {
		t.Fatal(err)
	}
	*h = countingHook{}
	p, err := e.client.Recipients(ctx, id, RecipientsQuery{Cursor: "50000", Limit: MaxRecipientsLimit})
	if err != nil {
		t.Fatal(err)
	}
	// MULTI, the record's HMGET, the states', the devices' and the
	// exceptions', the exceptions' HLEN, the done buckets' HGETs, EXEC.
	if want := 2 + 5 + store.DoneLookups; h.trips != 1 || h.cmds != want {
		t.Errorf("a page: %d round trips, %d commands; want 1, %d", h.trips, h.cmds, want)
	}
	if len(p.Items) != 1000 || p.Items[0].State != task.Delivered || p.Items[999].State != RecipientHeld || p.Items[1].State != RecipientPending || p.Next != "51000" {
		t.Errorf("page from 50000: %d items, first %s, second %s, last %s, next %q", len(p.Items), p.Items[0].State, p.Items[1].State, p.Items[999].State, p.Next)
	}
}

// TestExceptionsMemory: what a finished job keeps for its recipients that
// ended other than delivered (store.ExceptKey), per such recipient, small (in
// Redis's compact encoding) and large; its delivered recipients cost
// nothing. The figures are docs/performance.md's.
func TestExceptionsMemory(t *testing.T) {
	testkit.Slow(t, "sends to 2,200 devices to measure what their exceptions keep")
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	for _, n := range []int{100, 1000} {
		id := fmt.Sprintf("exceptions-%d", n)
		var rs []payload.Recipient
		for i := range 2 * n {
			tok := apnsToken(fmt.Sprintf("%s-%d", id, i))
			if i%2 == 0 {
				e.apns.Script(tok, fake.Unregistered())
			}
			rs = append(rs, apnsRecipient(fmt.Sprintf("u-%d", i), tok))
		}
		st := e.waitDone(e.submit(alertJob(id, "x", rs...)), 60*time.Second)
		if st.Counts[task.TokenInvalid] != n || st.Counts[task.Delivered] != n {
			t.Fatalf("job %s: %v, want %d token_invalid and %d delivered", id, st.Counts, n, n)
		}
		b, err := e.rdb.MemoryUsage(ctx, store.ExceptKey(id), 0).Result()
		if err != nil {
			t.Fatal(err)
		}
		if kept := e.rdb.HLen(ctx, store.ExceptKey(id)).Val(); kept != int64(n) {
			t.Errorf("job %s keeps %d exceptions, want %d", id, kept, n)
		}
		per := float64(b) / float64(n)
		t.Logf("%d of %d recipients token_invalid: %d B kept, %.1f B per exception", n, 2*n, b, per)
		if per > 100 {
			t.Errorf("%.1f B per exception, want at most 100", per)
		}
	}
}
