package worker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hushpush/hush/payload"
)

// Jobs submitted one by one (Enqueue, POST /v1/notifications) while an
// earlier submission of the same Client is being written are gathered and
// written together, as one batch (EnqueueBatch's way): the first waiting
// job is written at once, so a lone submission costs what it always did,
// and under load the jobs arriving during one write share the next, which
// costs Redis one Asynq task and a few round trips for all of them
// instead of one task and three round trips each. Each caller still gets
// its own job's answer, and only once the job is written.
//
// One write is under way per Client at a time, taking up to MaxBatch
// waiting jobs; a caller whose context ends while it waits gets the
// context's error, and its job may still be written (submitting it again
// with the same id is safe, as after any error).

// gatherTimeout bounds one gathered write: it runs for every caller waiting
// on it, under none of their contexts.
const gatherTimeout = 30 * time.Second

// gathering is a Client's jobs waiting for the write under way.
type gathering struct {
	mu      sync.Mutex
	writing bool
	waiting []*gathered
}

// gathered is one waiting job and where its answer goes.
type gathered struct {
	job  payload.Job // prepared
	done chan BatchResult
}

// gather writes job (prepared, due) together with the jobs submitted
// meanwhile and returns its answer.
func (c *Client) gather(ctx context.Context, job payload.Job) (Accepted, error) {
	me := &gathered{job: job, done: make(chan BatchResult, 1)}
	g := &c.gathering
	g.mu.Lock()
	g.waiting = append(g.waiting, me)
	lead := !g.writing
	g.writing = true
	g.mu.Unlock()
	if lead {
		// This caller writes what waits now (its own job among it); what
		// arrives meanwhile is written by another goroutine after it.
		c.writeGathered()
		go func() {
			for c.writeGathered() {
			}
		}()
	}
	select {
	case r := <-me.done:
		return r.Accepted, r.Err
	case <-ctx.Done():
		return Accepted{}, ctx.Err()
	}
}

// writeGathered writes up to MaxBatch waiting jobs and answers them. It
// reports false, leaving the writing to the next caller, when nothing
// waited.
func (c *Client) writeGathered() bool {
	g := &c.gathering
	g.mu.Lock()
	n := min(len(g.waiting), MaxBatch)
	if n == 0 {
		g.writing = false
		g.mu.Unlock()
		return false
	}
	ws := g.waiting[:n:n]
	g.waiting = g.waiting[n:]
	g.mu.Unlock()

	res := c.writeJobs(ws)
	for i, w := range ws {
		w.done <- res[i]
	}
	return true
}

// writeJobs writes the waiting jobs ws and answers each. A panic is every
// job's error, so that no caller waits for an answer that never comes and
// the writing goes on.
func (c *Client) writeJobs(ws []*gathered) (res []BatchResult) {
	res = make([]BatchResult, len(ws))
	defer func() {
		if p := recover(); p != nil {
			for i := range res {
				res[i] = BatchResult{Err: fmt.Errorf("enqueue job %s: panic: %v", ws[i].job.ID, p)}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), gatherTimeout)
	defer cancel()
	if len(ws) == 1 {
		// Alone: its own task, as Enqueue always did.
		res[0].Accepted, res[0].Err = c.enqueueOne(ctx, &ws[0].job)
		return res
	}
	jobs := make([]payload.Job, len(ws))
	prepared := make([]bool, len(ws))
	for i, w := range ws {
		jobs[i], prepared[i] = w.job, true
	}
	c.enqueuePrepared(ctx, jobs, prepared, res)
	return res
}
