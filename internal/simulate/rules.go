package simulate

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hushpush/hush/throttle"
)

// ruleSet is one policy to replay a trace against, named by its global
// rules and what its --rules value added on top of the shared rules.
type ruleSet struct {
	name   string
	policy throttle.Policy
}

// sharedRules are what every rule set keeps besides its global rules:
// --quiet-hours and --categories. A --rules value may replace the quiet
// hours and add or replace categories (ownRules).
type sharedRules struct {
	quiet      throttle.Quiet
	categories map[string]throttle.Category
}

// ownRules are what one --rules value says beyond LIMITS@GAP.
type ownRules struct {
	quiet      *throttle.Quiet // nil: the shared quiet hours
	categories map[string]throttle.Category
}

// parseRuleSet reads one --rules value:
//
//	LIMITS@GAP [quiet=HH:MM-HH:MM|off] [; NAME=RULES [global=off] [quiet=...]]...
//
// LIMITS@GAP as throttle.ParseRuleSet reads it ("10/1m,100/24h@3s",
// "3/10s", "@2s"), then optionally the set's own quiet hours, then after
// a semicolon categories as throttle.ParseCategories reads them. The
// result keeps shared's quiet hours and categories where the value gives
// none of its own.
func parseRuleSet(s string, shared sharedRules) (ruleSet, error) {
	head, cats, _ := strings.Cut(s, ";")
	var own ownRules
	var words []string
	for _, w := range strings.Fields(head) {
		v, ok := strings.CutPrefix(w, "quiet=")
		if !ok {
			words = append(words, w)
			continue
		}
		q, err := throttle.ParseQuiet(v)
		if err != nil {
			return ruleSet{}, fmt.Errorf("rules %q: %w", s, err)
		}
		own.quiet = &q
	}
	limits, gap, _ := strings.Cut(strings.Join(words, ""), "@")
	p, err := throttle.ParsePolicy(limits, gap)
	if err != nil {
		return ruleSet{}, fmt.Errorf("rules %q: %w", s, err)
	}
	if own.categories, err = throttle.ParseCategories(cats); err != nil {
		return ruleSet{}, fmt.Errorf("rules %q: %w", s, err)
	}
	rs, err := shared.ruleSet(p, own)
	if err != nil {
		return ruleSet{}, fmt.Errorf("rules %q: %w", s, err)
	}
	return rs, nil
}

// ruleSet is global (its Limits and MinGap) with shared's quiet hours and
// categories, and own's on top: own's quiet hours replace shared's, own's
// categories replace shared's of the same name. Its name is global's
// rules and own's additions, as --rules writes them.
func (sh sharedRules) ruleSet(global throttle.Policy, own ownRules) (ruleSet, error) {
	p := throttle.Policy{Limits: global.Limits, MinGap: global.MinGap, Quiet: sh.quiet}
	name := p.String()
	if own.quiet != nil {
		p.Quiet = *own.quiet
		name += " quiet=" + own.quiet.String()
	}
	p.Categories = maps.Clone(sh.categories)
	for _, c := range slices.Sorted(maps.Keys(own.categories)) {
		if p.Categories == nil {
			p.Categories = map[string]throttle.Category{}
		}
		p.Categories[c] = own.categories[c]
		name += "; " + c + "=" + own.categories[c].String()
	}
	if err := p.Validate(); err != nil {
		return ruleSet{}, err
	}
	return ruleSet{name: name, policy: p}, nil
}

// String says what every rule set shares, for the report's first line:
// "quiet hours 22:00-08:00; categories marketing=2/1d; social=10/1h@30s"
// ("" when nothing).
func (sh sharedRules) String() string {
	var parts []string
	if !sh.quiet.Off() {
		parts = append(parts, "quiet hours "+sh.quiet.String())
	}
	if len(sh.categories) > 0 {
		cats := make([]string, 0, len(sh.categories))
		for _, c := range slices.Sorted(maps.Keys(sh.categories)) {
			cats = append(cats, c+"="+sh.categories[c].String())
		}
		parts = append(parts, "categories "+strings.Join(cats, "; "))
	}
	return strings.Join(parts, "; ")
}

// hasQuiet reports whether p holds any push for quiet hours: its own or a
// category's.
func hasQuiet(p throttle.Policy) bool {
	if !p.Quiet.Off() {
		return true // pushes without a category keep them
	}
	for _, k := range p.Categories {
		if k.Quiet != nil && !k.Quiet.Off() {
			return true
		}
	}
	return false
}

// heldByQuiet is what the report's "held back by" counts for a push the
// quiet hours held back more than the rules did.
const heldByQuiet = "quiet hours"

// ruleNames are p's rules named as throttle.Explanation.HeldBy names
// them: the global limits in order, the gap when there is one, then each
// category's (sorted by name) the same way, then "quiet hours" when p has
// any.
func ruleNames(p throttle.Policy) []string {
	names := rulesOf("", p.Limits, p.MinGap)
	for _, c := range slices.Sorted(maps.Keys(p.Categories)) {
		k := p.Categories[c]
		names = append(names, rulesOf(c+" ", k.Limits, k.MinGap)...)
	}
	if hasQuiet(p) {
		names = append(names, heldByQuiet)
	}
	return names
}

// rulesOf names one rule set's limits and gap, each after prefix.
func rulesOf(prefix string, limits []throttle.Limit, gap time.Duration) []string {
	var names []string
	for _, l := range limits {
		names = append(names, prefix+l.String())
	}
	if gap > 0 {
		names = append(names, prefix+throttle.Policy{MinGap: gap}.String())
	}
	return names
}
