package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// handleJob creates the job record and fans the job out: the job task
// delivers the first task.ChunkSize recipients itself and creates one chunk
// task per further chunk. It is idempotent: a re-run (after a crash or a retry)
// resumes from the saved cursor, skips recipients with a final state, and a
// task that already exists is not created again.
func (w *Worker) handleJob(ctx context.Context, t *asynq.Task) error {
	return w.handle(ctx, t, w.jobTask)
}

func (w *Worker) jobTask(ctx context.Context, t *asynq.Task) error {
	var job payload.Job
	if err := json.Unmarshal(t.Payload(), &job); err != nil {
		return fmt.Errorf("undecodable job payload: %w: %w", err, asynq.SkipRetry)
	}
	if job.ID == "" {
		return fmt.Errorf("job payload without id: %w", asynq.SkipRetry)
	}
	hj := newHeldJobsGroups(task.JobID(job.ID))
	err := w.runJob(ctx, &job, "", hj)
	return errors.Join(err, hj.finish(ctx, w, []error{err}))
}

// runJob is the work of a job's task, or of the batch task carrying it
// (task, its id; "" for the job's own task); hj takes a single-recipient
// job's recipient when the limiter defers it (waitingjobs.go).
func (w *Worker) runJob(ctx context.Context, job *payload.Job, taskID string, hj *waitingJobsGroups) error {
	if app, pipe := w.singlePath(job); pipe != nil {
		return w.singleJobs(ctx, app, []*payload.Job{job}, taskID, hj)[0]
	}
	queue := string(job.Priority.Effective())
	n := len(job.Recipients)
	first := task.ChunkOf(job, 0)
	r := recordOf(job, queue)
	r.Task = taskID
	owner, start, states, err := w.store.start(ctx, r, n <= task.ChunkSize, first)
	if err != nil {
		return err
	}
	if states.retired {
		return nil // a re-run (or a duplicate) of a job already finished
	}
	if owner != r.Owner() {
		// The same id was submitted concurrently with another priority,
		// or in another batch, and that submission won.
		w.log.Warn("duplicate job owned by another submission ignored", "job", job.ID, "owner", r.Owner(), "owned by", owner)
		return nil
	}
	if n > task.ChunkSize {
		for from := max(task.ChunkSize, start); from < n; from += task.ChunkSize {
			if err := w.enqueueChunk(ctx, task.ChunkOf(job, from), states.fresh); err != nil {
				return err
			}
		}
		if err := w.store.fannedOut(ctx, job.ID, n); err != nil {
			return err
		}
	}
	// Its own chunk holds deferred recipients back into held tasks too:
	// start.lua read their markers.
	states.group = n > 1
	if n > 1 {
		hj = nil
	}
	return w.deliverChunk(ctx, first, states, nil, hj)
}

// singlePath answers the app and its limiter when job takes singleJob's
// way: one recipient, booked (not a bypass priority), not expired, on a
// limiter sharing the worker's Redis client; else a nil pipe.
func (w *Worker) singlePath(job *payload.Job) (*App, task.PipeLimiter) {
	if len(job.Recipients) != 1 || w.bypass[job.Priority.Effective()] || task.ChunkOf(job, 0).Expired(w.now()) {
		return nil, nil
	}
	app, err := w.apps.Resolve(job.App)
	if err != nil {
		return nil, nil
	}
	return app, w.pipeOf(app)
}

