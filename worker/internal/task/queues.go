package task

import (
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/hushpush/hush/payload"
)

// Delivery shards spread the tasks a job creates over several Asynq queues
// per priority, so that on Redis Cluster (where Asynq keeps each queue
// under one hash tag, asynq:{<queue>}:..., on one node) no single queue's
// node carries every submission or delivery. With S shards
// (HUSH_DELIVERY_SHARDS), a priority p has the queues p (everything when S
// is 1; jobs a Client without WithShards submits) and p.0 to p.<S-1>: a
// hush:delivery task goes to p.<fnv32a(user id) mod S>, a hush:job, chunk
// or hush:held task to p.<fnv32a(task id) mod S> (a hush:held task to the
// held queue beside it, held-p.<k>). All of them are plain Asynq queues
// that asynqmon and the asynq CLI list.

// MaxShards bounds the shards per priority: every shard is a queue each
// worker polls.
const MaxShards = 64

// ShardQueue is the queue of priority queue base for key: base itself with
// one shard.
func ShardQueue(base, key string, shards int) string {
	if shards <= 1 {
		return base
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return base + "." + strconv.Itoa(int(h.Sum32()%uint32(shards)))
}

// ShardOf parses a shard queue name "<priority>.<k>": its priority and
// shard number.
func ShardOf(queue string) (base string, k int, ok bool) {
	base, num, found := strings.Cut(queue, ".")
	if !found {
		return "", 0, false
	}
	if p := payload.Priority(base); p == "" || !p.Valid() {
		return "", 0, false
	}
	k, err := strconv.Atoi(num)
	if err != nil || k < 0 || strconv.Itoa(k) != num {
		return "", 0, false
	}
	return base, k, true
}

// ServedQueues is every queue a worker serves: each priority queue of
// weights and, with more than one shard, its shard queues 0..shards-1 with
// the priority's weight (so priorities keep their proportions). existing
// are the queues Redis already knows: shard queues of a served priority
// beyond shards (left by a deployment that had more shards) are served too,
// so that lowering HUSH_DELIVERY_SHARDS strands nothing.
func ServedQueues(weights map[string]int, shards int, existing []string) map[string]int {
	out := maps.Clone(weights)
	if shards > 1 {
		for base, wt := range weights {
			for k := range shards {
				out[base+"."+strconv.Itoa(k)] = wt
			}
		}
	}
	for _, q := range existing {
		if base, _, ok := ShardOf(q); ok {
			if wt, served := weights[base]; served {
				out[q] = wt
			}
		}
	}
	return out
}

// HeldQueuePrefix names the queues of held tasks: held-<queue> beside each
// served queue <queue>, with its weight. A second Asynq server serves
// them, with slots of its own: a held task waits in its handler for its
// recipients' slots, and in the delivery queues it would keep a delivery
// slot while it waits.
const HeldQueuePrefix = "held-"

// HeldQueueOf is the held queue beside queue q.
func HeldQueueOf(q string) string { return HeldQueuePrefix + q }

// TogetherSuffix ends the queue in a marker naming a hush:waiting-jobs
// group that waits for its second's task.
const TogetherSuffix = "#together"

// JoinedQueue is the held queue of a marker's queue that names a group
// waiting for its second's task, and whether it does.
func JoinedQueue(marked string) (string, bool) {
	return strings.CutSuffix(marked, TogetherSuffix)
}

// ServedHeldQueues is every held queue a worker serves: the held queue of
// each queue ServedQueues gives, and those left by a deployment with more
// shards; and, with its held queue's weight, each marked queue of a served
// held queue that exists (a process without seconds' tasks put a group's
// task there).
func ServedHeldQueues(weights map[string]int, shards int, existing []string) map[string]int {
	var left []string
	for _, q := range existing {
		if rest, ok := strings.CutPrefix(q, HeldQueuePrefix); ok {
			left = append(left, strings.TrimSuffix(rest, TogetherSuffix))
		}
	}
	out := map[string]int{}
	for q, wt := range ServedQueues(weights, shards, left) {
		out[HeldQueueOf(q)] = wt
	}
	for _, q := range existing {
		if held, marked := JoinedQueue(q); marked && out[held] > 0 {
			out[q] = out[held]
		}
	}
	return out
}

// SortedQueues lists queue names in order, for logs and metrics.
func SortedQueues(queues map[string]int) []string { return slices.Sorted(maps.Keys(queues)) }
