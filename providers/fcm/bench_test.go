package fcm

import (
	"context"
	"testing"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/providers/fake"
)

// BenchmarkSend measures sends/s from one process (one Sender) to the
// in-process fake FCM (HTTP/1.1, keep-alive), with 32 goroutines per CPU
// sending concurrently. Allocations count both the client and the fake
// server, which run in the same process.
func BenchmarkSend(b *testing.B) {
	f, s := startFake(b)
	f.Record(false)
	push := alertPush("fcm-bench-token")
	ctx := context.Background()
	if r := s.Send(ctx, push); r.Outcome != providers.Delivered {
		b.Fatalf("warm-up send: %+v", r)
	}
	b.ReportAllocs()
	b.SetParallelism(32)
	b.ResetTimer()
	cpu0 := fake.ProcessCPU()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if r := s.Send(ctx, push); r.Outcome != providers.Delivered {
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
