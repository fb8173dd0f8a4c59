package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
)

// fanoutBatch is how many recipients are handled between two saves of the
// fan-out cursor.
const fanoutBatch = 100

// Delivery task options. Deliveries get a practically unlimited Asynq
// MaxRetry because Asynq archives a task whose retry count reached MaxRetry
// even on a non-failure error (a deferral); HUSH_MAX_RETRY is enforced by
// the handler, which counts only real failures.
const (
	deliveryMaxRetry = 1 << 20
	deliveryTimeout  = 2 * time.Minute
)

// delivery is the payload of a hush:delivery task: one recipient of a job,
// readable JSON for asynqmon.
type delivery struct {
	Job      string           `json:"job"`
	Index    int              `json:"index"`
	UserID   string           `json:"user_id"`
	Devices  []payload.Device `json:"devices"`
	Content  payload.Content  `json:"content"`
	Priority payload.Priority `json:"priority"`
	// Deadline is when the delivery expires; zero: never.
	Deadline   time.Time `json:"deadline,omitzero"`
	AcceptedAt time.Time `json:"accepted_at"`
	// Attempts counts the provider attempts a chunk already made for this
	// recipient; they count against HUSH_MAX_RETRY like the task's retries.
	Attempts int `json:"attempts,omitempty"`
	// Failed, set by a chunk, is the reason of a failure that ends the
	// delivery: the task records it and is archived with it.
	Failed string `json:"failed,omitempty"`
}

// member is the delivery's limiter booking id.
func (d *delivery) member() string { return d.Job + "/" + strconv.Itoa(d.Index) }

func (d *delivery) check() error {
	switch {
	case d.Job == "":
		return errors.New("no job id")
	case d.Index < 0:
		return fmt.Errorf("negative recipient index %d", d.Index)
	case d.UserID == "":
		return errors.New("no user_id")
	case len(d.Devices) == 0:
		return errors.New("no devices")
	}
	return nil
}

// handleJob creates the job record and fans the job out. With a limiter
// that books in batches (BatchLimiter), the job task delivers the first
// chunkSize recipients itself and creates one hush:chunk task (task id
// "<job id>/c<k>") per further chunk; otherwise it creates one delivery task
// per recipient. It is idempotent: a re-run (after a crash or a retry)
// resumes from the saved cursor, skips recipients with a final state, and a
// task that already exists is not created again.
func (w *Worker) handleJob(ctx context.Context, t *asynq.Task) (err error) {
	// On a pool goroutine: see goPool.
	w.pool.Run(func() { err = w.jobTask(ctx, t) })
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
	queue := string(job.Priority.Effective())
	_, chunked := w.limiter.(BatchLimiter)
	n := len(job.Recipients)
	var first *chunk
	if chunked {
		first = chunkOf(&job, 0)
	}
	if chunked && n == 1 && w.pipe != nil && !w.bypass[job.Priority.Effective()] && !first.expired(time.Now()) {
		return w.singleJob(ctx, &job, queue, first)
	}
	owner, start, states, err := w.store.start(ctx, recordOf(&job, queue), chunked && n <= chunkSize, first)
	if err != nil {
		return err
	}
	if owner != queue {
		// The same id was submitted concurrently with another priority and
		// that submission won.
		w.log.Warn("duplicate job on another queue ignored", "job", job.ID, "queue", queue, "owner", owner)
		return nil
	}
	if !chunked {
		return w.fanOut(ctx, &job, start)
	}
	if n > chunkSize {
		for from := max(chunkSize, start); from < n; from += chunkSize {
			if err := w.enqueueChunk(ctx, chunkOf(&job, from)); err != nil {
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
func (w *Worker) singleJob(ctx context.Context, job *payload.Job, queue string, c *chunk) error {
	if err := w.sends.Acquire(ctx, 1); err != nil {
		return fmt.Errorf("job %s: waiting for a send permit: %w", job.ID, err)
	}
	p := &wavePermits{sem: w.sends}
	p.held.Store(1)
	defer p.releaseAll()
	call := w.store.startCall(recordOf(job, queue), true, c)
	req := throttle.Request{User: c.Recipients[0].UserID, Member: job.ID + "/0"}
	asked := time.Now()
	res, rerr := w.pipe.ReserveBatchWith(ctx, []throttle.Request{req}, func(pipe redis.Pipeliner) { call.queue(ctx, pipe) })
	b := &booking{idx: []int{0}, res: res, err: rerr, mid: asked.Add(time.Since(asked) / 2), permits: p}
	owner, _, st, err := call.result(ctx, nil)
	if err != nil {
		return err // a re-run finds the booking and hands it to the delivery task
	}
	if owner != queue {
		w.log.Warn("duplicate job on another queue ignored", "job", job.ID, "queue", queue, "owner", owner)
		return nil
	}
	if st.finals[0] != "" {
		if rerr == nil && len(res) == 1 && !res[0].Existing {
			if _, err := w.limiter.Release(ctx, req.User, req.Member); err != nil {
				w.log.Warn("limiter release of a settled recipient failed", "delivery", req.Member, "err", err)
			}
		}
		return nil
	}
	return w.deliverChunk(ctx, c, st, b)
}

// fanOut creates one delivery task per recipient from start on.
func (w *Worker) fanOut(ctx context.Context, job *payload.Job, start int) error {
	deadline := job.Deadline()
	n := len(job.Recipients)
	for from := start; from < n; from += fanoutBatch {
		to := min(from+fanoutBatch, n)
		finals, err := w.store.finals(ctx, job.ID, from, to)
		if err != nil {
			return err
		}
		for i := from; i < to; i++ {
			if finals[i-from] != "" {
				continue
			}
			r := job.Recipients[i]
			d := delivery{
				Job: job.ID, Index: i, UserID: r.UserID, Devices: r.Devices,
				Content: job.Content, Priority: job.Priority.Effective(),
				Deadline: deadline, AcceptedAt: job.AcceptedAt,
			}
			if err := w.enqueueDelivery(ctx, &d, 0); err != nil {
				return err
			}
		}
		if err := w.store.setCursor(ctx, job.ID, to); err != nil {
			return err
		}
	}
	return w.store.setState(ctx, job.ID, jobFannedOut)
}

// enqueueDelivery creates d's delivery task, to run after delay, on its
// priority's queue (the user's shard of it).
func (w *Worker) enqueueDelivery(ctx context.Context, d *delivery, delay time.Duration) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode delivery %s: %w", d.member(), err)
	}
	opts := []asynq.Option{
		asynq.TaskID(d.member()), asynq.Queue(shardQueue(string(d.Priority), d.UserID, w.shards)),
		asynq.MaxRetry(deliveryMaxRetry), asynq.Timeout(deliveryTimeout),
	}
	if delay > 0 {
		opts = append(opts, asynq.ProcessIn(delay))
	}
	_, err = w.client.aq.EnqueueContext(ctx, asynq.NewTask(payload.TypeDelivery, b), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue delivery %s: %w", d.member(), err)
	}
	return nil
}
