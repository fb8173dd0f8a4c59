package throttle_test

import (
	"testing"

	"github.com/hushpush/hush/internal/redistest"
	"github.com/hushpush/hush/throttle"
)

// FuzzTrace replays arbitrary traces (decodeTrace makes any bytes a valid
// policy and a sequence of operations) on both implementations and the
// brute-force model. Without -fuzz it runs the seeds below:
//
//	go test -run '^$' -fuzz FuzzTrace -fuzztime 60s ./throttle/
func FuzzTrace(f *testing.F) {
	f.Add([]byte{1, 2, 40, 0})                                                                                                   // 3/41ms, no gap, no ops
	f.Add([]byte{1, 1, 9, 5, 0, 1, 0, 0, 1, 0, 0, 1, 5, 1, 0, 1, 5})                                                             // 2/10ms, gap 5ms: allows then reserves
	f.Add([]byte{2, 0, 59, 3, 19, 12, 5, 0, 0, 5, 1, 1, 5, 1, 2, 8, 1, 1, 5, 3, 0, 0, 4, 1})                                     // two limits, releases
	f.Add([]byte{0, 0, 20, 5, 0, 0, 5, 0, 1, 6, 1, 1, 9, 2, 0, 8, 0, 1, 0, 1, 3})                                                // gap only, reserve/release/status
	f.Add([]byte{1, 0, 2, 30, 5, 0, 0, 5, 0, 1, 5, 0, 2, 5, 0, 3, 8, 0, 1, 0, 0, 0, 4, 0, 0})                                    // 1/3ms with a 30ms gap: gap > window
	f.Add([]byte{1, 0, 39, 200, 5, 0, 0, 5, 0, 1, 5, 0, 2, 5, 0, 3, 5, 0, 160, 5, 1, 4, 8, 0, 1, 5, 0, 3, 5, 1, 200, 5, 0, 179}) // 1/40ms, gap 14ms, MaxPending 2: full, then NotAfter
	// Extended traces (first byte >= 3): a margin, a clock change, quiet
	// hours, categories; every reserve and status op has two more bytes.
	f.Add([]byte{4, 1, 20, 7, 5, 0, 3, 6, 10, 50, 1, 1, 2, 10, 5, 4, 5, 60, 10,
		5, 3, 0, 7, 200, 5, 0, 1, 13, 0, 5, 0, 2, 1, 150, 5, 0, 3, 6, 0, 9, 1, 4, 3, 0, 2, 5, 0, 3, 12, 140}) // categories, quiet in London, collapse keys
	f.Add([]byte{3, 10, 9, 1, 1, 10, 2, 66, 3, 2, 1, 0, 3, 1, 0,
		5, 1, 0, 6, 129, 5, 1, 1, 6, 0, 5, 0, 2, 6, 0, 9, 1, 0, 1, 0, 5, 2, 160, 6, 200}) // spring forward, global=off, not-before
	rdb := redistest.Client(f)
	impls := []struct {
		name string
		new  newLimiterFunc
	}{{"memory", newMemoryLimiter}, {"redis", redisLimiters(rdb)}}
	f.Fuzz(func(t *testing.T, b []byte) {
		tr := decodeTrace(b)
		for _, impl := range impls {
			clock := newFakeClock()
			l := impl.new(t, tr.policy, throttle.Options{Clock: clock.Now, MaxPending: tr.maxPending, CollapseMargin: tr.margin})
			t.Run(impl.name, func(t *testing.T) { checkTrace(t, l, clock, tr) })
		}
	})
}