// singleJobs is jobTask for jobs of one recipient (the commonest kind) of
// one app (one, or a batch's): it books each recipient's slot in the same
// round trip as the jobs' start.lua calls, taking the send permits first
// so no slot is booked while waiting for one. The booking is speculative:
// when start.lua says the recipient is already settled (a re-run) a new
// booking is given back, and when another submission owns the id its
// bookings are left to it (it finds them existing, as after a crash).
// Otherwise each job goes on alone as in deliverChunk with its slot
// booked, holding a deferred recipient back in hj's tasks. It answers an
// error per job.
func (w *Worker) singleJobs(ctx context.Context, app *App, jobs []*payload.Job, taskID string, hj *waitingJobsGroups) []error {
	errs := make([]error, len(jobs))
	if err := w.sends.Acquire(ctx, int64(len(jobs))); err != nil {
		for i, job := range jobs {
			errs[i] = fmt.Errorf("job %s: waiting for a send permit: %w", job.ID, err)
		}
		return errs
	}
	type started struct {
		r    store.RecordInfo
		c    *task.Chunk
		call *startCall
		p    *wavePermits
	}
	ss := make([]started, len(jobs))
	items := make([]bookItem, len(jobs))
	for i, job := range jobs {
		s := &ss[i]
		s.r = recordOf(job, string(job.Priority.Effective()))
		s.r.Task = taskID
		s.c = task.ChunkOf(job, 0)
		s.call = w.store.startCall(s.r, true, s.c)
		items[i] = bookItemsOf(s.c, []int{0})[0]
		s.p = &wavePermits{sem: w.sends}
		s.p.held.Store(1)
	}
	// start.lua reads each job's cancellation in the booking's round trip.
	b := w.book(ctx, app, items, bookHow{with: func(p redis.Pipeliner) {
		for i := range ss {
			ss[i].call.queue(ctx, p)
		}
	}})
	var wg sync.WaitGroup
	for i, job := range jobs {
		s := &ss[i]
		pb := b.part(i)
		pb.permits = s.p
		run := func() {
			defer s.p.releaseAll()
			errs[i] = w.startedSingle(ctx, job, s.r, s.c, s.call, pb, hj)
		}
		if len(jobs) == 1 {
			run()
		} else {
			wg.Go(run)
		}
	}
	wg.Wait()
	return errs
}

// startedSingle goes on with a single-recipient job once its start.lua
// call and its booking b have answered.
func (w *Worker) startedSingle(ctx context.Context, job *payload.Job, r store.RecordInfo, c *task.Chunk, call *startCall, b *booking, hj *waitingJobsGroups) error {
	owner, _, st, err := call.result(ctx, nil)
	if err != nil {
		return err // a re-run finds the booking and hands it to the delivery task
	}
	if owner != r.Owner() && !st.retired {
		w.log.Warn("duplicate job owned by another submission ignored", "job", job.ID, "owner", r.Owner(), "owned by", owner)
		return nil
	}
	// start.lua read the cancellation in the booking's round trip.
	b.cancelled = st.cancelled
	if st.finals[0] != "" {
		if b.err == nil && !b.res[0].Now.IsZero() && !b.res[0].Existing && b.res[0].Refused == "" {
			_ = w.release(ctx, "settled", failureLeft, 0, deliveriesOf(c, []int{0})...)
		}
		return nil
	}
	return w.deliverChunk(ctx, c, st, b, hj)
}

// deliveryQueue is the queue of d's delivery task: its priority's shard
// for its user.
func (w *Worker) deliveryQueue(d *task.Delivery) string {
	return task.ShardQueue(string(d.Priority), d.UserID, w.shards)
}

// enqueueDelivery creates d's delivery task, to run after delay, on its
// priority's queue (the user's shard of it).
func (w *Worker) enqueueDelivery(ctx context.Context, d *task.Delivery, delay time.Duration) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode delivery %s: %w", d.Member(), err)
	}
	opts := []asynq.Option{
		asynq.TaskID(task.DeliveryID(d.Job, d.Index)), asynq.Queue(w.deliveryQueue(d)),
		asynq.MaxRetry(deliveryMaxRetry), asynq.Timeout(deliveryTimeout),
	}
	if delay > 0 {
		opts = append(opts, asynq.ProcessIn(delay))
	}
	_, err = w.client.aq.EnqueueContext(ctx, asynq.NewTask(TypeDelivery, b), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue delivery %s: %w", d.Member(), err)
	}
	return nil
}
