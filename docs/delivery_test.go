package docs_test

import (
	"strings"
	"testing"

	"github.com/hushpush/hush/providers"
	"github.com/hushpush/hush/worker"
)

// TestDeliveryOutcomes: docs/delivery.md's outcome table has one row per
// providers.Outcome, named as logs and metrics name it.
func TestDeliveryOutcomes(t *testing.T) {
	var want []string
	for o := providers.Outcome(0); ; o++ {
		s := o.String()
		if strings.HasPrefix(s, "outcome(") {
			break // past the last named outcome
		}
		want = append(want, s)
	}
	got := firstColumn(table(t, readDoc(t, "delivery.md"), "| outcome | provider answers | what hush does |"))
	if d := sameSet(want, got); d != "" {
		t.Errorf("docs/delivery.md's outcomes and providers.Outcome differ %s", d)
	}
}

// TestDeliveryFinalStates: docs/delivery.md's table of final states lists
// exactly worker.FinalStates.
func TestDeliveryFinalStates(t *testing.T) {
	got := firstColumn(table(t, readDoc(t, "delivery.md"), "| final state | meaning |"))
	if d := sameSet(worker.FinalStates(), got); d != "" {
		t.Errorf("docs/delivery.md's final states and worker.FinalStates differ %s", d)
	}
}
