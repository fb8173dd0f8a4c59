//go:build hushmutant

package throttle

import (
	"context"
	"os"
	"slices"

	"github.com/redis/go-redis/v9"
)

// mutant reports whether the deliberate bug name is on: the fault
// simulation's mutation self-test (internal/faultsim TestMutants, built
// with -tags hushmutant) names one in HUSH_MUTANT and checks that the
// simulation's checks catch it. Production builds carry mutant_off.go.
func mutant(name string) bool { return os.Getenv("HUSH_MUTANT") == name }

// mutantPolicy is p with the rules' deliberate bugs: capWindowHalf
// counts every window as half as long, gapHalf keeps half the minimum
// gaps, quietOff forgets quiet hours.
func mutantPolicy(p Policy) Policy {
	p = copyPolicy(p)
	half := func(ls []Limit) []Limit {
		ls = slices.Clone(ls)
		for i := range ls {
			ls[i].Window /= 2
		}
		return ls
	}
	switch {
	case mutant("capWindowHalf"):
		p.Limits = half(p.Limits)
		for n, c := range p.Categories {
			c.Limits = half(c.Limits)
			p.Categories[n] = c
		}
	case mutant("gapHalf"):
		p.MinGap /= 2
		for n, c := range p.Categories {
			c.MinGap /= 2
			p.Categories[n] = c
		}
	case mutant("quietOff"):
		for n, c := range p.Categories {
			c.Quiet = nil
			p.Categories[n] = c
		}
	}
	return p
}

// mutantPace is reqs with the send rate's deliberate bug: rateDouble
// paces at twice the rate.
func mutantPace(reqs []PaceRequest) []PaceRequest {
	if !mutant("rateDouble") {
		return reqs
	}
	reqs = slices.Clone(reqs)
	for i := range reqs {
		reqs[i].Rate *= 2
	}
	return reqs
}

// mutantPersist is the memory's deliberate bug, noTTL: the keys a
// reservation wrote lose their expiry.
func mutantPersist(ctx context.Context, rdb rediser, calls []scriptCall) {
	c, ok := rdb.(redis.Cmdable)
	if !ok {
		return
	}
	for _, call := range calls {
		for _, k := range call.keys {
			c.Persist(ctx, k)
		}
	}
}
