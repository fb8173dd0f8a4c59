package worker

import (
	"context"

	"github.com/hibiken/asynq"
)

// Legacy forms: every task type, task id, queue and job record field form
// that only processes of earlier builds make, which this worker still
// accepts so that a rolling upgrade from those builds (CHANGELOG.md,
// "Upgrading") loses no push. Each entry says what makes it, what this
// worker does with it, and when it can go: the condition an operator can
// check, after which the entry and the code it names are deleted.
//
// The checks use the asynq CLI (asynqmon shows the same): `asynq queue ls`
// lists the queues; `asynq task ls --queue <q> --state <s>`, for each
// state (active, pending, scheduled, retry, archived), lists a queue's
// tasks with their ids and types. The worker's "worker running" log line
// names the queues and held queues it serves.
//
// Task types, each run by the handler legacyTasks gives it:
//
//   - hush:marked-chunk (typeMarkedChunk). Made by a job's first run, for
//     its chunks after the first, on builds with marked chunk tasks but
//     without held tasks (CHANGELOG.md#marked-chunk-tasks). Run as a chunk
//     (chunkTask): it marks its runs and its first run reads nothing, as a
//     hush:grouping-chunk task does, but it never holds recipients back
//     into hush:held tasks (its deferred recipients go to their own
//     hush:delivery tasks), since a process of such a build may run it
//     again without reading held markers (TestEarlierChunkTasksStillRun,
//     TestEarlierChunkTasksDoNotHoldBack). Goes once no process of a build
//     without held tasks (CHANGELOG.md#held-tasks) runs and no task of the
//     type is left in any delivery queue, in any state; with it go
//     typeMarkedChunk and its case in chunkTask.
//
//   - hush:chunk (typeChunk). Made for a job's chunks after the first by
//     builds without marked chunk tasks, and by a job task's re-run on any
//     build without held tasks (CHANGELOG.md#marked-chunk-tasks). Run as a
//     chunk that reads its states on every run and, like hush:marked-chunk,
//     never holds recipients back into hush:held tasks. Goes under the
//     same condition, for hush:chunk tasks; with it go typeChunk and its
//     case in chunkTask (chunk.lua's read on every run stays: a
//     hush:rereading-chunk task reads so too).
//
//   - hush:held (TypeHeld) in a delivery queue, task id
//     "held:<job>/<k>/<wake>". Made by chunk runs on builds with held tasks
//     but without held queues (CHANGELOG.md#held-queues), and, under the
//     same id and in the same delivery queue, by this worker's re-run of a
//     chunk or job task whose held markers name such a task (held.go:
//     heldGroups.again, TestReRunKeepsHeldTasksWhereMarked). Run by the
//     delivery server as the held server runs a "wait:" one. Goes once no
//     process of a build without held queues runs, no hush:held task is
//     left in a delivery queue (one not named held-*), and no job record
//     can still name one: task.RecordTTL (longer for a job whose deadline is
//     later, task.TTLFor) after the last such process stopped. With it go the
//     "held:" form in task.HeldID and task.ParseHeldID, and the delivery
//     queue of a held task that does not wait (chunk.Waits false) in
//     heldQueue.
//
// Task ids:
//
//   - "<job>" (hush:job), "<job>/<index>" (hush:delivery) and "<job>/c<k>"
//     (a chunk): task ids without a kind (task.JobID), made by builds whose
//     ids had no kind prefix, before CHANGELOG.md began. Handlers read
//     payloads, never task ids, so such a task runs as any of its type;
//     no code of its own. The entry goes once no task id in any queue
//     lacks a kind ("job:", "batch:", "chunk:", "delivery:", "wait:",
//     "held:", "jobs:", "second:").
//
// Queues:
//
//   - "held-<queue>#together" (task.TogetherSuffix). Made by a re-run of a
//     hush:batch or hush:job task by a process without seconds' tasks
//     (CHANGELOG.md#seconds-tasks) whose jobs' held markers name a group
//     waiting for its second: that process creates the group's own
//     hush:waiting-jobs task in the marker's queue, suffix included. Run
//     serves each such queue it finds at its start (task.ServedHeldQueues,
//     task.ServedHeldQueues), and a hush:waiting-jobs task there adds its group to its
//     second (waitingJobsTask, TestReRunWithoutSecondsTasksRunsItsGroups); a
//     task made there after every process started waits for the next
//     start of one. Goes once no process without seconds' tasks runs and
//     no such queue holds a task (`asynq queue ls` lists none, or each is
//     empty and removed with `asynq queue rm`; the "worker running" line's
//     held_queues names none). With it go the marked queues in
//     task.ServedHeldQueues and the queue check in waitingJobsTask; the suffix in
//     held markers stays, since it tells this worker's re-runs and
//     cancellations a group waiting for its second from one with a task
//     of its own.
//
// Job record fields:
//
//   - A held marker "held-<queue> jobs:<scope>/<token>/<wake>" without
//     task.TogetherSuffix: a hush:waiting-jobs group with a task of its own,
//     written by batch and job runs on builds with hush:waiting-jobs tasks
//     but without seconds' tasks (CHANGELOG.md#seconds-tasks). A re-run
//     creates that task again (waitingJobsGroups.enqueue, a queue that
//     task.JoinedQueue does not mark); a cancellation runs it by its id
//     (Client.wakeHeld does so for hush:held tasks too). Goes once no
//     process without seconds' tasks runs and task.RecordTTL (task.TTLFor) has
//     passed since the last one stopped; with it goes that branch of
//     waitingJobsGroups.enqueue.
//
//   - Final states counted without a range: a record whose final states a
//     build without ranged record calls wrote has none of record.lua's
//     'ranged' and 'f:<range>' counts for them. record.lua then finds the
//     range not fresh and reads the states, as it does after any call
//     without a range: no code of its own. The mention in
//     record.lua goes task.RecordTTL after the last such build stopped.
//
//   - A finished job's done entry without a batch task's tag, written for
//     a batch's job by builds before tagged entries
//     (CHANGELOG.md#tagged-finished-jobs). Read as a lone job's entry,
//     which has no tag either (finishedBy): no code of its own. The
//     mention in finishedBy goes 1.25 times HUSH_JOB_RETENTION (worker/internal/store/done.go)
//     after the last such build stopped.

// Task types only earlier builds make (see above); they wait in delivery
// queues only.
const (
	typeMarkedChunk = "hush:marked-chunk"
	typeChunk       = "hush:chunk"
)

// legacyTask is a task type only earlier builds make, and its handler.
type legacyTask struct {
	typ    string
	handle func(w *Worker, ctx context.Context, t *asynq.Task) error
}

// legacyTasks are the task types Run serves on the delivery server for
// earlier builds only; removing one is deleting its entry and what its
// note above names.
func legacyTasks() []legacyTask {
	return []legacyTask{
		{typeMarkedChunk, (*Worker).handleChunk},
		{typeChunk, (*Worker).handleChunk},
		// "held:" tasks of processes without held queues, in the delivery
		// queues; the held server runs hush:held tasks for this build.
		{TypeHeld, (*Worker).handleChunk},
	}
}
