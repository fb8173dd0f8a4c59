//go:build hushmutant

package store

import "os"

// mutant reports whether the deliberate bug name is on: the fault
// simulation's mutation self-test (internal/faultsim TestMutants, built
// with -tags hushmutant) names one in HUSH_MUTANT and checks that the
// simulation's checks catch it. Production builds carry mutant_off.go.
func mutant(name string) bool { return os.Getenv("HUSH_MUTANT") == name }
