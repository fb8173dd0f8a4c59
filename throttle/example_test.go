package throttle_test

import (
	"context"
	"fmt"
	"time"

	"github.com/hushpush/hush/throttle"
)

// Two pushes a minute per user, at least ten seconds apart. Allow decides
// now; Reserve books the earliest allowed instant, so deferred pushes wake
// at distinct times.
func Example() {
	p, err := throttle.ParsePolicy("2/1m", "10s")
	if err != nil {
		panic(err)
	}
	now := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	l, err := throttle.NewMemory(p, throttle.Options{Clock: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for range 2 {
		d, _ := l.Allow(ctx, "u-42")
		fmt.Printf("allowed=%v retry-after=%v denied-by=%q remaining=%v\n", d.Allowed, d.RetryAfter, d.DeniedBy, d.Remaining)
	}
	for _, id := range []string{"push-1", "push-2", "push-3", "push-1"} {
		r, _ := l.Reserve(ctx, "u-42", id)
		fmt.Printf("%s: wait %v (existing %v)\n", id, r.Wait, r.Existing)
	}
	// Output:
	// allowed=true retry-after=0s denied-by="" remaining=[1]
	// allowed=false retry-after=10s denied-by="min-gap 10s" remaining=[1]
	// push-1: wait 10s (existing false)
	// push-2: wait 1m0s (existing false)
	// push-3: wait 1m10s (existing false)
	// push-1: wait 10s (existing true)
}
