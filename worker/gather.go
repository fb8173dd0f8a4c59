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
// instead of one task and three round trips each. A write that follows
// another first waits, up to gatherLinger, for the callers the write
// before it answered to come back (lingerGathering). Each caller still
// gets its own job's answer, and only once the job is written.
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
	// want: while the writer lingers, how many waiting jobs end it (0
	// otherwise); enough is signalled once they are there.
	want   int
	enough chan struct{}
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
	if g.want > 0 && len(g.waiting) >= g.want {
		g.want = 0
		select {
		case g.enough <- struct{}{}:
		default:
		}
	}
	lead := !g.writing
	g.writing = true
	g.mu.Unlock()
	if lead {
		// This caller writes what waits now (its own job among it); what
		// arrives meanwhile is written by another goroutine after it.
		n := c.writeGathered()
		go func() {
			for n > 0 {
				c.lingerGathering(n)
				n = c.writeGathered()
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

// gatherLinger is the longest a write after a Client's first waits for
// the callers the write before it answered (lingerGathering).
const gatherLinger = 250 * time.Microsecond

// lingerGathering waits, before a write that follows one of answered
// jobs, until as many more jobs as that write answered are waiting (a
// caller submitting one job after another comes back at once), or
// gatherLinger. Without it a caller answered by one write missed the next,
// which had started meanwhile: jobs from 16 goroutines went in batches of
// about 9 instead of 16 (BenchmarkPipeline).
func (c *Client) lingerGathering(answered int) {
	g := &c.gathering
	g.mu.Lock()
	want := min(len(g.waiting)+answered, MaxBatch)
	if len(g.waiting) >= want {
		g.mu.Unlock()
		return
	}
	if g.enough == nil {
		g.enough = make(chan struct{}, 1)
	}
	g.want = want
	g.mu.Unlock()
	timer := time.NewTimer(c.linger)
	select {
	case <-g.enough:
	case <-timer.C:
	}
	timer.Stop()
	g.mu.Lock()
	g.want = 0
	select {
	case <-g.enough: // signalled after the timer fired
	default:
	}
	g.mu.Unlock()
}

// writeGathered writes up to MaxBatch waiting jobs, answers them and
// returns how many it wrote: none, leaving the writing to the next caller,
// when nothing waited.
func (c *Client) writeGathered() int {
	g := &c.gathering
	g.mu.Lock()
	n := min(len(g.waiting), MaxBatch)
	if n == 0 {
		g.writing = false
		g.mu.Unlock()
		return 0
	}
	ws := g.waiting[:n:n]
	g.waiting = g.waiting[n:]
	g.mu.Unlock()

	res := c.writeJobs(ws)
	for i, w := range ws {
		w.done <- res[i]
	}
	return n
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
