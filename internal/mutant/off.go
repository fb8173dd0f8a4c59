//go:build !hushmutant

package mutant

// On reports whether the deliberate bug name is on: never, in every build
// but the mutation self-test's (on.go).
func On(string) bool { return false }
