package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/worker/internal/store"
	"github.com/hushpush/hush/worker/internal/task"
)

// The read of a page of a job's recipients (recipients.go explains what
// it answers).

// recipientHead are the job record's fields a page reads before its held
// markers.
var recipientHead = []string{"queue", "state", "recipients", "app", store.FieldCancelled}

func (s jobStore) recipients(ctx context.Context, id string, q RecipientsQuery) (RecipientsPage, error) {
	from, err := q.check()
	if err != nil {
		return RecipientsPage{}, err
	}
	n := q.Limit
	fields := slices.Clone(recipientHead)
	names := make([]string, n)
	devs := make([]string, 0, n*(payload.MaxDevices+1))
	for k := range n {
		i := from + k
		names[k] = strconv.Itoa(i)
		fields = append(fields, store.HeldPrefix+names[k])
		for d := range payload.MaxDevices {
			devs = append(devs, store.DevField(i, d))
		}
		devs = append(devs, names[k]+"/a")
	}
	var hc, rc, dc, xc *redis.SliceCmd
	var xn *redis.IntCmd
	var done []*redis.StringCmd
	// One transaction: retire.lua deletes the records at once, and a read
	// between its writes would see some keys and not others.
	_, err = s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		hc = p.HMGet(ctx, store.JobKey(id), fields...)
		rc = p.HMGet(ctx, store.RecpKey(id), names...)
		dc = p.HMGet(ctx, store.DevKey(id), devs...)
		xc = p.HMGet(ctx, store.ExceptKey(id), names...)
		xn = p.HLen(ctx, store.ExceptKey(id))
		done = store.QueueRetired(ctx, p, s.done, id, s.now())
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return RecipientsPage{}, fmt.Errorf("read recipients of job %s: %w", id, err)
	}
	head := store.Strs(hc.Val())
	if len(head) != len(fields) {
		return RecipientsPage{}, fmt.Errorf("job record %s: %d fields for %d", id, len(head), len(fields))
	}
	except := store.Strs(xc.Val())
	if len(except) != n {
		return RecipientsPage{}, fmt.Errorf("exceptions of job %s: unexpected reply", id)
	}
	if head[0] == "" {
		if v := store.RetiredOf(done); v != "" {
			st, err := store.CompactStatus(id, v)
			if err != nil {
				return RecipientsPage{}, err
			}
			page := RecipientsPage{ID: id, App: st.App, State: st.State, Recipients: st.Recipients, Retired: true,
				Counts: st.Counts, Items: []RecipientState{}}
			if int64(st.Recipients-st.Counts[task.Delivered]) != xn.Val() {
				// Finished by a build that kept no exceptions, or they
				// expired: the counts are all there is.
				return page, nil
			}
			end := min(from+n, page.Recipients)
			for k := range max(end-from, 0) {
				r := RecipientState{Index: from + k, State: task.Delivered}
				if except[k] != "" {
					r.State, r.Reason = splitExcept(except[k])
				}
				if q.State == "" || r.State == q.State {
					page.Items = append(page.Items, r)
				}
			}
			if end < page.Recipients {
				page.Next = strconv.Itoa(end)
			}
			return page, nil
		}
		return RecipientsPage{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	page := RecipientsPage{ID: id, App: head[3], State: head[1], Items: []RecipientState{}}
	page.Recipients, _ = strconv.Atoi(head[2])
	if head[4] != "" {
		page.State = jobCancelled
	}
	finals, dv := store.Strs(rc.Val()), store.Strs(dc.Val())
	if len(finals) != n || len(dv) != len(devs) {
		return RecipientsPage{}, fmt.Errorf("recipients of job %s: unexpected reply", id)
	}
	marks := head[len(recipientHead):]
	end := min(from+n, page.Recipients)
	for k := range max(end-from, 0) {
		r := recipientOf(id, from+k, finals[k], marks[k], dv[k*(payload.MaxDevices+1):(k+1)*(payload.MaxDevices+1)])
		if except[k] != "" && finals[k] != "" {
			_, r.Reason = splitExcept(except[k])
		}
		if q.State == "" || r.State == q.State {
			page.Items = append(page.Items, r)
		}
	}
	if end < page.Recipients {
		page.Next = strconv.Itoa(end)
	}
	return page, nil
}
