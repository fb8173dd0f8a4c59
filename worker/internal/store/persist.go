package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Backoff of Persist between two tries.
const (
	persistFirstWait = 50 * time.Millisecond
	persistMaxWait   = 2 * time.Second
)

// Persist runs a write that records what a provider has already
// acknowledged, trying again while Redis cannot be reached, until it
// succeeds or ctx ends. Giving up at once would let the next run send the
// same push again: docs/delivery.md allows a duplicate only when the process
// dies between the acknowledgement and the record, not when Redis blinks.
// Errors Redis itself answered (a reply error) are returned at once: trying
// again would not change them. Except those it gives while it cannot
// serve writes for a moment (transientReply): a restarted Redis answers
// LOADING until its data is read back, and a write given up then would
// send the push again just the same. The writes are idempotent, so a try
// whose answer was lost is safe to repeat.
func Persist(ctx context.Context, write func(context.Context) error) error {
	wait := persistFirstWait
	for {
		err := write(ctx)
		var reply redis.Error
		if err == nil || (errors.As(err, &reply) && !transientReply(err)) || ctx.Err() != nil {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, persistMaxWait)
	}
}

// transientReplies start the reply errors Redis gives while it cannot
// serve a write for a moment: loading its data after a restart, running a
// script past its time limit, a cluster resharding or failing over, a
// replica without its master, or a former master now a replica (the
// client finds the new one).
var transientReplies = []string{"LOADING ", "BUSY ", "TRYAGAIN ", "CLUSTERDOWN ", "MASTERDOWN ", "READONLY "}

// transientReply reports whether err is one of transientReplies.
func transientReply(err error) bool {
	for _, p := range transientReplies {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
