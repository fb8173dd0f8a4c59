package groupcommit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Flush writes items in one go. It returns one result per item, in order,
// or an error that is every item's answer. An item's own failure belongs in
// its result.
type Flush[T, R any] func(ctx context.Context, items []T) ([]R, error)

// Options says when a Group flushes.
type Options struct {
	// Linger is how long a batch waits for more calls (see the package
	// doc for when it starts).
	Linger time.Duration
	// MaxSize caps the calls of one flush; 0: no cap. A lingering batch
	// that reaches it is flushed at once.
	MaxSize int
	// Serial runs one flush at a time (see the package doc).
	Serial bool
	// Timeout bounds one flush; 0: none.
	Timeout time.Duration
}

// Group gathers calls into group commits. The zero value is not usable:
// use New.
type Group[T, R any] struct {
	flush Flush[T, R]
	opt   Options

	mu      sync.Mutex
	waiting []*call[T, R]
	running bool // a runner is taking batches (while anything waits)
	// want: while the runner lingers, how many waiting calls end the
	// linger (0: only its timer does); wake is signalled then.
	want  int
	wake  chan struct{}
	hurry int           // Drains under way: nothing lingers
	busy  int           // the runner and flushes under way
	idle  chan struct{} // closed when busy drops to 0; nil while it is 0
}

// call is one caller's item and where its answer goes.
type call[T, R any] struct {
	item T
	done chan struct{}
	res  R
	err  error
}

// New returns a Group writing with flush.
func New[T, R any](flush Flush[T, R], opt Options) *Group[T, R] {
	return &Group[T, R]{flush: flush, opt: opt, wake: make(chan struct{}, 1)}
}

// Do adds item to the next flush and returns its result, or the flush's
// error, once it is written. When ctx ends first Do returns ctx's error:
// the item may still be written, unless ctx had ended before Do was called.
func (g *Group[T, R]) Do(ctx context.Context, item T) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	c := &call[T, R]{item: item, done: make(chan struct{})}
	g.mu.Lock()
	g.waiting = append(g.waiting, c)
	if !g.running {
		g.running = true
		g.add()
		go g.run()
	} else if g.want > 0 && len(g.waiting) >= g.want {
		g.signal()
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// Waiting is how many calls wait for a flush to take them.
func (g *Group[T, R]) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.waiting)
}

// Drain flushes the calls waiting without lingering and waits until no
// flush is under way, or ctx ends (then it returns ctx's error). Calls made
// meanwhile are flushed without lingering too.
func (g *Group[T, R]) Drain(ctx context.Context) error {
	g.mu.Lock()
	g.hurry++
	g.signal()
	idle := g.idle
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.hurry--
		g.mu.Unlock()
	}()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run takes batches and flushes them while calls wait.
func (g *Group[T, R]) run() {
	defer g.release()
	answered := 0 // calls the serial flush before answered
	for {
		g.linger(answered)
		g.mu.Lock()
		n := len(g.waiting)
		if g.opt.MaxSize > 0 {
			n = min(n, g.opt.MaxSize)
		}
		batch := g.waiting[:n:n]
		g.waiting = g.waiting[n:]
		if len(g.waiting) == 0 {
			g.waiting = nil // the taken calls are not kept
		}
		last := len(g.waiting) == 0 && (!g.opt.Serial || n == 0)
		if last {
			g.running = false
		}
		if !last && !g.opt.Serial {
			g.add()
		}
		g.mu.Unlock()
		switch {
		case n == 0:
			return
		case last || g.opt.Serial:
			g.write(batch)
			if last {
				return
			}
			answered = n
		default:
			go func() {
				defer g.release()
				g.write(batch)
			}()
		}
	}
}

// linger waits until the next batch may be taken: at once for the first
// batch of a serial run or while a Drain is under way; else until Linger
// passes or enough calls wait (MaxSize, or in serial mode as many more as
// the flush before answered).
func (g *Group[T, R]) linger(answered int) {
	if g.opt.Linger <= 0 || (g.opt.Serial && answered == 0) {
		return
	}
	g.mu.Lock()
	want := g.opt.MaxSize
	if g.opt.Serial {
		want = len(g.waiting) + answered
		if g.opt.MaxSize > 0 {
			want = min(want, g.opt.MaxSize)
		}
	}
	if g.enough(want) {
		g.mu.Unlock()
		return
	}
	g.want = want
	g.mu.Unlock()
	timer := time.NewTimer(g.opt.Linger)
	defer timer.Stop()
	for done := false; !done; {
		select {
		case <-g.wake:
		case <-timer.C:
			done = true
		}
		g.mu.Lock()
		if done || g.enough(want) {
			g.want = 0
			done = true
		}
		g.mu.Unlock()
	}
}

// enough reports whether a linger for want waiting calls ends now. g.mu is
// held.
func (g *Group[T, R]) enough(want int) bool {
	return g.hurry > 0 || (want > 0 && len(g.waiting) >= want)
}

// signal wakes a lingering runner. g.mu is held.
func (g *Group[T, R]) signal() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// write flushes batch and answers its callers.
func (g *Group[T, R]) write(batch []*call[T, R]) {
	items := make([]T, len(batch))
	for i, c := range batch {
		items[i] = c.item
	}
	res, err := g.flushSafely(items)
	if err == nil && len(res) != len(items) {
		err = fmt.Errorf("group commit of %d calls answered %d", len(items), len(res))
	}
	for i, c := range batch {
		if err != nil {
			c.err = err
		} else {
			c.res = res[i]
		}
		close(c.done)
	}
}

// flushSafely runs the flush under its own context; a panic is its error,
// so that no caller waits for an answer that never comes.
func (g *Group[T, R]) flushSafely(items []T) (res []R, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("group commit of %d calls: panic: %v", len(items), p)
		}
	}()
	ctx := context.Background()
	if g.opt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.opt.Timeout)
		defer cancel()
	}
	return g.flush(ctx, items)
}

// add counts a runner or flush under way. g.mu is held.
func (g *Group[T, R]) add() {
	if g.busy == 0 {
		g.idle = make(chan struct{})
	}
	g.busy++
}

// release ends what add counted.
func (g *Group[T, R]) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.busy--; g.busy == 0 {
		close(g.idle)
		g.idle = nil
	}
}
