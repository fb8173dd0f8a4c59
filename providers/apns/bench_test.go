package apns_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/apns"
	"github.com/hushpush/hush/providers/fake"
)

// BenchmarkSend measures sends/s from one process (one Sender, one HTTP/2
// connection) to the in-process fake APNs, with 32 goroutines per CPU
// sending concurrently. Allocations count both the client and the fake
// server, which run in the same process.
//
//   - same-push sends one push to one device again and again: every
//     header is in HPACK's table after the first.
//   - distinct-pushes gives each send a device and a push id of its own,
//     as a fan-out does: the request path (:path /3/device/<token>) and
//     apns-id are new values on every request.
func BenchmarkSend(b *testing.B) {
	f, s := startFake(b)
	f.Record(false)
	ctx := context.Background()
	if r := s.Send(ctx, alertPush(deviceToken)); r.Outcome != providers.Delivered {
		b.Fatalf("warm-up send: %+v", r)
	}
	b.Run("same-push", func(b *testing.B) {
		push := alertPush(deviceToken)
		benchSends(b, s, func(int64) providers.Push { return push })
	})
	b.Run("distinct-pushes", func(b *testing.B) {
		benchSends(b, s, func(n int64) providers.Push {
			return alertPush(fmt.Sprintf("%064x", n))
		})
	})
}

// benchSends sends b.N pushes through s from 32 goroutines per CPU, the
// n-th built by push(n).
func benchSends(b *testing.B, s *apns.Sender, push func(n int64) providers.Push) {
	ctx := context.Background()
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	cpu0 := fake.ProcessCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r := s.Send(ctx, push(next.Add(1))); r.Outcome != providers.Delivered {
				b.Errorf("send: %+v", r)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
	// CPU of the whole process (client and fake) per send: on a shared
	// machine sends/s depends on the neighbours, this does not.
	b.ReportMetric(float64((fake.ProcessCPU()-cpu0).Microseconds())/float64(b.N), "cpu-us/send")
}
