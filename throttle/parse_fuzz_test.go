package throttle_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/throttle"
)

// FuzzParseRules feeds any text to every parser of the rules grammar:
// limits, a rule set, categories, quiet hours and a whole policy. Each
// answers without panicking, with an error no longer than a small multiple
// of the text, or a value that is valid, has no sign the text did not
// mean (the grammar has none) and round-trips through its String. Without
// -fuzz, `go test` runs the seed corpus in testdata/fuzz/FuzzParseRules:
//
//	go test -run '^$' -fuzz FuzzParseRules -fuzztime 60s ./throttle/
func FuzzParseRules(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		bounded := func(what string, err error) {
			if err != nil && len(err.Error()) > 4*len(s)+512 {
				t.Errorf("%s(%q): error of %d bytes", what, s, len(err.Error()))
			}
		}
		signless := func(what string) {
			if strings.Contains(s, "+") {
				t.Errorf("%s(%q) accepted a sign", what, s)
			}
		}

		limits, err := throttle.ParseLimits(s)
		bounded("ParseLimits", err)
		if err == nil {
			signless("ParseLimits")
			if len(limits) > strings.Count(s, ",")+1 {
				t.Errorf("ParseLimits(%q): %d limits from %d items", s, len(limits), strings.Count(s, ",")+1)
			}
			for _, l := range limits {
				if l.N <= 0 || l.Window <= 0 || l.Window%time.Millisecond != 0 {
					t.Errorf("ParseLimits(%q): invalid limit %+v", s, l)
				}
				again, err := throttle.ParseLimits(l.String())
				if err != nil || len(again) != 1 || again[0] != l {
					t.Errorf("ParseLimits(%q): %+v does not round-trip through %q: %v, %v", s, l, l.String(), again, err)
				}
			}
		}

		_, gap, err := throttle.ParseRuleSet(s)
		bounded("ParseRuleSet", err)
		if err == nil {
			signless("ParseRuleSet")
			if gap < 0 || gap%time.Millisecond != 0 {
				t.Errorf("ParseRuleSet(%q): gap %s", s, gap)
			}
		}

		cats, err := throttle.ParseCategories(s)
		bounded("ParseCategories", err)
		if err == nil {
			signless("ParseCategories")
			if len(cats) > strings.Count(s, ";")+1 {
				t.Errorf("ParseCategories(%q): %d categories from %d items", s, len(cats), strings.Count(s, ";")+1)
			}
			if err := (throttle.Policy{MinGap: time.Second, Categories: cats}).Validate(); err != nil {
				t.Errorf("ParseCategories(%q) gave an invalid policy: %v", s, err)
			}
		}

		q, err := throttle.ParseQuiet(s)
		bounded("ParseQuiet", err)
		if err == nil {
			signless("ParseQuiet")
			if q.From < 0 || q.From >= 24*time.Hour || q.To < 0 || q.To >= 24*time.Hour {
				t.Errorf("ParseQuiet(%q) = %+v, not times of day", s, q)
			}
			if again, err := throttle.ParseQuiet(q.String()); err != nil || again != q {
				t.Errorf("ParseQuiet(%q) = %v does not round-trip: %v, %v", s, q, again, err)
			}
		}

		limitsText, gapText, _ := strings.Cut(s, "|")
		p, err := throttle.ParsePolicy(limitsText, gapText)
		bounded("ParsePolicy", err)
		if err == nil {
			signless("ParsePolicy")
			if err := p.Validate(); err != nil {
				t.Errorf("ParsePolicy(%q, %q) gave an invalid policy: %v", limitsText, gapText, err)
			}
		}
	})
}
