package task

import (
	"strconv"
	"strings"
)

// Task ids and limiter members. A job id is any string a client chooses
// (up to 256 bytes, "/" and ":" included), so every id derived from it
// must be one no other job id can produce:
//
//   - task ids start with a kind ("job:", "batch:", "chunk:",
//     "delivery:", "wait:", "held:", "jobs:", "second:") that an id of
//     another kind cannot start with, and the job id is followed only by
//     "/" and decimal numbers, so the last "/" splits it off (a batch's id
//     is hush's own);
//   - limiter members live in one user's sorted set: "<job>/<index>" for a
//     delivery's first attempt, "<job>/<index>#<attempt>" for a later
//     one, so splitting at the last separator gives them back and no two
//     deliveries share a member.

// JobID is the task id of a submitted job.
func JobID(job string) string { return "job:" + job }

// BatchID is the task id of a batch (its id is hush's, never a client's).
func BatchID(id string) string { return "batch:" + id }

// ChunkID is the task id of chunk k of a job.
func ChunkID(job string, k int) string { return "chunk:" + job + "/" + strconv.Itoa(k) }

// DeliveryID is the task id of a job's recipient index.
func DeliveryID(job string, index int) string {
	return "delivery:" + job + "/" + strconv.Itoa(index)
}

// Member is the limiter member of a delivery's attempt: the first attempt
// books "<job>/<index>", attempt k > 0 "<job>/<index>#<k>", each a slot of
// its own.
func Member(job string, index, attempt int) string {
	m := job + "/" + strconv.Itoa(index)
	if attempt > 0 {
		m += "#" + strconv.Itoa(attempt)
	}
	return m
}

// ParseMember splits a Member into its job, recipient index and attempt.
func ParseMember(m string) (job string, index, attempt int, ok bool) {
	if i := strings.LastIndexByte(m, '#'); i >= 0 && !strings.Contains(m[i+1:], "/") {
		a, err := strconv.Atoi(m[i+1:])
		if err != nil || a <= 0 || strconv.Itoa(a) != m[i+1:] {
			return "", 0, 0, false
		}
		attempt, m = a, m[:i]
	}
	i := strings.LastIndexByte(m, '/')
	if i < 0 {
		return "", 0, 0, false
	}
	index, err := strconv.Atoi(m[i+1:])
	if err != nil || index < 0 || strconv.Itoa(index) != m[i+1:] {
		return "", 0, 0, false
	}
	return m[:i], index, attempt, true
}

// HeldID is the task id of the recipients of chunk k of a job held back to
// wake at Unix second wake: "wait:<job>/<k>/<wake>" for a held task in a
// held queue (waits), "held:<job>/<k>/<wake>" for one an earlier build put
// in a delivery queue.
//
// Asynq keeps an id unique within its queue only, so an id must never be
// enqueued in two queues: two tasks of one id would both own its
// recipients. A run that creates a held task again creates it in the
// queue its marker names, under the id the marker names. The two
// prefixes keep processes with and without held queues apart: one
// without reads "held:" ids only.
func HeldID(job string, k int, wake int64, waits bool) string {
	prefix := "held:"
	if waits {
		prefix = "wait:"
	}
	return prefix + job + "/" + strconv.Itoa(k) + "/" + strconv.FormatInt(wake, 10)
}

// ParseHeldID splits a HeldID into the job, its chunk number k, its
// second of waking and whether it waits in a held queue.
func ParseHeldID(id string) (job string, k int, wake int64, waits, ok bool) {
	rest, found := strings.CutPrefix(id, "held:")
	if !found {
		rest, waits = strings.CutPrefix(id, "wait:")
	}
	i := strings.LastIndexByte(rest, '/')
	if !found && !waits || i < 0 {
		return "", 0, 0, false, false
	}
	wake, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil || wake <= 0 {
		return "", 0, 0, false, false
	}
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '/')
	if j < 0 {
		return "", 0, 0, false, false
	}
	k, err = strconv.Atoi(rest[j+1:])
	if err != nil || k < 0 {
		return "", 0, 0, false, false
	}
	return rest[:j], k, wake, waits, true
}

// WaitingJobsPrefix starts a hush:waiting-jobs task's id. No other task id
// starts with it (ParseHeldID refuses it), so a marker naming one is
// never taken for a hush:held task's.
const WaitingJobsPrefix = "jobs:"

// WaitingJobsID is the id of the hush:waiting-jobs task that holds jobs
// of the task scope deferred by one of its runs (token) to wake at Unix
// second wake: "jobs:<scope>/<token>/<wake>". scope may hold "/"; token
// and wake never do.
func WaitingJobsID(scope, token string, wake int64) string {
	return WaitingJobsPrefix + scope + "/" + token + "/" + strconv.FormatInt(wake, 10)
}

// ParseWaitingJobsID splits a WaitingJobsID.
func ParseWaitingJobsID(id string) (scope, token string, wake int64, ok bool) {
	rest, found := strings.CutPrefix(id, WaitingJobsPrefix)
	i := strings.LastIndexByte(rest, '/')
	if !found || i < 0 {
		return "", "", 0, false
	}
	wake, err := strconv.ParseInt(rest[i+1:], 10, 64)
	if err != nil || wake <= 0 {
		return "", "", 0, false
	}
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '/')
	if j <= 0 || j == len(rest)-1 {
		return "", "", 0, false
	}
	return rest[:j], rest[j+1:], wake, true
}

// WaitingSecondID is the id of the hush:waiting-second task of held queue
// q and Unix second wake.
func WaitingSecondID(q string, wake int64) string {
	return "second:" + q + "/" + strconv.FormatInt(wake, 10)
}

// HeldMark is a held recipient's marker in its job record: the queue its
// task waits on, then, when that task is a hush:held or hush:waiting-jobs
// one, a space and its id (queue names hold no space).
func HeldMark(queue, task string) string {
	if task == "" {
		return queue
	}
	return queue + " " + task
}

// ParseHeldMark splits a HeldMark into the queue and the task's id (""
// for the recipient's own delivery task).
func ParseHeldMark(v string) (queue, task string) {
	queue, task, _ = strings.Cut(v, " ")
	return queue, task
}
