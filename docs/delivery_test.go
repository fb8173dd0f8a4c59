package docs_test

import (
	"fmt"
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

// TestDeliveryRateBound: docs/delivery.md states the max_rate bound that
// worker.MaxRateBound computes and the worker's tests check against the
// fake providers' arrivals.
func TestDeliveryRateBound(t *testing.T) {
	doc := readDoc(t, "delivery.md")
	want := fmt.Sprintf("(at 5/s: %d; at 500/s: %d)", worker.MaxRateBound(5), worker.MaxRateBound(500))
	if !strings.Contains(doc, "R + 1 + ⌈2 × R × 0.025⌉") || !strings.Contains(doc, want) {
		t.Errorf("docs/delivery.md does not state the rate bound R + 1 + ⌈2 × R × 0.025⌉ with its examples %q", want)
	}
}

// TestDeliveryCallTimeout: docs/delivery.md states the one provider call
// timeout, providers.CallTimeout, and the answer's read bounds.
func TestDeliveryCallTimeout(t *testing.T) {
	doc := readDoc(t, "delivery.md")
	for _, want := range []string{
		fmt.Sprintf("timeouts (%d s per call, `providers.CallTimeout`", int(providers.CallTimeout.Seconds())),
		fmt.Sprintf("not answered %d s\n  (`providers.CallTimeout`)", int(providers.CallTimeout.Seconds())),
		fmt.Sprintf("to at most\n%d KiB within %g s", providers.MaxAnswerBody>>10, providers.AnswerReadTimeout.Seconds()),
		fmt.Sprintf("(one call's %d s,", int(providers.CallTimeout.Seconds())),
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/delivery.md does not say %q", want)
		}
	}
	if worker.MaxSendDuration != providers.CallTimeout {
		t.Errorf("worker.MaxSendDuration %s, providers.CallTimeout %s: one call timeout", worker.MaxSendDuration, providers.CallTimeout)
	}
}
