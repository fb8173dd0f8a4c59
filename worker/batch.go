package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// A batch is jobs submitted together (Client.EnqueueBatch, POST
// /v1/notifications:batch) and carried by one hush:batch task: one Asynq
// task lifecycle (enqueue, dequeue, done) for up to batchJobs jobs instead
// of one each.
//
// Each job in a batch is owned by that batch's task: the record's task
// field, written with its fixed fields (start.lua). Two batches carrying
// one id (a client that retries a batch whose answer it lost) can both
// exist; only the one whose task owns the record runs the job, so the job
// never runs twice side by side. Everything else about a job in a batch is
// a job's: its record, its id's duplicate detection, its chunk and
// delivery tasks, its status and cancellation.

// batchJobs is the most jobs one batch task carries, and batchBytes the
// most bytes of jobs (a job larger than that goes alone): a task is one
// Redis value, read whole by whichever worker takes it.
const (
	batchJobs  = 100
	batchBytes = 1 << 20
)

// batch is the payload of a hush:batch task.
type batch struct {
	ID   string        `json:"id"`
	Jobs []payload.Job `json:"jobs"`
}

// task is the batch's Asynq task id, which owns its jobs' records.
func (b *batch) task() string { return task.BatchID(b.ID) }

func (w *Worker) handleBatch(ctx context.Context, t *asynq.Task) error {
	return w.handle(ctx, t, w.batchTask)
}

// batchTask runs every job of the batch side by side, each as its own job
// task would (runJob). A re-run (a retry after one job's error, or a crash)
// runs them all again: a job already finished does nothing, one under way
// resumes, as a job task's re-run does.
func (w *Worker) batchTask(ctx context.Context, t *asynq.Task) error {
	var b batch
	if err := json.Unmarshal(t.Payload(), &b); err != nil {
		return fmt.Errorf("undecodable batch payload: %w: %w", err, asynq.SkipRetry)
	}
	if b.ID == "" || len(b.Jobs) == 0 || len(b.Jobs) > batchJobs {
		return fmt.Errorf("invalid batch payload (id %q, %d jobs): %w", b.ID, len(b.Jobs), asynq.SkipRetry)
	}
	errs := make([]error, len(b.Jobs))
	// The deferred recipients of its single-recipient jobs, held back in
	// hush:waiting-jobs tasks once every job is done (waitingjobs.go).
	hj := newHeldJobsGroups(b.task())
	var wg sync.WaitGroup
	// Single-recipient jobs of one app go in groups of up to w.wave: one
	// round trip starts them all and books their slots (singleJobs).
	type group struct {
		app *App
		at  []int
	}
	groups := map[string]*group{}
	flush := func(g *group) {
		at := g.at
		g.at = nil
		wg.Go(func() {
			jobs := make([]*payload.Job, len(at))
			for k, i := range at {
				jobs[k] = &b.Jobs[i]
			}
			for k, err := range w.singleJobs(ctx, g.app, jobs, b.task(), hj) {
				errs[at[k]] = err
			}
		})
	}
	for i := range b.Jobs {
		job := &b.Jobs[i]
		if job.ID == "" {
			w.log.Error("job without id in a batch skipped", "batch", b.ID, "index", i)
			continue
		}
		if app, pipe := w.singlePath(job); pipe != nil {
			g := groups[app.Name]
			if g == nil {
				g = &group{app: app}
				groups[app.Name] = g
			}
			if g.at = append(g.at, i); len(g.at) == w.wave {
				flush(g)
			}
			continue
		}
		wg.Go(func() { errs[i] = w.runJob(ctx, job, b.task(), hj) })
	}
	for _, g := range groups {
		if len(g.at) > 0 {
			flush(g)
		}
	}
	wg.Wait()
	herr := hj.finish(ctx, w, errs)
	for i, err := range errs {
		if errors.Is(err, asynq.SkipRetry) {
			// Final for this job alone: the others' errors decide whether
			// the batch runs again.
			w.log.Error("job of a batch failed", "batch", b.ID, "job", b.Jobs[i].ID, "err", err)
			errs[i] = nil
		} else if err != nil {
			errs[i] = fmt.Errorf("job %s: %w", b.Jobs[i].ID, err)
		}
	}
	return errors.Join(append(errs, herr)...)
}

// MaxBatch is the most jobs one EnqueueBatch call (one POST
// /v1/notifications:batch) takes.
const MaxBatch = payload.MaxBatchJobs

// BatchResult is one job's answer in a batch: accepted (Duplicate when a
// job with its id was accepted before, or earlier in the same batch), or
// not accepted, with Err.
type BatchResult struct {
	Accepted
	// Err says why the job was not accepted: a *payload.ValidationError
	// for field problems, otherwise Redis did not answer (submit the job
	// again with the same id).
	Err error `json:"-"`
}

