package store

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/worker/internal/task"
)

// TestDoneBucketWriteIsTheReadersLastButOne: a writer at now adds to the
// bucket readers at now look in last but one, and it expires a retention
// after that bucket ends; whatever the retention, id and layout.
func TestDoneBucketWriteIsTheReadersLastButOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, retention := range []time.Duration{time.Millisecond, time.Minute, 24 * time.Hour, 30 * 24 * time.Hour} {
		for _, perSlot := range []bool{false, true} {
			b := DoneBuckets{Retention: retention, PerSlot: perSlot}
			for _, id := range []string{"a", "}x", "job/1", "{t}:9", strconv.Itoa(rng.IntN(1e9))} {
				now := time.UnixMilli(rng.Int64N(4e12))
				key, at := b.Write(id, now)
				keys := b.Keys(id, now)
				w := b.width()
				if want := (now.UnixMilli()/w+1)*w + retention.Milliseconds(); key != keys[4] || at != want {
					t.Errorf("retention %s, per slot %t, id %q at %d: write gave %s expiring at %d, want %s expiring at %d",
						retention, perSlot, id, now.UnixMilli(), key, at, keys[4], want)
				}
			}
		}
	}
}

// TestRetireCountsInFinalStatesOrder: retire.lua, as the scripts run it,
// reads the fixed fields, then the counters in FinalStates' order (which
// CompactStatus reads them back in), then the owning task and the app; final_index
// (record.lua's in-memory count of what it is about to write) places each
// state where that read has it.
func TestRetireCountsInFinalStatesOrder(t *testing.T) {
	rdb := redistest.Client(t)
	probe := RetireScriptSrc + `
local index = {}
for i, s in ipairs(final_states) do
  index[i] = final_index[s]
end
return {retire_fields, index, FIRST_FINAL, LAST_FINAL, TASK}`
	v, err := rdb.Eval(t.Context(), probe, nil).Slice()
	if err != nil {
		t.Fatal(err)
	}
	strs := func(x any) (out []string) {
		for _, e := range x.([]any) {
			out = append(out, e.(string))
		}
		return out
	}
	ints := func(x any) (out []int64) {
		for _, e := range x.([]any) {
			out = append(out, e.(int64))
		}
		return out
	}
	n := int64(len(task.FinalStates()))
	wantFields := append(append([]string{"state", "recipients", "queue", "accepted_at", "deadline", "cancelled_at", "deferrals"}, task.FinalStates()...), "task", "app")
	if diff := cmp.Diff(wantFields, strs(v[0])); diff != "" {
		t.Errorf("retire_fields (-want +got):\n%s", diff)
	}
	var wantIndex []int64
	for i := range n {
		wantIndex = append(wantIndex, 8+i) // after state .. deferrals, 1-based
	}
	if diff := cmp.Diff(wantIndex, ints(v[1])); diff != "" {
		t.Errorf("final_index of FinalStates in order (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{8, 7 + n, 8 + n}, []int64{v[2].(int64), v[3].(int64), v[4].(int64)}); diff != "" {
		t.Errorf("FIRST_FINAL, LAST_FINAL, TASK (-want +got):\n%s", diff)
	}
}

// TestSlotTags: KeySlot is Redis Cluster's CRC16, and every slot has a
// tag of at most 3 characters on it.
func TestSlotTags(t *testing.T) {
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16 = %#x, want 0x31c3 (CRC16/XMODEM)", got)
	}
	for slot := range 16384 {
		if tag := SlotTag(slot); tag == "" || len(tag) > 3 || KeySlot("{"+tag+"}") != slot {
			t.Fatalf("slot %d has tag %q", slot, tag)
		}
	}
}
