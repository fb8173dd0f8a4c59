package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
)

// Task options of a job. Retention keeps a finished job task's id taken for
// a while, so a duplicate submitted while the job record is being written
// still conflicts; after that the record (kept for days) answers.
const (
	jobMaxRetry  = 25
	jobRetention = time.Hour
	jobTimeout   = 10 * time.Minute
)

// Client validates jobs and enqueues them for the workers. It is what app
// backends written in Go use instead of the HTTP API.
type Client struct {
	rdb   redis.UniversalClient
	aq    *asynq.Client
	insp  *asynq.Inspector
	store store
	now   func() time.Time
	m     *metrics // nil outside a Worker
	// categories are the job categories accepted; nil: any (the workers
	// apply the global rules to a category they do not know).
	categories map[string]bool
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithClock sets the clock used to validate jobs and stamp their acceptance
// (default time.Now).
func WithClock(now func() time.Time) ClientOption {
	return func(c *Client) { c.now = now }
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
		store: store{rdb: rdb}, now: time.Now}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Accepted is the answer to a submitted job.
type Accepted struct {
	ID string `json:"id"`
	// Duplicate is true when a job with this id was already accepted; the
	// submission changed nothing.
	Duplicate bool `json:"duplicate,omitempty"`
}

// Enqueue validates job, gives it an id when it has none, and enqueues it
// on the queue of its priority. A job whose id was accepted before is
// acknowledged as a duplicate and changes nothing. Validation problems are
// returned as a *payload.ValidationError.
func (c *Client) Enqueue(ctx context.Context, job payload.Job) (Accepted, error) {
	now := c.now()
	if err := c.validate(&job, now); err != nil {
		c.count("invalid")
		return Accepted{}, err // a *payload.ValidationError, which says "invalid job"
	}
	if job.ID == "" {
		job.ID = payload.NewID()
	}
	job.AcceptedAt = now // Validate refused one set by the caller
	dup, err := c.store.exists(ctx, job.ID)
	if err != nil {
		return Accepted{}, err
	}
	if dup {
		c.count("duplicate")
		return Accepted{ID: job.ID, Duplicate: true}, nil
	}
	b, err := json.Marshal(job)
	if err != nil {
		return Accepted{}, fmt.Errorf("encode job %s: %w", job.ID, err)
	}
	queue := string(job.Priority.Effective())
	opts := []asynq.Option{asynq.TaskID(jobTaskID(job.ID)), asynq.Queue(queue), asynq.MaxRetry(jobMaxRetry),
		asynq.Retention(jobRetention), asynq.Timeout(jobTimeout)}
	if at := job.NotBefore(); at.Sub(now) > wakeMargin {
		// A scheduled job books nothing until it is due: its task wakes
		// shortly before send_at and books from there (the limiter's
		// NotBefore keeps it from going out earlier).
		opts = append(opts, asynq.ProcessAt(at.Add(-wakeMargin)))
	}
	_, err = c.aq.EnqueueContext(ctx, asynq.NewTask(TypeJob, b), opts...)
	if errors.Is(err, asynq.ErrTaskIDConflict) {
		c.count("duplicate")
		return Accepted{ID: job.ID, Duplicate: true}, nil
	}
	if err != nil {
		return Accepted{}, fmt.Errorf("enqueue job %s: %w", job.ID, err)
	}
	// The record makes the job visible to Status at once and answers
	// duplicates after the task's retention; the job handler writes the
	// same fields if this write is lost.
	if _, err := c.store.create(ctx, recordOf(&job, queue), jobQueued, false); err != nil {
		return Accepted{}, err
	}
	c.count("accepted")
	return Accepted{ID: job.ID}, nil
}

// validate is job.Validate, plus the category: one of the configured ones
// when the Client knows them.
func (c *Client) validate(job *payload.Job, now time.Time) error {
	err := job.Validate(now)
	if job.Category == "" || c.categories == nil || c.categories[job.Category] || !payload.ValidCategory(job.Category) {
		return err
	}
	msg := fmt.Sprintf("unknown category %q: no categories are configured (HUSH_THROTTLE_CATEGORIES)", job.Category)
	if len(c.categories) > 0 {
		msg = fmt.Sprintf("unknown category %q (configured: %s)", job.Category, strings.Join(slices.Sorted(maps.Keys(c.categories)), ", "))
	}
	problem := payload.FieldError{Field: "category", Message: msg}
	var ve *payload.ValidationError
	if errors.As(err, &ve) {
		// In document order: category comes after the recipients, alert,
		// data and priority, before the rest.
		ps := slices.Clone(ve.Problems)
		at := slices.IndexFunc(ps, func(p payload.FieldError) bool { return !categoryBefore(p.Field) })
		if at < 0 {
			at = len(ps)
		}
		return &payload.ValidationError{Problems: slices.Insert(ps, at, problem)}
	}
	return &payload.ValidationError{Problems: []payload.FieldError{problem}}
}

// categoryBefore reports whether a problem on field comes before one on
// category in a job's document order.
func categoryBefore(field string) bool {
	for _, f := range []string{"id", "accepted_at", "recipients", "alert", "data", "priority"} {
		if field == f || strings.HasPrefix(field, f+"[") || strings.HasPrefix(field, f+".") {
			return true
		}
	}
	return false
}

// CancelResult is the answer to Cancel: the job's status once nothing of
// it can be sent any more.
type CancelResult struct {
	JobStatus
	// Cancelled is true when this call cancelled the job, false when an
	// earlier one had.
	Cancelled bool `json:"cancelled"`
}

// Cancel cancels job id: every delivery not yet sent is dropped with
// reason cancelled and gives its booking back; those already sent stay
// delivered. It is idempotent, and a job already done is left as it is
// (Cancelled false, its state done). It returns once no push of the job can
// leave any more (cancelGrace after the cancellation is written, unless
// every delivery was already final), with the job's status: its Counts
// say how many were delivered before, and "pending" how many are still
// being dropped. An unknown id wraps ErrNotFound.
func (c *Client) Cancel(ctx context.Context, id string) (CancelResult, error) {
	st, err := c.store.status(ctx, id)
	if err != nil {
		return CancelResult{}, err
	}
	if st.State == jobDone {
		return CancelResult{JobStatus: st}, nil // nothing left to cancel
	}
	cx, err := c.store.cancel(ctx, id, c.now())
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
		if cx.state == jobQueued {
			_ = c.insp.RunTask(st.Queue, jobTaskID(id))
		}
		for i, q := range cx.held {
			_ = c.insp.RunTask(q, deliveryTaskID(id, i))
		}
		wait := time.Until(cx.at.Add(cancelGrace))
		if cx.first {
			wait = cancelGrace // measured from this write, on this clock
		}
		timer := time.NewTimer(max(wait, 0))
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

func recordOf(job *payload.Job, queue string) recordInfo {
	return recordInfo{
		ID:         job.ID,
		Queue:      queue,
		Recipients: len(job.Recipients),
		AcceptedAt: job.AcceptedAt,
		Deadline:   job.Deadline(),
		Retain:     retainFrom(job.AcceptedAt, &job.Content),
	}
}
