package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/hushpush/hush/payload"
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

// handleJob creates the job record and fans the job out into one delivery
// task per recipient. It is idempotent: a re-run (after a crash or a retry)
// resumes from the saved cursor, skips recipients with a final state, and a
// delivery task that already exists is not created again (its task id is
// "<job id>/<recipient index>").
func (w *Worker) handleJob(ctx context.Context, t *asynq.Task) error {
	var job payload.Job
	if err := json.Unmarshal(t.Payload(), &job); err != nil {
		return fmt.Errorf("undecodable job payload: %w: %w", err, asynq.SkipRetry)
	}
	if job.ID == "" {
		return fmt.Errorf("job payload without id: %w", asynq.SkipRetry)
	}
	queue := string(job.Priority.Effective())
	owner, err := w.store.create(ctx, recordOf(&job, queue), jobFanning, false)
	if err != nil {
		return err
	}
	if owner != queue {
		// The same id was submitted concurrently with another priority and
		// that submission won.
		w.log.Warn("duplicate job on another queue ignored", "job", job.ID, "queue", queue, "owner", owner)
		return nil
	}
	if err := w.store.setState(ctx, job.ID, jobFanning); err != nil {
		return err
	}
	start, err := w.store.cursor(ctx, job.ID)
	if err != nil {
		return err
	}
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
			if err := w.enqueueDelivery(ctx, &d, queue); err != nil {
				return err
			}
		}
		if err := w.store.setCursor(ctx, job.ID, to); err != nil {
			return err
		}
	}
	return w.store.setState(ctx, job.ID, jobFannedOut)
}

func (w *Worker) enqueueDelivery(ctx context.Context, d *delivery, queue string) error {
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode delivery %s: %w", d.member(), err)
	}
	opts := []asynq.Option{
		asynq.TaskID(d.member()), asynq.Queue(queue),
		asynq.MaxRetry(deliveryMaxRetry), asynq.Timeout(deliveryTimeout),
	}
	_, err = w.client.aq.EnqueueContext(ctx, asynq.NewTask(payload.TypeDelivery, b), opts...)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return fmt.Errorf("enqueue delivery %s: %w", d.member(), err)
	}
	return nil
}
