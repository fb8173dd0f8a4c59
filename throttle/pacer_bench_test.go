package throttle_test

import (
	"strconv"
	"testing"

	"github.com/hushpush/hush/throttle"
)

// paceBenchCases are the batches the pacer benchmarks pace per call, at
// 1000 sends per second (the key's backlog grows ahead of now, which costs
// nothing more).
func paceBenchCases() []struct {
	name string
	reqs []throttle.PaceRequest
} {
	repeat := func(n int, q func(i int) throttle.PaceRequest) []throttle.PaceRequest {
		out := make([]throttle.PaceRequest, n)
		for i := range out {
			out[i] = q(i)
		}
		return out
	}
	return []struct {
		name string
		reqs []throttle.PaceRequest
	}{
		{"1send", []throttle.PaceRequest{{Key: "fcm:app", N: 1, Rate: 1000}}},
		{"25sends", []throttle.PaceRequest{{Key: "fcm:app", N: 25, Rate: 1000}}},
		{"25requests1key", repeat(25, func(int) throttle.PaceRequest {
			return throttle.PaceRequest{Key: "fcm:app", N: 1, Rate: 1000}
		})},
		{"25keys", repeat(25, func(i int) throttle.PaceRequest {
			return throttle.PaceRequest{Key: "fcm:app" + strconv.Itoa(i), N: 1, Rate: 1000}
		})},
	}
}

// sends is the number of sends a batch asks for.
func sends(reqs []throttle.PaceRequest) int {
	n := 0
	for _, q := range reqs {
		n += q.N
	}
	return n
}

// BenchmarkPacer paces one batch per call on a redis-server of its own
// (one goroutine, the script cached) and reports the server's cost:
//
//	redis-cpu-us/call   Redis CPU (user + system) per Pace call
//	redis-calls/call    commands Redis ran per call, the script's included
//	redis-cpu-us/send   Redis CPU per send granted
//
//	go test -run '^$' -bench Pacer -benchtime 20000x ./throttle/
func BenchmarkPacer(b *testing.B) {
	for _, c := range paceBenchCases() {
		b.Run(c.name, func(b *testing.B) {
			rdb := benchRedis(b, 1)
			p, err := throttle.NewPacer(rdb, throttle.Options{Prefix: "bench:pace:"})
			if err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			if _, err := p.Pace(ctx, c.reqs); err != nil { // caches the script
				b.Fatal(err)
			}
			cpu0, err := redisCPU(ctx, rdb)
			if err != nil {
				b.Fatal(err)
			}
			calls0, err := redisCalls(ctx, rdb)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				if _, err := p.Pace(ctx, c.reqs); err != nil {
					b.Fatal(err)
				}
				n++
			}
			cpu1, err := redisCPU(ctx, rdb)
			if err != nil {
				b.Fatal(err)
			}
			calls1, err := redisCalls(ctx, rdb)
			if err != nil {
				b.Fatal(err)
			}
			cpu := float64((cpu1 - cpu0).Microseconds())
			b.ReportMetric(cpu/float64(n), "redis-cpu-us/call")
			b.ReportMetric(float64(calls1-calls0)/float64(n), "redis-calls/call")
			b.ReportMetric(cpu/float64(n*sends(c.reqs)), "redis-cpu-us/send")
		})
	}
}

// BenchmarkMemoryPacer is the in-process pacer on the same batches.
func BenchmarkMemoryPacer(b *testing.B) {
	for _, c := range paceBenchCases() {
		b.Run(c.name, func(b *testing.B) {
			p := throttle.NewMemoryPacer(throttle.Options{})
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Pace(ctx, c.reqs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
