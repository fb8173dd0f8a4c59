//go:build !hushmutant

package store

// mutant reports whether the deliberate bug name is on: never, in every
// build but the fault simulation's mutation self-test (mutant_on.go).
func mutant(string) bool { return false }
