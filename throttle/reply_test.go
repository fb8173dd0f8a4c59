package throttle

import (
	"errors"
	"testing"
	"time"
)

func TestParseRepliesRejectGarbage(t *testing.T) {
	c, err := compile(Policy{Limits: []Limit{{N: 3, Window: time.Second}}, MinGap: time.Millisecond,
		Categories: map[string]Category{"social": {Limits: []Limit{{N: 1, Window: time.Second}}}}})
	if err != nil {
		t.Fatal(err)
	}
	l := &Redis{c: c, r: &c.global}
	garbage := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"string", "OK"},
		{"integer", int64(1)},
		{"empty array", []any{}},
		{"short array", []any{int64(1), int64(0)}},
		{"strings", []any{"1", "0", "0", "1700000000000", "2"}},
		{"float", []any{int64(1), int64(0), int64(0), 1.5, int64(2)}},
		{"nested", []any{[]any{}, int64(0), int64(0), int64(0), int64(2)}},
		{"allowed 2", []any{int64(2), int64(0), int64(0), int64(0), int64(2)}},
		{"allowed with a wait", []any{int64(1), int64(5), int64(0), int64(0), int64(2)}},
		{"denied without a wait", []any{int64(0), int64(0), int64(1), int64(0), int64(2)}},
		{"negative wait", []any{int64(0), int64(-5), int64(1), int64(0), int64(2)}},
		{"denied by no rule", []any{int64(0), int64(5), int64(0), int64(0), int64(2)}},
		{"denied by rule 9", []any{int64(0), int64(5), int64(9), int64(0), int64(2)}},
		{"remaining above N", []any{int64(1), int64(0), int64(0), int64(0), int64(4)}},
		{"negative remaining", []any{int64(1), int64(0), int64(0), int64(0), int64(-1)}},
		{"too long", []any{int64(1), int64(0), int64(0), int64(0), int64(2), int64(7)}},
	}
	for _, g := range garbage {
		t.Run("decision/"+g.name, func(t *testing.T) {
			if _, err := l.parseDecision(g.v); !errors.Is(err, ErrUnexpectedReply) {
				t.Errorf("parseDecision(%#v) error = %v, want ErrUnexpectedReply", g.v, err)
			}
		})
	}
	reservations := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"short", []any{int64(1), int64(0)}},
		{"no refusal", []any{int64(1), int64(0), int64(0)}},
		{"no collapsed", []any{int64(1), int64(0), int64(0), ""}},
		{"existing 2", []any{int64(1), int64(2), int64(0), "", ""}},
		{"string slot", []any{"1", int64(0), int64(0), "", ""}},
		{"integer refusal", []any{int64(1), int64(0), int64(0), int64(0), ""}},
		{"integer collapsed", []any{int64(1), int64(0), int64(0), "", int64(0)}},
		{"unknown refusal", []any{int64(1), int64(0), int64(0), "busy", ""}},
		{"existing refused", []any{int64(1), int64(1), int64(0), "full", ""}},
		{"existing collapsed another", []any{int64(1), int64(1), int64(0), "", "m"}},
		{"refused collapsed another", []any{int64(1), int64(0), int64(0), "late", "m"}},
		{"too long", []any{int64(1), int64(0), int64(0), "", "", int64(0), int64(0)}},
		{"held by a string", []any{int64(1), int64(0), int64(0), "", "", "1001"}},
		{"existing held", []any{int64(1), int64(1), int64(0), "", "", int64(1001)}},
		{"new booking before now", int64(999)},
		{"new booking as a string", "1005"},
	}
	for _, g := range reservations {
		t.Run("reservation/"+g.name, func(t *testing.T) {
			if _, _, err := parseReservation(g.v, 1000); !errors.Is(err, ErrUnexpectedReply) {
				t.Errorf("parseReservation(%#v) error = %v, want ErrUnexpectedReply", g.v, err)
			}
		})
	}
	statuses := []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"no sets", []any{int64(1)}},
		{"one set of two", []any{int64(1), int64(0)}},
		{"count past the end", []any{int64(1), int64(1), "m", int64(5), int64(1)}},
		{"negative count", []any{int64(1), int64(-1), int64(0)}},
		{"entry time not an integer", []any{int64(1), int64(1), "m", "5", int64(0)}},
		{"entry member not a string", []any{int64(1), int64(1), int64(4), int64(5), int64(0)}},
		{"left over", []any{int64(1), int64(0), int64(0), int64(7)}},
	}
	for _, g := range statuses {
		t.Run("status/"+g.name, func(t *testing.T) {
			if _, err := l.parseStatus(g.v, nil); !errors.Is(err, ErrUnexpectedReply) {
				t.Errorf("parseStatus(%#v) error = %v, want ErrUnexpectedReply", g.v, err)
			}
		})
	}
	// And the well-formed replies parse.
	if d, err := l.parseDecision([]any{int64(0), int64(5), int64(2), int64(1000), int64(1)}); err != nil || d.DeniedBy != "min-gap 1ms" || d.RetryAfter != 5*time.Millisecond {
		t.Errorf("parseDecision(valid) = %+v, %v", d, err)
	}
	for _, refused := range []Refusal{"", RefusedFull, RefusedLate, RefusedCollapsed} {
		if r, _, err := parseReservation([]any{int64(1005), int64(0), int64(1000), string(refused), ""}, 1000); err != nil || r.Refused != refused || r.Wait != 5*time.Millisecond {
			t.Errorf("parseReservation(valid, %q) = %+v, %v", refused, r, err)
		}
	}
	if r, _, err := parseReservation([]any{int64(1005), int64(0), int64(1000), "", "old"}, 1000); err != nil || r.Collapsed != "old" {
		t.Errorf("parseReservation(valid, collapsed) = %+v, %v", r, err)
	}
	if _, held, err := parseReservation([]any{int64(1005), int64(0), int64(1000), "late", "", int64(1002)}, 1000); err != nil || held != 1002 {
		t.Errorf("parseReservation(valid, held by 1002) = held %d, %v", held, err)
	}
	if r, _, err := parseReservation(int64(1005), 1000); err != nil || r.Existing || r.Refused != "" || r.Wait != 5*time.Millisecond || r.Now.UnixMilli() != 1000 {
		t.Errorf("parseReservation(new booking) = %+v, %v", r, err)
	}
	if s, err := l.parseStatus([]any{int64(1000), int64(1), "m", int64(990), int64(1), "s", int64(995)}, nil); err != nil ||
		len(s.Entries) != 1 || s.Entries[0].Member != "m" || len(s.Categories) != 1 || s.Categories[0].Entries[0].Member != "s" {
		t.Errorf("parseStatus(valid) = %+v, %v", s, err)
	}
}
