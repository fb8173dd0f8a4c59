package worker

import (
	"sync"
	"time"
)

// goPool runs functions on goroutines that outlive them. A provider call
// (HTTP/2 framing, TLS, JSON) and a task handler (go-redis, JSON) grow a
// fresh goroutine's stack several times; a goroutine that already grew it
// runs the next one without copying stacks again (runtime.copystack was
// about 9 % of the pipeline's CPU with one new goroutine per push). A
// goroutine idle for goPoolIdle ends, so an idle worker keeps none.
type goPool struct {
	work chan func()
}

const goPoolIdle = 5 * time.Second

func newGoPool() *goPool { return &goPool{work: make(chan func())} }

// Go runs f on an idle pool goroutine, or on a new one when none is idle.
func (p *goPool) Go(f func()) {
	select {
	case p.work <- f:
	default:
		go p.loop(f)
	}
}

func (p *goPool) loop(f func()) {
	t := time.NewTimer(goPoolIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(goPoolIdle)
		select {
		case f = <-p.work:
		case <-t.C:
			return
		}
	}
}

// all runs calls concurrently, all but the last on pool goroutines and the
// last on the caller's, and waits for them.
func (p *goPool) all(calls []func()) {
	if len(calls) == 0 {
		return
	}
	var wg sync.WaitGroup
	wg.Add(len(calls) - 1)
	for _, f := range calls[:len(calls)-1] {
		p.Go(func() { defer wg.Done(); f() })
	}
	calls[len(calls)-1]()
	wg.Wait()
}

// Run runs f on a pool goroutine and waits for it. A panic in f is raised
// again in the caller's goroutine (where Asynq recovers it).
func (p *goPool) Run(f func()) {
	done := make(chan any, 1)
	p.Go(func() {
		defer func() { done <- recover() }()
		f()
	})
	if v := <-done; v != nil {
		panic(v)
	}
}
