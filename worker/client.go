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
	store store
	now   func() time.Time
	m     *metrics // nil outside a Worker
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithClock sets the clock used to validate jobs and stamp their acceptance
// (default time.Now).
func WithClock(now func() time.Time) ClientOption {
	return func(c *Client) { c.now = now }
}

// NewClient returns a Client enqueueing through rdb. It does not own rdb.
func NewClient(rdb redis.UniversalClient, opts ...ClientOption) *Client {
	c := &Client{rdb: rdb, aq: asynq.NewClientFromRedisClient(rdb), store: store{rdb: rdb}, now: time.Now}
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
	if err := job.Validate(now); err != nil {
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
	_, err = c.aq.EnqueueContext(ctx, asynq.NewTask(TypeJob, b),
		asynq.TaskID(jobTaskID(job.ID)), asynq.Queue(queue), asynq.MaxRetry(jobMaxRetry),
		asynq.Retention(jobRetention), asynq.Timeout(jobTimeout))
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
	}
}
