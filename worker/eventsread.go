package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/hushpush/hush/wire"
)

// Bounds of a read of hush:events (Client.Events, GET /v1/events).
const (
	// DefaultEventsLimit is the events a page holds when the query names
	// no limit.
	DefaultEventsLimit = 100
	// MaxEventsLimit is the most events one page holds.
	MaxEventsLimit = 1000
	// EventsScanned is the most stream entries one read looks at, so a
	// filter that matches little costs a bounded read; the page's Next
	// continues where it stopped.
	EventsScanned = 10000
	// eventsBatch is the entries one XRANGE or XREVRANGE of a read asks
	// for.
	eventsBatch = 500
)

// EventsQuery selects events of hush:events. Every filter set must match.
type EventsQuery struct {
	// Apps are the apps whose events are read; nil: every app.
	Apps []string
	// Type, Job and User, when set, are the event's type, job and user.
	Type, Job, User string
	// Before reads, newest first, the events older than this cursor;
	// After reads, oldest first, the events newer than it. Neither: the
	// newest first. At most one is set.
	Before, After string
	// Limit is the most events returned (0: DefaultEventsLimit; at most
	// MaxEventsLimit).
	Limit int
}

// QueryError is a query's problem, naming its field.
type QueryError struct {
	Field, Message string
}

func (e *QueryError) Error() string { return e.Field + ": " + e.Message }

// cursorPattern is a stream entry id, as XADD makes them.
var cursorPattern = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// check reports the query's first problem and fills in its limit.
func (q *EventsQuery) check() error {
	switch {
	case q.Before != "" && q.After != "":
		return &QueryError{"after", "give before or after, not both"}
	case q.Before != "" && !cursorPattern.MatchString(q.Before):
		return &QueryError{"before", fmt.Sprintf("want a cursor of an earlier page (such as 1764547200000-0), got %.40q", q.Before)}
	case q.After != "" && !cursorPattern.MatchString(q.After):
		return &QueryError{"after", fmt.Sprintf("want a cursor of an earlier page (such as 1764547200000-0), got %.40q", q.After)}
	case q.Limit < 0 || q.Limit > MaxEventsLimit:
		return &QueryError{"limit", fmt.Sprintf("want 1 to %d, got %d", MaxEventsLimit, q.Limit)}
	}
	if q.Limit == 0 {
		q.Limit = DefaultEventsLimit
	}
	return nil
}

func (q *EventsQuery) matches(e *wire.Event) bool {
	return (q.Apps == nil || slices.Contains(q.Apps, e.App)) &&
		(q.Type == "" || e.Type == q.Type) &&
		(q.Job == "" || e.Job == q.Job) &&
		(q.User == "" || e.UserID == q.User)
}

// Events reads a page of hush:events: the events q selects, in the order
// it asks, from at most EventsScanned stream entries. An entry that is not
// an event hush wrote is passed over. A *QueryError names a bad field.
func (c *Client) Events(ctx context.Context, q EventsQuery) (wire.EventsPage, error) {
	if err := q.check(); err != nil {
		return wire.EventsPage{}, err
	}
	page := wire.EventsPage{Events: []wire.EventEntry{}}
	ascending := q.After != ""
	from := "+"
	switch {
	case ascending:
		from = "(" + q.After
	case q.Before != "":
		from = "(" + q.Before
	}
	for scanned := 0; scanned < EventsScanned; {
		n := int64(min(eventsBatch, EventsScanned-scanned))
		var msgs []redis.XMessage
		var err error
		if ascending {
			msgs, err = c.rdb.XRangeN(ctx, EventsStream, from, "+", n).Result()
		} else {
			msgs, err = c.rdb.XRevRangeN(ctx, EventsStream, from, "-", n).Result()
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return wire.EventsPage{}, fmt.Errorf("read %s: %w", EventsStream, err)
		}
		for _, m := range msgs {
			scanned++
			page.Next = m.ID
			s, _ := m.Values["event"].(string)
			var e wire.Event
			if json.Unmarshal([]byte(s), &e) != nil || !q.matches(&e) {
				continue
			}
			page.Events = append(page.Events, wire.EventEntry{Cursor: m.ID, Event: e})
			if len(page.Events) == q.Limit {
				return page, nil
			}
		}
		if int64(len(msgs)) < n {
			// The stream's end: nothing is older; newer events may
			// come, and are read after the last entry seen.
			if !ascending {
				page.Next = ""
			} else if page.Next == "" {
				page.Next = q.After
			}
			return page, nil
		}
		from = "(" + page.Next
	}
	return page, nil
}
