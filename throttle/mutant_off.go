//go:build !hushmutant

package throttle

import "context"

// mutant reports whether the deliberate bug name is on: never, in every
// build but the fault simulation's mutation self-test (mutant_on.go).
func mutant(string) bool { return false }

// mutantPolicy is p: the deliberate bugs of the rules are off
// (mutant_on.go).
func mutantPolicy(p Policy) Policy { return p }

// mutantPace is reqs: the deliberate bug of the send rate is off.
func mutantPace(reqs []PaceRequest) []PaceRequest { return reqs }

// mutantPersist does nothing: the memory's deliberate bug is off.
func mutantPersist(context.Context, rediser, []scriptCall) {}
