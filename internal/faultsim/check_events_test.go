package faultsim

import (
	"encoding/json"
	"testing"

	"github.com/hushpush/hush/worker"
)

// recipientState is the final state a recipient event reports (docs/events.md,
// "Types"): delivered and failed by their type, the rest by a dropped
// event's reason; "" for a device's event (token_invalid).
func recipientState(e worker.Event) string {
	switch e.Type {
	case worker.EventDelivered, worker.EventFailed:
		return e.Type
	case worker.EventDropped:
		return e.Reason
	}
	return ""
}

// checkEvents: every recipient's final state has its event, and no event
// reports a final state the job's status does not hold (docs/events.md:
// an event for every final outcome, at least once, never lost). For each
// finished job, the recipient events of each state (distinct ids: an event
// written twice has one) number what its status counts; token_invalid is
// reported per device and left out.
func checkEvents(h *history) []failure {
	got := map[string]map[string]int{} // job -> state -> events
	for _, body := range h.events {
		var e worker.Event
		if json.Unmarshal([]byte(body), &e) != nil {
			continue
		}
		if s := recipientState(e); s != "" {
			if got[e.Job] == nil {
				got[e.Job] = map[string]int{}
			}
			got[e.Job][s]++
		}
	}
	var out []failure
	for _, id := range sortedKeys(h.status) {
		st := h.status[id]
		if !final(st) {
			continue // never-lost reports it
		}
		for _, s := range finalStates {
			if s == "token_invalid" {
				continue
			}
			if n, e := st.Counts[s], got[id][s]; n != e {
				out = append(out, fail("events", nil, "job %s: %d recipients ended %s, hush:events reports %d", id, n, s, e))
			}
		}
	}
	return out
}

func TestCheckEvents(t *testing.T) {
	ev := func(id, typ, reason string) string {
		b, _ := json.Marshal(worker.Event{ID: id, Type: typ, Reason: reason, Job: "j"})
		return string(b)
	}
	status := func(delivered, cancelled, tokenInvalid int) map[string]worker.JobStatus {
		return map[string]worker.JobStatus{"j": {Recipients: delivered + cancelled + tokenInvalid,
			Counts: map[string]int{"delivered": delivered, "cancelled": cancelled, "token_invalid": tokenInvalid, "pending": 0}}}
	}
	for _, tt := range []struct {
		name   string
		events map[string]string
		status map[string]worker.JobStatus
		want   int
	}{
		{"each reported", map[string]string{"a": ev("a", "delivered", ""), "b": ev("b", "dropped", "cancelled")}, status(1, 1, 0), 0},
		{"a device's event is not a recipient's", map[string]string{"a": ev("a", "delivered", ""), "t": ev("t", "token_invalid", "Unregistered")}, status(1, 0, 1), 0},
		{"one missing", map[string]string{"a": ev("a", "delivered", "")}, status(1, 1, 0), 1},
		{"one forged", map[string]string{"a": ev("a", "delivered", ""), "b": ev("b", "dropped", "cancelled"), "c": ev("c", "failed", "BadTopic")}, status(1, 1, 0), 1},
		{"the wrong reason", map[string]string{"a": ev("a", "delivered", ""), "b": ev("b", "dropped", "expired")}, status(1, 1, 0), 2},
		{"an unfinished job is never-lost's", map[string]string{}, map[string]worker.JobStatus{"j": {Recipients: 1, Counts: map[string]int{"pending": 1}}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := checkEvents(&history{events: tt.events, status: tt.status})
			if len(got) != tt.want {
				t.Errorf("%d failures %v, want %d", len(got), got, tt.want)
			}
		})
	}
}
