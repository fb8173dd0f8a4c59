package faultsim

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// A feature the workload leaves out by default because it breaks a
// promise on today's code. The check it would fail stays on: -sim.broken=name
// (or all) puts the feature back and reproduces the failure.
const (
	// skewStall: workers' clocks skewed by up to -sim.skew (2 s) instead of
	// skewSafe.
	skewStall = "skewStall"
)

// skewSafe is the largest clock skew the workload gives a worker unless
// skewStall is on.
const skewSafe = 300 * time.Millisecond

// knownBroken lists every switch; all are off by default.
var knownBrokenNames = []string{skewStall}

// knownBroken is the set of switches turned on.
type knownBroken map[string]bool

func (k knownBroken) on(name string) bool { return k[name] }

// parseKnownBroken reads -sim.broken: names separated by commas, or all.
func parseKnownBroken(s string) (knownBroken, error) {
	k := knownBroken{}
	for f := range strings.SplitSeq(s, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case f == "all":
			for _, n := range knownBrokenNames {
				k[n] = true
			}
		case slices.Contains(knownBrokenNames, f):
			k[f] = true
		default:
			return nil, fmt.Errorf("-sim.broken: unknown switch %q (have %s, all)", f, strings.Join(knownBrokenNames, ", "))
		}
	}
	return k, nil
}
