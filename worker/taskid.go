package worker

import (
	"strconv"
	"strings"
)

// Task ids and limiter members. A job id is any string a client chooses
// (up to 256 bytes, "/" and ":" included), so every id hush derives from it
// must be one no other job id can produce:
//
//   - task ids start with a kind ("job:", "chunk:", "delivery:", "batch:",
//     "held:" (held.go))
//     that a task id of another kind cannot start with, and the job id is
//     followed only by "/" and decimal numbers, so the last "/" splits it
//     off unambiguously (a batch's id is hush's own);
//   - limiter members live in one user's sorted set: "<job>/<index>" for a
//     delivery's first attempt and "<job>/<index>#<attempt>" for a later
//     one. A first-attempt member ends in "/<digits>", a later one in
//     "#<digits>", and splitting at that last separator gives the job, the
//     index and the attempt back, so no two deliveries share a member.
//
// Task ids without a kind, which earlier builds made, still run
// (legacy.go).

// jobTaskID is the Asynq task id of a submitted job.
func jobTaskID(job string) string { return "job:" + job }

// batchTaskID is the Asynq task id of a batch (its id is hush's, never a
// client's).
func batchTaskID(id string) string { return "batch:" + id }

// chunkTaskID is the Asynq task id of chunk k of a job.
func chunkTaskID(job string, k int) string { return "chunk:" + job + "/" + strconv.Itoa(k) }

// deliveryTaskID is the Asynq task id of a job's recipient index.
func deliveryTaskID(job string, index int) string {
	return "delivery:" + job + "/" + strconv.Itoa(index)
}

// memberOf is the limiter member of a delivery's attempt: the first
// attempt books "<job>/<index>", attempt k > 0 "<job>/<index>#<k>", each a
// slot of its own.
func memberOf(job string, index, attempt int) string {
	m := job + "/" + strconv.Itoa(index)
	if attempt > 0 {
		m += "#" + strconv.Itoa(attempt)
	}
	return m
}

// parseMember splits a limiter member made by memberOf into its job,
// recipient index and attempt.
func parseMember(m string) (job string, index, attempt int, ok bool) {
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
