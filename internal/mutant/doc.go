// Package mutant switches on the deliberate bugs of the fault
// simulation's mutation self-test (internal/faultsim TestMutants): code
// of the worker and its parts asks On("name") where a realistic bug would
// go, and only a build with -tags hushmutant, run with HUSH_MUTANT=name,
// takes the buggy branch. Package throttle keeps its own copy, as it
// imports only the standard library and go-redis.
//
// It imports the standard library only.
package mutant