// EnqueueBatch validates and enqueues jobs as Enqueue would, each with an
// answer of its own in jobs' order; one job's problem does not refuse the
// others. Due jobs of one priority share hush:batch tasks (batchJobs each)
// and cost a few round trips for the whole call: one lookup, then per task
// its enqueue and one write of its jobs' records. A scheduled job (send_at
// later than decide.WakeMargin from now) gets its own task, as from
// Enqueue, so that it books nothing before it is due.
//
// The error is for the call as a whole: no jobs, or more than MaxBatch
// (a *payload.ValidationError on the field "jobs"). jobs is not modified.
func (c *Client) EnqueueBatch(ctx context.Context, jobs []payload.Job) ([]BatchResult, error) {
	if len(jobs) == 0 || len(jobs) > MaxBatch {
		return nil, &payload.ValidationError{Problems: []payload.FieldError{{Field: "jobs",
			Message: fmt.Sprintf("%d jobs; a batch has 1 to %d", len(jobs), MaxBatch)}}}
	}
	now := c.now()
	jobs = slices.Clone(jobs)
	res := make([]BatchResult, len(jobs))
	prepared := make([]bool, len(jobs))
	for i := range jobs {
		if res[i].Err = c.prepare(&jobs[i], now); res[i].Err == nil {
			prepared[i] = true
		}
	}
	c.enqueuePrepared(ctx, jobs, prepared, res)
	return res, nil
}

// enqueuePrepared is EnqueueBatch for jobs already prepared (those whose
// prepared entry is set), answering each in res.
func (c *Client) enqueuePrepared(ctx context.Context, jobs []payload.Job, prepared []bool, res []BatchResult) {
	now := c.now()
	first := map[string]bool{}
	var live []int // jobs prepared, each the first of its id
	for i := range jobs {
		if !prepared[i] {
			continue
		}
		res[i].ID = jobs[i].ID
		if first[jobs[i].ID] {
			c.count("duplicate")
			res[i].Duplicate = true
			continue
		}
		first[jobs[i].ID] = true
		live = append(live, i)
	}
	// One round trip looks every id up (per node on a cluster).
	ids := make([]string, len(live))
	for k, i := range live {
		ids[k] = jobs[i].ID
	}
	found := c.store.existAll(ctx, ids)
	byQueue := map[string][]int{}
	var queues []string
	for k, i := range live {
		job := &jobs[i]
		n, err := found[k].Result()
		switch {
		case err != nil:
			res[i].Err = fmt.Errorf("look up job %s: %w", job.ID, err)
		case n > 0:
			c.count("duplicate")
			res[i].Duplicate = true
		case job.NotBefore().Sub(now) > decide.WakeMargin:
			res[i].Accepted, res[i].Err = c.submit(ctx, job, now)
		default:
			q := string(job.Priority.Effective())
			if byQueue[q] == nil {
				queues = append(queues, q)
			}
			byQueue[q] = append(byQueue[q], i)
		}
	}
	for _, q := range queues {
		var idx []int
		var raws []json.RawMessage
		size := 0
		for _, i := range byQueue[q] {
			raw, err := json.Marshal(&jobs[i])
			if err != nil {
				res[i].Err = fmt.Errorf("encode job %s: %w", jobs[i].ID, err)
				continue
			}
			if len(idx) == batchJobs || (len(idx) > 0 && size+len(raw) > batchBytes) {
				c.submitBatch(ctx, jobs, idx, raws, q, res)
				idx, raws, size = nil, nil, 0
			}
			idx, raws, size = append(idx, i), append(raws, raw), size+len(raw)
		}
		if len(idx) > 0 {
			c.submitBatch(ctx, jobs, idx, raws, q, res)
		}
	}
}

// submitBatch enqueues jobs[idx] (prepared, due, of queue q, not found
// live; raws their JSON) as one batch task, then writes their records in
// one round trip, answering each in res.
func (c *Client) submitBatch(ctx context.Context, jobs []payload.Job, idx []int, raws []json.RawMessage, q string, res []BatchResult) {
	b := batch{ID: payload.NewID()}
	body, err := json.Marshal(struct {
		ID   string            `json:"id"`
		Jobs []json.RawMessage `json:"jobs"`
	}{b.ID, raws})
	if err != nil {
		for _, i := range idx {
			res[i].Err = fmt.Errorf("encode job %s: %w", jobs[i].ID, err)
		}
		return
	}
	id := b.task()
	if _, err := c.aq.EnqueueContext(ctx, asynq.NewTask(TypeBatch, body), asynq.TaskID(id),
		asynq.Queue(task.ShardQueue(q, id, c.shards)), asynq.MaxRetry(jobMaxRetry), asynq.Timeout(jobTimeout)); err != nil {
		for _, i := range idx {
			res[i].Err = fmt.Errorf("enqueue job %s: %w", jobs[i].ID, err)
		}
		return
	}
	c.wrote(len(idx))
	// As in submit: the records make the jobs visible at once and answer
	// duplicates; the batch task writes the same fields if these writes
	// are lost. A job whose record another submission owns (or that
	// finished, unless this batch's task finished it: finishedBy) is a
	// duplicate, and the batch task leaves it alone.
	recs := make([]store.RecordInfo, len(idx))
	calls := make([]*startCall, len(idx))
	for k, i := range idx {
		recs[k] = recordOf(&jobs[i], q)
		recs[k].Task = id
		calls[k] = c.store.startCallWith(recs[k], store.JobQueued, true, nil)
	}
	c.store.startAll(ctx, calls)
	for k, i := range idx {
		owner, _, st, err := calls[k].result(ctx, nil)
		switch {
		case err != nil:
			res[i].Err = err
		case finishedBy(owner, st, recs[k]):
			c.count("accepted")
		case st.retired || owner != recs[k].Owner():
			c.count("duplicate")
			res[i].Duplicate = true
		default:
			c.count("accepted")
		}
	}
}
