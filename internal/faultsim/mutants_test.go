package faultsim

import (
	"flag"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var flagMutant = flag.String("sim.mutant", "", "TestMutants: run only these mutants (comma-separated)")

// mutants are the deliberate bugs of the mutation self-test, each a few
// lines in worker/, throttle/ or payload/ behind mutant.On(name) or their
// own mutant(name) (built only with -tags hushmutant), each breaking one promise of
// docs/delivery.md, and the check that must catch it at its seeds.
var mutants = []struct {
	name  string
	check string // a failure's check must start with it
	seeds []uint64
	why   string
}{
	{"pendingCapOne", "never-lost", []uint64{1}, "the default cap on a user's held bookings is 1, not 100: held pushes end throttle_full"},
	{"countsLost", "counts-equal-arrivals", []uint64{1}, "a provider's 200 is recorded as a dead token"},
	{"resendSettled", "never-twice", []uint64{1}, "a retry sends to every device again, the delivered ones too"},
	{"expiryLate", "never-after-expiry", []uint64{1}, "deliveries expire 2 s after expires_at"},
	{"cancelNoGrace", "nothing-after-cancel", []uint64{1}, "a cancellation is answered once its mark is written, not after the grace that lets the calls earlier reads allowed start"},
	{"sendAtEarly", "never-early/send_at", []uint64{1}, "bookings are made from 1 s before send_at"},
	{"capWindowHalf", "never-early/cap", []uint64{1}, "the limiter counts each rule's window as half as long"},
	{"gapHalf", "never-early/gap", []uint64{1}, "the limiter keeps half the minimum gap"},
	{"quietOff", "never-early/quiet", []uint64{1, 5}, "the limiter forgets quiet hours"},
	{"rateDouble", "never-early/max_rate", []uint64{1}, "the pacer paces at twice max_rate"},
	{"retryAfterIgnored", "retry-after", []uint64{4, 5}, "a throttled retry waits the backoff, not the Retry-After"},
	{"collapseByBooking", "collapse", []uint64{1, 4, 5}, "collapse orders pushes by booking time, not accepted_at"},
	{"replacedBySelf", "collapse", []uint64{5}, "a collapsed push's event names its own job as its replacement"},
	{"optOutIgnored", "opted-out", []uint64{1}, "the worker sends a push whose category its user opted out of, as if the limiter had booked it"},
	{"optOutNoGrace", "opted-out", []uint64{1}, "an opt-out's write is answered at once, not after the grace that lets the calls earlier bookings allowed start"},
	{"appWaitNone", "unknown-app", []uint64{4}, "a delivery of an app a worker has not loaded fails at once"},
	{"noTTL", "memory", []uint64{1}, "the limiter's keys lose their expiry"},
	{"webhookNoRetry", "webhook", []uint64{1}, "a webhook POST that fails is given up instead of retried"},
	{"eventCancelledLost", "events", []uint64{1}, "a cancelled recipient's event is not written"},
	{"reasonLost", "lookup", []uint64{5}, "a failed recipient's reason is not kept with its job"},
}

// TestMutants runs the simulation once per mutant at its seeds and
// asserts that the check it breaks fails: every check can fail on a
// realistic bug of the promise it checks. It needs the packages built
// with their mutants (go test -tags hushmutant); each mutant costs a run
// of its seeds, so it is not part of the default CI step:
//
//	go test -tags hushmutant ./internal/faultsim -run TestMutants -v -timeout 30m
//	go test -tags hushmutant ./internal/faultsim -run TestMutants -sim.mutant gapHalf,quietOff -v
func TestMutants(t *testing.T) {
	if !mutantsBuilt {
		t.Skip("the mutation self-test needs the deliberate bugs built in: go test -tags hushmutant ./internal/faultsim -run TestMutants")
	}
	skipUnderRace(t)
	var only []string
	if *flagMutant != "" {
		only = strings.Split(*flagMutant, ",")
	}
	for _, m := range mutants {
		if only != nil && !slices.Contains(only, m.name) {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			t.Setenv("HUSH_MUTANT", m.name)
			seeds := m.seeds
			if *flagSeed != 0 {
				seeds = []uint64{*flagSeed}
			}
			for _, seed := range seeds {
				t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
					fs := simulate(t, seed, knownBroken{}, *flagCluster, true)
					var caught []string
					for _, f := range fs {
						if strings.HasPrefix(f.check, m.check) {
							caught = append(caught, f.String())
						}
					}
					var checks []string
					for _, f := range fs {
						if !slices.Contains(checks, f.check) {
							checks = append(checks, f.check)
						}
					}
					if len(caught) == 0 {
						t.Errorf("mutant %s (%s): [%s] did not fail; the run failed %v", m.name, m.why, m.check, checks)
						return
					}
					t.Logf("mutant %s caught by [%s] (%d failures; every check failed: %v); first:\n%s", m.name, m.check, len(caught), checks, caught[0])
				})
			}
		})
	}
}
