package worker

import (
	"sync/atomic"
	"testing"
)

func TestGoPool(t *testing.T) {
	p := newGoPool()
	t.Run("all runs every call and waits", func(t *testing.T) {
		var n atomic.Int64
		calls := make([]func(), 50)
		for i := range calls {
			calls[i] = func() { n.Add(int64(i)) }
		}
		p.all(calls)
		if got, want := n.Load(), int64(49*50/2); got != want {
			t.Errorf("sum %d, want %d", got, want)
		}
		p.all(nil)
	})
	t.Run("Run raises a panic in the caller", func(t *testing.T) {
		defer func() {
			if v := recover(); v != "boom" {
				t.Errorf("recovered %v, want boom", v)
			}
		}()
		p.Run(func() { panic("boom") })
		t.Error("Run returned after a panic")
	})
	t.Run("Run waits for its function", func(t *testing.T) {
		done := false
		p.Run(func() { done = true })
		if !done {
			t.Error("Run returned before its function ended")
		}
	})
}
