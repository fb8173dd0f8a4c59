//go:build hushmutant

package mutant

import "os"

// On reports whether the deliberate bug name is on: the mutation
// self-test names one in HUSH_MUTANT.
func On(name string) bool { return os.Getenv("HUSH_MUTANT") == name }
