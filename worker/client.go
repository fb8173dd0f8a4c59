package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/internal/mutant"
	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/wire"
	"github.com/hushpush/hush/worker/internal/decide"
	"github.com/hushpush/hush/worker/internal/groupcommit"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// Task options of a job. A finished job task is not retained: its record,
// written before the task can finish, answers duplicates (and, once the
// job is done, its done-hash entry: worker/internal/store/done.go).
const (
	jobMaxRetry = 25
	jobTimeout  = 10 * time.Minute
)

// Client validates jobs and enqueues them for the workers. It is what app
// backends written in Go use instead of the HTTP API.
type Client struct {
	rdb   redis.UniversalClient
	aq    *asynq.Client
	insp  *asynq.Inspector
	store jobStore
	now   func() time.Time
	m     *metrics // nil outside a Worker
	log   *slog.Logger
	// categories are the job categories accepted; nil: any (the workers
	// apply the global rules to a category they do not know). A Worker's
	// Client checks apps instead (nil for a standalone Client).
	categories map[string]bool
	apps       *Apps
	// shards spreads job tasks over each priority's shard queues
	// (WithShards); 1: the priority queue alone.
	shards int
	// gathers: Enqueue writes due jobs submitted together in batches
	// (gather.go; WithoutGathering turns it off).
	gathers   bool
	gathering *groupcommit.Group[payload.Job, BatchResult]
	// afterEnqueue, when set (by tests), runs once a submission's task is
	// enqueued, before its records are written.
	afterEnqueue func()
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithClock sets the clock used to validate jobs and stamp their acceptance
// (default time.Now).
func WithClock(now func() time.Time) ClientOption {
	return func(c *Client) { c.now, c.store.clock = now, now }
}

// WithJobRetention sets how long a finished job's id answers duplicates
// and its status stays readable (default DefaultJobRetention). It must be
// the workers' HUSH_JOB_RETENTION: the retention names the keys finished
// jobs are kept under.
func WithJobRetention(d time.Duration) ClientOption {
	return func(c *Client) {
		if d > 0 {
			c.store.done.Retention = d
		}
	}
}

// WithShards makes Enqueue put each job's task on one of its priority's
// shard queues (by job id), as the workers' HUSH_DELIVERY_SHARDS do with
// the tasks jobs create, so that on Redis Cluster no one queue's node takes
// every submission. Use the workers' value: they serve the shard queues
// (and the priority queues, so a Client without it still works).
func WithShards(n int) ClientOption {
	return func(c *Client) { c.shards = max(1, n) }
}

// WithoutGathering makes Enqueue write every job as its own task, at
// once, instead of gathering the jobs submitted while a write is under way
// into one batch (gather.go). It costs Redis more per job under load.
func WithoutGathering() ClientOption {
	return func(c *Client) { c.gathers = false }
}

// WithCategories makes Enqueue refuse a job whose category is not one of
// names (the workers' HUSH_THROTTLE_CATEGORIES). A Worker's own Client
// has its policy's categories.
func WithCategories(names ...string) ClientOption {
	return func(c *Client) {
		c.categories = map[string]bool{}
		for _, n := range names {
			c.categories[n] = true
		}
	}
}

// NewClient returns a Client enqueueing through rdb. It does not own rdb.
func NewClient(rdb redis.UniversalClient, opts ...ClientOption) *Client {
	c := &Client{rdb: rdb, aq: asynq.NewClientFromRedisClient(rdb), insp: asynq.NewInspectorFromRedisClient(rdb),
		store: newStore(rdb, DefaultJobRetention), now: time.Now, log: slog.New(slog.DiscardHandler), shards: 1, gathers: true}
	for _, o := range opts {
		o(c)
	}
	c.gathering = c.newGathering(gatherLinger)
	return c
}

// Accepted is the answer to a submitted job: its id, and whether a job
// with this id was already accepted (Duplicate: the submission changed
// nothing).
type Accepted = wire.Accepted

// Enqueue validates job, gives it an id when it has none, and enqueues it
// on the queue of its priority. A job whose id was accepted before is
// acknowledged as a duplicate and changes nothing. Validation problems are
// returned as a *payload.ValidationError.
//
// A due job submitted while another submission through this Client is
// being written waits for that write and is written with the others that
// came meanwhile, in one batch (gather.go).
func (c *Client) Enqueue(ctx context.Context, job payload.Job) (Accepted, error) {
	now := c.now()
	if err := c.prepare(&job, now); err != nil {
		return Accepted{}, err
	}
	if c.gathers && job.NotBefore().Sub(now) <= decide.WakeMargin {
		return c.gather(ctx, job)
	}
	return c.enqueueOne(ctx, &job)
}

// enqueueOne enqueues a prepared job as its own task, unless its id is
// found live.
func (c *Client) enqueueOne(ctx context.Context, job *payload.Job) (Accepted, error) {
	dup, err := c.store.exists(ctx, job.ID)
	if err != nil {
		return Accepted{}, err
	}
	if dup {
		c.count("duplicate")
		return Accepted{ID: job.ID, Duplicate: true}, nil
	}
	return c.submit(ctx, job, c.now())
}

// prepare validates job, gives it an id when it has none and stamps its
// acceptance.
func (c *Client) prepare(job *payload.Job, now time.Time) error {
	if err := c.refuseInvalid(job, now); err != nil {
		return err
	}
	if job.ID == "" {
		job.ID = payload.NewID()
	}
	// Validate refused one set by the caller. Milliseconds: a finished
	// job's record keeps no finer (worker/internal/store/done.go).
	job.AcceptedAt = now.Truncate(time.Millisecond)
	return nil
}

// submit enqueues a prepared job not found live: its own task, then its
// record.
func (c *Client) submit(ctx context.Context, job *payload.Job, now time.Time) (Accepted, error) {
	b, err := json.Marshal(job)
	if err != nil {
		return Accepted{}, fmt.Errorf("encode job %s: %w", job.ID, err)
	}
	queue := string(job.Priority.Effective())
	opts := []asynq.Option{asynq.TaskID(task.JobID(job.ID)), asynq.Queue(task.ShardQueue(queue, task.JobID(job.ID), c.shards)), asynq.MaxRetry(jobMaxRetry),
		asynq.Timeout(jobTimeout)}
	if at := job.NotBefore(); at.Sub(now) > decide.WakeMargin {
		// A scheduled job books nothing until it is due: its task wakes
		// shortly before send_at and books from there (the limiter's
		// NotBefore keeps it from going out earlier).
		opts = append(opts, asynq.ProcessAt(at.Add(-decide.WakeMargin)))
	}
	_, err = c.aq.EnqueueContext(ctx, asynq.NewTask(TypeJob, b), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		c.count("duplicate")
		return Accepted{ID: job.ID, Duplicate: true}, nil
	}
	if err != nil {
		return Accepted{}, fmt.Errorf("enqueue job %s: %w", job.ID, err)
	}
	c.wrote(1)
	// The record makes the job visible to Status at once and answers
	// duplicates once the task is gone; the job handler writes the same
	// fields if this write is lost. A job found retired (finished: the
	// lookup above reads live records only) is a duplicate, unless this
	// submission's own task finished it already; the new task of a
	// duplicate finds it retired too and does nothing.
	dup, err := c.store.create(ctx, recordOf(job, queue), store.JobQueued)
	if err != nil {
		return Accepted{}, err
	}
	if dup {
		c.count("duplicate")
		return Accepted{ID: job.ID, Duplicate: true}, nil
	}
	c.count("accepted")
	return Accepted{ID: job.ID}, nil
}

// Check validates job as Enqueue would, without enqueueing it, and counts
// a refusal as Enqueue does; an empty app is set to the only one. The
// problems are a *payload.ValidationError. EnqueueBatch checks its jobs
// again.
func (c *Client) Check(job *payload.Job) error { return c.refuseInvalid(job, c.now()) }

// refuseInvalid is validate, counting the jobs it refuses.
func (c *Client) refuseInvalid(job *payload.Job, now time.Time) error {
	if err := c.validate(job, now); err != nil {
		c.count("invalid")
		return err // a *payload.ValidationError, which says "invalid job"
	}
	return nil
}

// validate is job.Validate, plus what only the deployment knows: the app
// (a configured one; required when there are several; with credentials
// for every platform the job's devices use) and the category (one of the
// app's). An empty app is set to the only one.
func (c *Client) validate(job *payload.Job, now time.Time) error {
	err := job.Validate(now)
	var ve *payload.ValidationError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	var ps []payload.FieldError
	omitted := 0
	if ve != nil {
		ps, omitted = slices.Clone(ve.Problems), ve.Omitted
	}
	add := func(field, msg string, after ...string) {
		at := slices.IndexFunc(ps, func(p payload.FieldError) bool { return !fieldIn(p.Field, after) })
		if at < 0 {
			at = len(ps)
		}
		ps = slices.Insert(ps, at, payload.FieldError{Field: field, Message: msg})
	}
	// Problems in document order: the app after the recipients, the
	// category after the alert, data and priority.
	before := []string{"id", "accepted_at", "recipients"}
	cats := c.categories
	if c.apps != nil && (job.App == "" || payload.ValidApp(job.App)) {
		app, aerr := c.apps.Resolve(job.App)
		switch {
		case aerr != nil && job.App == "":
			add("app", "required: this deployment serves the apps "+strings.Join(c.apps.Names(), ", "), before...)
		case aerr != nil:
			add("app", aerr.Error(), before...)
		default:
			job.App = app.Name
			for _, m := range missingPlatforms(job, app) {
				add("app", m, before...)
			}
			for _, p := range refusedTokens(job, app) {
				add(p.Field, p.Message, before...)
			}
			cats = map[string]bool{}
			for name := range app.Policy.Categories {
				cats[name] = true
			}
		}
	}
	if job.Category != "" && cats != nil && !cats[job.Category] && payload.ValidCategory(job.Category) {
		msg := fmt.Sprintf("unknown category %q: no categories are configured (HUSH_THROTTLE_CATEGORIES)", job.Category)
		if len(cats) > 0 {
			msg = fmt.Sprintf("unknown category %q (configured: %s)", job.Category, strings.Join(slices.Sorted(maps.Keys(cats)), ", "))
		}
		add("category", msg, append(before, "app", "alert", "data", "priority")...)
	}
	if len(ps) == 0 {
		return nil
	}
	return payload.NewValidationError(ps, omitted)
}

// missingPlatforms names, per platform the job's devices use that app has
// no sender for, the problem and the first device using it. An app with no
// senders at all (a Worker built without them, as tests do) is not
// checked: its devices fail when sent.
func missingPlatforms(job *payload.Job, app *App) []string {
	if len(app.Senders) == 0 {
		return nil
	}
	var out []string
	seen := map[payload.Platform]bool{}
	for i, r := range job.Recipients {
		for k, d := range r.Devices {
			if _, ok := app.Senders[d.Platform]; ok || seen[d.Platform] || !d.Platform.Valid() {
				continue
			}
			seen[d.Platform] = true
			out = append(out, fmt.Sprintf("app %q has no %s credentials (recipients[%d].devices[%d] is %s)", app.Name, d.Platform, i, k, d.Platform))
		}
	}
	return out
}

// refusedTokens are the problems of the tokens whose senders refuse them
// (task.TokenChecker), one per device.
func refusedTokens(job *payload.Job, app *App) []payload.FieldError {
	var out []payload.FieldError
	for i, r := range job.Recipients[:min(len(job.Recipients), payload.MaxRecipients)] {
		for k, d := range r.Devices[:min(len(r.Devices), payload.MaxDevices)] {
			tc, ok := app.Senders[d.Platform].(task.TokenChecker)
			if !ok {
				continue
			}
			if err := tc.CheckToken(d.Token); err != nil {
				out = append(out, payload.FieldError{Field: fmt.Sprintf("recipients[%d].devices[%d].token", i, k), Message: err.Error()})
			}
		}
	}
	return out
}

// fieldIn reports whether a problem's field is one of fields or inside
// one.
func fieldIn(field string, fields []string) bool {
	for _, f := range fields {
		if field == f || strings.HasPrefix(field, f+"[") || strings.HasPrefix(field, f+".") {
			return true
		}
	}
	return false
}

// CancelResult is the answer to Cancel: the job's status once nothing of
// it can be sent any more, and whether this call cancelled it.
type CancelResult = wire.CancelResult

// Cancel cancels job id: every delivery not yet sent is dropped with
// reason cancelled and gives its booking back; those already sent stay
// delivered. It is idempotent, and a job already done is left as it is
// (Cancelled false, its state done). It returns once no push of the job can
// leave any more (cancelGrace after its own write of the cancellation, or
// its finding of an earlier one, on this process's clock, unless every
// delivery was already final), with the job's status: its Counts
// say how many were delivered before, and "pending" how many are still
// being dropped. An unknown id wraps ErrNotFound.
func (c *Client) Cancel(ctx context.Context, id string) (CancelResult, error) {
	st, err := c.store.status(ctx, id)
	if err != nil {
		return CancelResult{}, err
	}
	if st.State == jobDone || st.Counts["pending"] == 0 {
		return CancelResult{JobStatus: st}, nil // nothing left to cancel
	}
	cx, err := c.store.cancel(ctx, id, c.now().Truncate(time.Millisecond))
	// The answer waits cancelGrace from here, on this process's clock:
	// the first cancellation was written before this call's script ran,
	// and every read that allowed a send came before that write, so every
	// call those reads allowed has started by then, whatever the clock of
	// the process that cancelled first.
	answerAt := c.now().Add(cancelGrace)
	if mutant.On("cancelNoGrace") {
		answerAt = c.now()
	}
	if errors.Is(err, ErrNotFound) {
		// The job finished and retired since the status was read.
		st, err = c.store.status(ctx, id)
		return CancelResult{JobStatus: st}, err
	}
	if err != nil {
		return CancelResult{}, err
	}
	if st, err = c.store.status(ctx, id); err != nil {
		return CancelResult{}, err
	}
	if st.Counts["pending"] > 0 {
		// Wake what waits: the job task of a job not yet started (a
		// scheduled one; Asynq would run a finished task again, so only
		// then), and every held delivery (each drops itself now, giving
		// its booking back).
		if cx.state == store.JobQueued {
			// On its shard queue, or on the priority queue when a Client
			// without shards enqueued it.
			if c.insp.RunTask(task.ShardQueue(st.Queue, task.JobID(id), c.shards), task.JobID(id)) != nil {
				_ = c.insp.RunTask(st.Queue, task.JobID(id))
			}
		}
		woken := map[string]bool{}
		for i, mark := range cx.held {
			q, owner := task.ParseHeldMark(mark)
			if owner == "" {
				owner = task.DeliveryID(id, i)
			}
			if !woken[owner] {
				woken[owner] = true
				_ = c.wakeHeld(ctx, q, owner)
			}
		}
		timer := time.NewTimer(max(answerAt.Sub(c.now()), 0))
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return CancelResult{}, ctx.Err()
		}
		if st, err = c.store.status(ctx, id); err != nil {
			return CancelResult{}, err
		}
	}
	return CancelResult{JobStatus: st, Cancelled: cx.first}, nil
}

// Status returns the state of a job and its counts per delivery state, or
// an error wrapping ErrNotFound.
func (c *Client) Status(ctx context.Context, id string) (JobStatus, error) {
	return c.store.status(ctx, id)
}

func (c *Client) count(result string) {
	if c.m != nil {
		c.m.jobs.WithLabelValues(result).Inc()
	}
}

// wrote counts a queue task written for jobs new jobs (and runs
// afterEnqueue).
func (c *Client) wrote(jobs int) {
	if c.m != nil {
		c.m.taskJobs.Observe(float64(jobs))
	}
	if c.afterEnqueue != nil {
		c.afterEnqueue()
	}
}

func recordOf(job *payload.Job, queue string) store.RecordInfo {
	return store.RecordInfo{
		ID:         job.ID,
		Queue:      queue,
		App:        job.App,
		Recipients: len(job.Recipients),
		AcceptedAt: job.AcceptedAt,
		Deadline:   job.Deadline(),
		Retain:     task.RetainFrom(job.AcceptedAt, &job.Content),
	}
}
