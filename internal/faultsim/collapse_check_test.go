package faultsim

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestWronglyCollapsed checks the collapse check's judgment on its own:
// pushes are ordered by the accepted_at hush recorded, not by when the
// simulation submitted them or whether their answer arrived.
func TestWronglyCollapsed(t *testing.T) {
	at := func(ms int) time.Time { return time.UnixMilli(1_700_000_000_000 + int64(ms)) }
	tests := []struct {
		name string
		ps   []collapsePush
		want []string
	}{
		{
			name: "the newest is collapsed",
			ps:   []collapsePush{{job: "a", accepted: at(0)}, {job: "b", accepted: at(500), collapsed: true}},
			want: []string{"b"},
		},
		{
			name: "an older one is collapsed",
			ps:   []collapsePush{{job: "a", accepted: at(0), collapsed: true}, {job: "b", accepted: at(500)}},
		},
		{
			// The simulation's submission of b was answered with errors
			// only, but hush accepted it: b counts as any other push.
			name: "held push collapsed by one whose answer was lost",
			ps: []collapsePush{{job: "old", accepted: at(0)}, {job: "held", accepted: at(500), collapsed: true},
				{job: "lost-answer", accepted: at(1800)}},
		},
		{
			name: "a tie in one millisecond may go either way",
			ps:   []collapsePush{{job: "a", accepted: at(7), collapsed: true}, {job: "b", accepted: at(7)}},
		},
		{
			name: "the newer of two collapsed",
			ps:   []collapsePush{{job: "a", accepted: at(0), collapsed: true}, {job: "b", accepted: at(1), collapsed: true}},
			want: []string{"b"},
		},
		{
			name: "alone and collapsed",
			ps:   []collapsePush{{job: "a", accepted: at(0), collapsed: true}},
			want: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range wronglyCollapsed(tt.ps) {
				got = append(got, p.job)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("wronglyCollapsed (-want +got):\n%s", diff)
			}
		})
	}
}
