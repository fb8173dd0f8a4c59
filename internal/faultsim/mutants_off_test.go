//go:build !hushmutant

package faultsim

// mutantsBuilt: the packages carry no deliberate bugs (mutant_off.go).
const mutantsBuilt = false
