//go:build hushmutant

package faultsim

// mutantsBuilt: the packages carry their deliberate bugs (mutant_on.go),
// switched by HUSH_MUTANT.
const mutantsBuilt = true
