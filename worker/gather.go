package worker

import (
	"context"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/groupcommit"
)

// Jobs submitted one by one (Enqueue, POST /v1/notifications) while an
// earlier submission of the same Client is being written are gathered and
// written together, as one batch (EnqueueBatch's way): a serial group
// commit (worker/internal/groupcommit). The first waiting job is written at
// once, so a lone submission costs what it always did, and under load the
// jobs arriving during one write share the next, which costs Redis one
// Asynq task and a few round trips for all of them instead of one task and
// three round trips each. A write that follows another first waits, up to
// gatherLinger, for the callers the write before it answered to come back:
// without it a caller answered by one write missed the next, which had
// started meanwhile, and jobs from 16 goroutines went in smaller batches.
// Each caller still gets its own job's answer, and only once the job is
// written.
//
// One write is under way per Client at a time, taking up to MaxBatch
// waiting jobs; a caller whose context ends while it waits gets the
// context's error, and its job may still be written (submitting it again
// with the same id is safe, as after any error). A write that fails or
// panics is the error of each of its jobs.

// gatherTimeout bounds one gathered write: it runs for every caller waiting
// on it, under none of their contexts.
const gatherTimeout = 30 * time.Second

// gatherLinger is the longest a write after a Client's first waits for
// the callers the write before it answered.
const gatherLinger = 250 * time.Microsecond

// newGathering returns the group commit of a Client's submissions.
func (c *Client) newGathering(linger time.Duration) *groupcommit.Group[payload.Job, BatchResult] {
	return groupcommit.New(c.writeJobs, groupcommit.Options{Serial: true, Linger: linger, MaxSize: MaxBatch, Timeout: gatherTimeout})
}

// gather writes job (prepared, due) together with the jobs submitted
// meanwhile and returns its answer.
func (c *Client) gather(ctx context.Context, job payload.Job) (Accepted, error) {
	r, err := c.gathering.Do(ctx, job)
	if err != nil {
		return Accepted{}, err
	}
	return r.Accepted, r.Err
}

// writeJobs writes the waiting jobs and answers each.
func (c *Client) writeJobs(ctx context.Context, jobs []payload.Job) ([]BatchResult, error) {
	res := make([]BatchResult, len(jobs))
	if len(jobs) == 1 {
		// Alone: its own task, as Enqueue always did.
		res[0].Accepted, res[0].Err = c.enqueueOne(ctx, &jobs[0])
		return res, nil
	}
	prepared := make([]bool, len(jobs))
	for i := range prepared {
		prepared[i] = true
	}
	c.enqueuePrepared(ctx, jobs, prepared, res)
	return res, nil
}
