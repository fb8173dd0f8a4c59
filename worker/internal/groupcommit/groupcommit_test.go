package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// forever is a linger no test waits out: a batch goes when it is full, or
// drained.
const forever = time.Hour

// flushes records what each flush wrote; a flush answers each item with
// its double. When gate is set, a flush waits for a value on it.
type flushes struct {
	mu      sync.Mutex
	batches [][]int
	started chan struct{} // a value per flush started (buffered)
	gate    chan struct{}
	err     error
}

func newFlushes() *flushes { return &flushes{started: make(chan struct{}, 100)} }

func (f *flushes) flush(ctx context.Context, items []int) ([]int, error) {
	f.mu.Lock()
	f.batches = append(f.batches, slices.Clone(items))
	gate, err := f.gate, f.err
	f.mu.Unlock()
	f.started <- struct{}{}
	if gate != nil {
		<-gate
	}
	if err != nil {
		return nil, err
	}
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = 2 * it
	}
	return out, nil
}

func (f *flushes) written() [][]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.batches)
}

// waitUntil waits for cond, checked as the group's goroutines run.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(time.Millisecond):
		}
	}
}

// Concurrent callers share one flush, each answered with its own result.
func TestConcurrentCallersShareAFlush(t *testing.T) {
	const n = 50
	f := newFlushes()
	g := New(f.flush, Options{Linger: forever, MaxSize: n})
	got := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r, err := g.Do(t.Context(), i)
			if err != nil {
				t.Error(err)
			}
			got[i] = r
		})
	}
	wg.Wait()
	for i, r := range got {
		if r != 2*i {
			t.Errorf("caller %d got %d, want its own result %d", i, r, 2*i)
		}
	}
	if b := f.written(); len(b) != 1 || len(b[0]) != n {
		t.Errorf("flushes %v, want one of all %d calls", b, n)
	}
}

// A lingering batch is flushed when its linger passes.
func TestLingerEnds(t *testing.T) {
	f := newFlushes()
	g := New(f.flush, Options{Linger: time.Millisecond})
	if r, err := g.Do(t.Context(), 4); r != 8 || err != nil {
		t.Errorf("got %d, %v; want 8", r, err)
	}
}

// MaxSize caps a flush; the rest go in the next ones (the last when the
// group is drained).
func TestMaxSizeCapsAFlush(t *testing.T) {
	f := newFlushes()
	g := New(f.flush, Options{Linger: forever, MaxSize: 3})
	var wg sync.WaitGroup
	for i := range 7 {
		wg.Go(func() {
			if r, err := g.Do(t.Context(), i); r != 2*i || err != nil {
				t.Errorf("call %d: %d, %v", i, r, err)
			}
		})
	}
	waitUntil(t, "two flushes and one call waiting", func() bool { return len(f.written()) == 2 && g.Waiting() == 1 })
	if err := g.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var sizes []int
	for _, b := range f.written() {
		sizes = append(sizes, len(b))
	}
	if diff := cmp.Diff([]int{3, 3, 1}, sizes); diff != "" {
		t.Errorf("flush sizes (-want +got):\n%s", diff)
	}
}

// A flush that fails, or panics, answers each of its callers with the
// error, and the next call is written as usual.
func TestFailedFlushAnswersEveryCaller(t *testing.T) {
	boom := errors.New("boom")
	for _, tt := range []struct {
		name  string
		flush Flush[int, int]
		want  func(error) bool
	}{
		{"error", func(context.Context, []int) ([]int, error) { return nil, boom }, func(err error) bool { return errors.Is(err, boom) }},
		{"panic", func(context.Context, []int) ([]int, error) { panic("a flush that panics") }, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "panic: a flush that panics")
		}},
		{"short answer", func(context.Context, []int) ([]int, error) { return []int{1}, nil }, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), "answered 1")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fail := true
			var mu sync.Mutex
			g := New(func(ctx context.Context, items []int) ([]int, error) {
				mu.Lock()
				f := fail
				fail = false
				mu.Unlock()
				if f {
					return tt.flush(ctx, items)
				}
				return items, nil
			}, Options{Linger: forever, MaxSize: 3})
			var wg sync.WaitGroup
			errs := make([]error, 3)
			for i := range errs {
				wg.Go(func() { _, errs[i] = g.Do(t.Context(), i) })
			}
			wg.Wait()
			for i, err := range errs {
				if !tt.want(err) {
					t.Errorf("caller %d: %v", i, err)
				}
			}
			next := make(chan error, 1)
			go func() {
				r, err := g.Do(t.Context(), 9)
				if err == nil && r != 9 {
					err = fmt.Errorf("answered %d", r)
				}
				next <- err
			}()
			waitUntil(t, "the next call waiting", func() bool { return g.Waiting() == 1 })
			if err := g.Drain(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := <-next; err != nil {
				t.Errorf("the next call: %v; want it written", err)
			}
		})
	}
}

