//go:build race

package faultsim

// raceEnabled: this test binary runs under the race detector.
const raceEnabled = true
