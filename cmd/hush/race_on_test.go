//go:build race

package main

// raceDetector: this test binary runs under the race detector, which
// slows the fakes (they run in the test process) several times over.
const raceDetector = true