// A caller whose context ends stops waiting and gets the context's error;
// its item is still written. A caller whose context had ended already adds
// nothing.
func TestCallerContextEnds(t *testing.T) {
	f := newFlushes()
	f.gate = make(chan struct{})
	g := New(f.flush, Options{Serial: true})
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		_, err := g.Do(ctx, 1)
		errc <- err
	}()
	<-f.started // the flush of 1 is under way
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("a caller whose context ended got %v, want context.Canceled", err)
	}
	f.gate <- struct{}{}
	if _, err := g.Do(ctx, 2); !errors.Is(err, context.Canceled) {
		t.Errorf("a call with an ended context: %v, want context.Canceled", err)
	}
	close(f.gate)
	if err := g.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]int{{1}}, f.written()); diff != "" {
		t.Errorf("flushes (-want +got):\n%s", diff)
	}
}

// Drain flushes the lingering calls at once and waits for every flush
// under way; a Drain whose context ends first says so.
func TestDrain(t *testing.T) {
	f := newFlushes()
	f.gate = make(chan struct{})
	g := New(f.flush, Options{Linger: forever})
	var wg sync.WaitGroup
	answered := make([]bool, 3)
	for i := range answered {
		wg.Go(func() {
			if r, err := g.Do(t.Context(), i); r == 2*i && err == nil {
				answered[i] = true
			}
		})
	}
	waitUntil(t, "three calls waiting", func() bool { return g.Waiting() == 3 })
	drained := make(chan error, 1)
	go func() { drained <- g.Drain(t.Context()) }()
	<-f.started // the lingering batch is flushed at once
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := g.Drain(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("a Drain whose context ended while a flush is under way: %v", err)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned (%v) while a flush was under way", err)
	default:
	}
	close(f.gate)
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	// Every caller is answered once Drain returns.
	wg.Wait()
	if !slices.Equal(answered, []bool{true, true, true}) {
		t.Errorf("answered %v", answered)
	}
	if err := g.Drain(t.Context()); err != nil {
		t.Errorf("Drain of an idle group: %v", err)
	}
}

// A serial group runs one flush at a time: a call into an idle group is
// flushed at once; calls arriving meanwhile are flushed when it ends,
// after waiting for as many callers as it answered to come back (then at
// once), or for the linger.
func TestSerial(t *testing.T) {
	for _, comesBack := range []bool{true, false} {
		t.Run(fmt.Sprintf("comes-back=%v", comesBack), func(t *testing.T) {
			f := newFlushes()
			f.gate = make(chan struct{})
			g := New(f.flush, Options{Serial: true, Linger: forever})
			var wg sync.WaitGroup
			first := make(chan struct{})
			wg.Go(func() {
				g.Do(t.Context(), 1)
				close(first)
			})
			<-f.started // flushed at once, although Linger is forever
			for _, i := range []int{2, 3, 4} {
				wg.Go(func() { g.Do(t.Context(), i) })
			}
			waitUntil(t, "three calls waiting", func() bool { return g.Waiting() == 3 })
			if n := len(f.written()); n != 1 {
				t.Fatalf("%d flushes while the first is under way, want 1", n)
			}
			f.gate <- struct{}{}
			<-first
			waitUntil(t, "the next flush to linger", func() bool {
				g.mu.Lock()
				defer g.mu.Unlock()
				return g.want > 0
			})
			if comesBack {
				wg.Go(func() { g.Do(t.Context(), 5) })
			} else {
				go g.Drain(t.Context())
			}
			<-f.started
			close(f.gate)
			wg.Wait()
			want := [][]int{{1}, {2, 3, 4, 5}}
			if !comesBack {
				want = [][]int{{1}, {2, 3, 4}}
			}
			got := f.written()
			slices.Sort(got[len(got)-1])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("flushes (-want +got):\n%s", diff)
			}
		})
	}
}
