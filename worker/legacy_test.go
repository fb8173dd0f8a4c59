package worker

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/worker/internal/task"
)

// TestLegacyTasksAreServed: each task type reaches a handler registered
// for exactly that type on the servers that run it, and no handler on the
// other: the task types only earlier builds make (legacy.go) and
// hush:held (whose earlier builds' tasks wait in delivery queues) on the
// delivery server, the held types on the held server.
func TestLegacyTasksAreServed(t *testing.T) {
	mux, held := (&Worker{}).serveMuxes()
	servers := map[string]*asynq.ServeMux{"delivery": mux, "held": held}
	want := map[string][]string{
		TypeJob:                 {"delivery"},
		TypeBatch:               {"delivery"},
		TypeGroupingChunk:       {"delivery"},
		task.TypeRereadingChunk: {"delivery"},
		TypeDelivery:            {"delivery"},
		typeMarkedChunk:         {"delivery"},
		typeChunk:               {"delivery"},
		TypeHeld:                {"delivery", "held"},
		TypeWaitingJobs:         {"held"},
		TypeWaitingSecond:       {"held"},
	}
	for _, l := range legacyTasks() {
		if _, ok := want[l.typ]; !ok {
			t.Errorf("legacy task type %s is not in this test's table", l.typ)
		}
	}
	for typ, on := range want {
		t.Run(typ, func(t *testing.T) {
			var got []string
			for _, name := range []string{"delivery", "held"} {
				_, pattern := servers[name].Handler(asynq.NewTask(typ, nil))
				switch pattern {
				case typ:
					got = append(got, name)
				case "":
				default:
					t.Errorf("%s server runs %s as %s", name, typ, pattern)
				}
			}
			if diff := cmp.Diff(on, got); diff != "" {
				t.Errorf("servers running %s (-want +got):\n%s", typ, diff)
			}
		})
	}
}
