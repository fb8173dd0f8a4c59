package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
)

// handleJob creates the job record and fans the job out: the job task
// delivers the first chunkSize recipients itself and creates one hush:chunk
// task per further chunk. It is idempotent: a re-run (after a crash or a retry)
// resumes from the saved cursor, skips recipients with a final state, and a
// task that already exists is not created again.
func (w *Worker) handleJob(ctx context.Context, t *asynq.Task) (err error) {
	// On a pool goroutine: see goPool.
	w.pool.Run(func() {
		ctx, done := w.handling(ctx)
		defer done()
		err = w.jobTask(ctx, t)
	})
	return err
}

func (w *Worker) jobTask(ctx context.Context, t *asynq.Task) error {
	var job payload.Job
	if err := json.Unmarshal(t.Payload(), &job); err != nil {
		return fmt.Errorf("undecodable job payload: %w: %w", err, asynq.SkipRetry)
	}
	if job.ID == "" {
		return fmt.Errorf("job payload without id: %w", asynq.SkipRetry)
	}
	return w.runJob(ctx, &job, "")
}

// runJob is the work of a job's task, or of the batch task carrying it
// (task, its id; "" for the job's own task).
func (w *Worker) runJob(ctx context.Context, job *payload.Job, task string) error {
	queue := string(job.Priority.Effective())
	n := len(job.Recipients)
	first := chunkOf(job, 0)
	if n == 1 && !w.bypass[job.Priority.Effective()] && !first.expired(time.Now()) {
		if app, err := w.apps.resolve(job.App); err == nil {
			if pipe := w.pipeOf(app); pipe != nil {
				return w.singleJob(ctx, app, pipe, job, task, first)
			}
		}
	}
	r := recordOf(job, queue)
	r.Task = task
	owner, start, states, err := w.store.start(ctx, r, n <= chunkSize, first)
	if err != nil {
		return err
	}
	if states.retired {
		return nil // a re-run (or a duplicate) of a job already finished
	}
	if owner != r.owner() {
		// The same id was submitted concurrently with another priority,
		// or in another batch, and that submission won.
		w.log.Warn("duplicate job owned by another submission ignored", "job", job.ID, "owner", r.owner(), "owned by", owner)
		return nil
	}
	if n > chunkSize {
		for from := max(chunkSize, start); from < n; from += chunkSize {
			if err := w.enqueueChunk(ctx, chunkOf(job, from)); err != nil {
				return err
			}
		}
		if err := w.store.fannedOut(ctx, job.ID, n); err != nil {
			return err
		}
	}
	return w.deliverChunk(ctx, first, states, nil)
}

// singleJob is jobTask for a job of one recipient (the commonest kind): it
// books the recipient's slot in the same round trip as start.lua, taking
// the send permit first so the slot is not booked while waiting for one.
// The booking is speculative: when start.lua says the recipient is already
// settled (a re-run) a new booking is given back, and when another
// submission owns the id its bookings are left to it (it finds them
// existing, as after a crash). Otherwise the delivery goes on as in
// deliverChunk with the slot booked.
func (w *Worker) singleJob(ctx context.Context, app *App, pipe pipeLimiter, job *payload.Job, task string, c *chunk) error {
	if err := w.sends.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("job %s: waiting for a send permit: %w", job.ID, err)
	}
	p := &wavePermits{sem: w.sends}
	p.held.Store(1)
	defer p.releaseAll()
	r := recordOf(job, string(job.Priority.Effective()))
	r.Task = task
	call := w.store.startCall(r, true, c)
	d := c.delivery(0)
	req := w.requestOf(app, &d, 0, time.Time{})
	asked := time.Now()
	res, rerr := pipe.ReserveBatchWith(ctx, []throttle.Request{req}, func(pipe redis.Pipeliner) { call.queue(ctx, pipe) })
	b := &booking{idx: []int{0}, res: res, err: rerr, asked: asked, mid: asked.Add(time.Since(asked) / 2), permits: p}
	if rerr == nil && len(res) != 1 {
		b.err = fmt.Errorf("%d answers for 1 request", len(res))
	}
	owner, _, st, err := call.result(ctx, nil)
	if err != nil {
		return err // a re-run finds the booking and hands it to the delivery task
	}
	if owner != r.owner() && !st.retired {
		w.log.Warn("duplicate job owned by another submission ignored", "job", job.ID, "owner", r.owner(), "owned by", owner)
		return nil
	}
	// start.lua read the cancellation in the booking's round trip.
	b.cancelled = st.cancelled
	if st.finals[0] != "" {
		if b.err == nil && !res[0].Existing && res[0].Refused == "" {
			if _, err := app.Limiter.Release(ctx, req.User, req.Member); err != nil {
				w.log.Warn("limiter release of a settled recipient failed", "delivery", req.Member, "err", err)
			}
		}
		return nil
	}
	return w.deliverChunk(ctx, c, st, b)
}

// deliveryQueue is the queue of d's delivery task: its priority's shard
// for its user.
func (w *Worker) deliveryQueue(d *delivery) string {
	return shardQueue(string(d.Priority), d.UserID, w.shards)
}

// enqueueDelivery creates d's delivery task, to run after delay, on its
// priority's queue (the user's shard of it).
func (w *Worker) enqueueDelivery(ctx context.Context, d *delivery, delay time.Duration) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode delivery %s: %w", d.member(), err)
	}
	opts := []asynq.Option{
		asynq.TaskID(deliveryTaskID(d.Job, d.Index)), asynq.Queue(w.deliveryQueue(d)),
		asynq.MaxRetry(deliveryMaxRetry), asynq.Timeout(deliveryTimeout),
	}
	if delay > 0 {
		opts = append(opts, asynq.ProcessIn(delay))
	}
	_, err = w.client.aq.EnqueueContext(ctx, asynq.NewTask(TypeDelivery, b), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue delivery %s: %w", d.member(), err)
	}
	return nil
}
