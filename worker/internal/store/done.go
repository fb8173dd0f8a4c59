package store

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker/internal/task"
)

// A finished job's records are retired: once the job is fanned out and
// every recipient has a final state, the script that saw it happen
// (retire.lua, called by record.lua and fanned.lua) deletes
// hush:job:{<id>}, :r and :dev and leaves one compact entry, its status in
// a few dozen bytes, in a shared "done" hash:
//
//	hush:done:{<tag>}:<width ms>:<bucket>   field <id> -> compact status
//
// On Redis Cluster <tag> is a short string on the same slot as the job's
// keys, so the entry is written and the live records deleted in one script,
// and every reader of a job's records can check both in one round trip on
// one node. On one server (or Sentinel), where any keys share a script,
// <tag> is the job's slot mod 256: fewer, fuller buckets, so the
// entries of a small deployment share keys too (a hash of up to 128 short
// entries is stored compactly, about 50 bytes an entry). <bucket> is the writer's Unix time divided by
// the bucket width, a quarter of the retention: a bucket key expires
// retention after its bucket ends, so an entry answers duplicates and
// status reads for between 1 and 1.25 times the retention after its job
// finished, and a reader looks in the last five buckets (and the next one,
// for clocks a little ahead). Thousands of entries share one key, so an
// entry costs what its id and status take in the hash, not a key's
// overhead. Changing the retention changes the width and so the keys:
// entries written before are then not found (documented with
// HUSH_JOB_RETENTION).
//
// Readers check the live record first and the done hash after it, in one
// pipeline on one node: retire.lua writes the entry before it deletes the
// records, so a job is never seen as neither.

// DoneLookups is how many buckets a reader looks in: the current one, the
// four before it and the next one.
const DoneLookups = 6

// DoneBuckets names a job's done-hash keys for one retention.
type DoneBuckets struct {
	Retention time.Duration
	// PerSlot: a bucket per Redis Cluster slot (the client is not a
	// *redis.Client); else DoneShards of them.
	PerSlot bool
}

// DoneShards is how many buckets per width a deployment on one server
// has.
const DoneShards = 256

func (b DoneBuckets) tag(id string) string {
	slot := KeySlot(JobKey(id))
	if b.PerSlot {
		return SlotTag(slot)
	}
	return strconv.Itoa(slot % DoneShards)
}

func (b DoneBuckets) width() int64 {
	return max(b.Retention.Milliseconds()/4, 1)
}

// Keys are the buckets a reader at now looks in, oldest first; the
// last-but-one is the one a writer at now writes to (Write).
func (b DoneBuckets) Keys(id string, now time.Time) []string {
	w := b.width()
	cur := now.UnixMilli() / w
	prefix := b.prefix(id, w)
	out := make([]string, 0, DoneLookups)
	for k := cur - 4; k <= cur+1; k++ {
		out = append(out, prefix+strconv.FormatInt(k, 10))
	}
	return out
}

// prefix is the part of id's bucket keys before the bucket's number.
func (b DoneBuckets) prefix(id string, width int64) string {
	return "hush:done:{" + b.tag(id) + "}:" + strconv.FormatInt(width, 10) + ":"
}

// Write is the bucket a writer at now adds to (Keys' last-but-one), and
// when that key expires (Unix ms): retention after the bucket ends.
func (b DoneBuckets) Write(id string, now time.Time) (key string, expireAt int64) {
	w := b.width()
	cur := now.UnixMilli() / w
	return b.prefix(id, w) + strconv.FormatInt(cur, 10), (cur+1)*w + b.Retention.Milliseconds()
}

// KeySlot is the Redis Cluster slot of key: CRC16 (XMODEM) mod 16384 of
// its hash tag, the part between its first "{" and the first "}" after
// it when that is not empty, else of the whole key. (A job id holding "}"
// ends its key's tag early; the done bucket follows the key's real slot.)
func KeySlot(key string) int {
	if open := strings.IndexByte(key, '{'); open >= 0 {
		if end := strings.IndexByte(key[open+1:], '}'); end > 0 {
			key = key[open+1 : open+1+end]
		}
	}
	return int(crc16(key) % 16384)
}

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

var slotTags = sync.OnceValue(func() []string {
	// The first string over [0-9a-zA-Z], shortest first, on each slot:
	// every slot has one of at most 3 characters (checked by a test).
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	tags := make([]string, 16384)
	left := len(tags)
	for n := 1; left > 0; n++ {
		b := make([]byte, 0, 4)
		for k := n; k > 0; k /= len(alphabet) + 1 {
			if k%(len(alphabet)+1) == 0 {
				b = b[:0] // a digit 0 would make a string twice; skip it
				break
			}
			b = append(b, alphabet[k%(len(alphabet)+1)-1])
		}
		if len(b) == 0 {
			continue
		}
		if slot := int(crc16(string(b)) % 16384); tags[slot] == "" {
			tags[slot] = string(b)
			left--
		}
	}
	return tags
})

// SlotTag is a short hash tag on Redis Cluster slot slot.
func SlotTag(slot int) string { return slotTags()[slot] }

// CompactStatus is a retired job's status from its done-hash entry, as
// retire.lua writes it: queue|accepted_at|recipients|deadline|cancelled_at|
// deferrals|counts[|app], instants in Unix ms ("" for none), counts in
// FinalStates order, trailing zeros left out; the queue is followed by "@"
// and a task tag when a batch task owned the job (the worker's finishedBy). The app is
// left out when the record had none.
func CompactStatus(id, v string) (wire.JobStatus, error) {
	f := strings.Split(v, "|")
	if len(f) != 7 && len(f) != 8 {
		return wire.JobStatus{}, fmt.Errorf("job %s: unreadable finished record %q", id, v)
	}
	queue, _, _ := strings.Cut(f[0], "@")
	st := wire.JobStatus{ID: id, State: wire.StateDone, Queue: queue, Counts: map[string]int{"pending": 0}}
	if len(f) == 8 {
		st.App = f[7]
	}
	st.AcceptedAt = MsTime(f[1])
	st.Recipients, _ = strconv.Atoi(f[2])
	st.Deadline = MsTime(f[3])
	st.CancelledAt = MsTime(f[4])
	if !st.CancelledAt.IsZero() {
		st.State = wire.StateCancelled
	}
	st.Deferrals, _ = strconv.Atoi(f[5])
	counts := strings.Split(f[6], ",")
	for i, s := range task.FinalStates() {
		st.Counts[s] = 0
		if i < len(counts) {
			st.Counts[s], _ = strconv.Atoi(counts[i])
		}
	}
	st.Outcome = JobOutcome(st.Recipients, st.Counts)
	return st, nil
}

// MsTime is an instant the scripts write in Unix ms, zero for none.
func MsTime(s string) time.Time {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// JobOutcome is the Outcome of a job with recipients and counts (per
// final state, and "pending"): empty while a recipient is pending.
func JobOutcome(recipients int, counts map[string]int) string {
	delivered := counts[task.Delivered]
	switch {
	case counts["pending"] > 0:
		return ""
	case delivered >= recipients && recipients > 0:
		return wire.OutcomeDelivered
	case delivered > 0:
		return wire.OutcomePartlyDelivered
	}
	return wire.OutcomeUndelivered
}
