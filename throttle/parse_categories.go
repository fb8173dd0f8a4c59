package throttle

import (
	"strings"
	"time"
)

// ParseRuleSet reads one rule set written "LIMITS@GAP": limits as
// ParseLimits reads them, then optionally "@" and a minimum gap
// ("10/1m,100/24h@3s", "3/10s", "@2s"). Either part may be empty; "none"
// (or "") is no rules at all.
func ParseRuleSet(s string) ([]Limit, time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return nil, 0, nil
	}
	limits, gap, _ := strings.Cut(s, "@")
	ls, err := ParseLimits(limits)
	if err != nil {
		return nil, 0, err
	}
	p, err := parseGap(gap)
	if err != nil {
		return nil, 0, err
	}
	return ls, p, nil
}

// parseGap reads a minimum gap: a duration as ParseLimits accepts, or ""
// or "0" for none.
func parseGap(s string) (time.Duration, error) {
	g := strings.TrimSpace(s)
	if g == "" || g == "0" {
		return 0, nil
	}
	d, err := parseDuration(g)
	switch {
	case signed(g):
		return 0, &ParseError{What: "min gap", Text: s, Reason: "write the duration without a sign"}
	case err != nil:
		return 0, &ParseError{What: "min gap", Text: s, Reason: err.Error(), Err: err}
	case d < 0:
		return 0, &ParseError{What: "min gap", Text: s, Reason: "must not be negative"}
	case d%time.Millisecond != 0:
		return 0, &ParseError{What: "min gap", Text: s, Reason: "must be a whole number of milliseconds"}
	}
	return d, nil
}

// TransactionalCategory is the category name whose quiet hours are off
// unless its definition says otherwise: transactional pushes (a login
// code, a delivery at the door) are wanted at night too.
const TransactionalCategory = "transactional"

// ParseCategories reads categories written
//
//	NAME=RULES [global=off] [quiet=HH:MM-HH:MM|off] [required=on]; NAME=RULES ...
//
// RULES is a rule set as ParseRuleSet reads it ("2/1d,1/4h@1h",
// "10/1h@30s") or "none" (no rules of its own). A category's pushes keep
// its own rules among themselves and the global rules among all pushes;
// global=off exempts them from the global rules (they neither wait for nor
// count toward them). quiet= gives the category quiet hours of its own, or
// none; without it the global quiet hours apply, except for a category
// named transactional, which has none unless it says quiet=HH:MM-HH:MM.
// required=on marks the category Required: a user's Preferences cannot
// opt out of it (security notices, receipts). Names are 1 to 32 of a-z, 0-9, _ and -. Example:
//
//	marketing=2/1d,1/4h@1h quiet=21:00-09:00; social=10/1h@30s; transactional=none global=off
//
// An empty string is no categories. Errors are *ParseError naming the
// category.
func ParseCategories(s string) (map[string]Category, error) {
	out := map[string]Category{}
	for _, item := range strings.Split(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, spec, err := parseCategory(item, out)
		if err != nil {
			return nil, err
		}
		out[name] = spec
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

func parseCategory(item string, seen map[string]Category) (string, Category, error) {
	bad := func(reason string, err error) (string, Category, error) {
		return "", Category{}, &ParseError{What: "category", Text: item, Reason: reason, Err: err}
	}
	name, spec, ok := strings.Cut(item, "=")
	name = strings.TrimSpace(name)
	switch {
	case !ok:
		return bad("want NAME=RULES, e.g. marketing=2/1d,1/4h@1h or transactional=none", nil)
	case !ValidCategory(name):
		return bad("name "+quote(name)+" must be 1 to 32 of a-z, 0-9, _ and -", nil)
	}
	if _, dup := seen[name]; dup {
		return bad("defined twice", nil)
	}
	var k Category
	var ruleWords []string
	quietSet := false
	for _, word := range strings.Fields(spec) {
		key, val, isOpt := strings.Cut(word, "=")
		switch {
		case !isOpt:
			ruleWords = append(ruleWords, word)
		case key == "global":
			switch val {
			case "off":
				k.SkipGlobal = true
			case "on":
				k.SkipGlobal = false
			default:
				return bad("global="+val+": want global=off (exempt from the global rules) or global=on", nil)
			}
		case key == "required":
			switch val {
			case "on":
				k.Required = true
			case "off":
				k.Required = false
			default:
				return bad("required="+val+": want required=on (users cannot opt out of it) or required=off", nil)
			}
		case key == "quiet":
			q, err := ParseQuiet(val)
			if err != nil {
				return bad("quiet="+val+": want quiet=HH:MM-HH:MM (e.g. quiet=21:00-09:00) or quiet=off", err)
			}
			k.Quiet, quietSet = &q, true
		default:
			return bad("unknown option "+quote(key)+" (options are global=, quiet= and required=)", nil)
		}
	}
	if len(ruleWords) == 0 {
		return bad("no rules (write none for only the global rules)", nil)
	}
	limits, gap, err := ParseRuleSet(strings.Join(ruleWords, ""))
	if err != nil {
		return bad(detail(err), err)
	}
	k.Limits, k.MinGap = limits, gap
	if name == TransactionalCategory && !quietSet {
		k.Quiet = &Quiet{}
	}
	if err := k.validate(name); err != nil {
		return bad(detail(err), err)
	}
	return name, k, nil
}

// detail is err's message without the package's "throttle: " prefixes, to
// go inside another message.
func detail(err error) string {
	return strings.ReplaceAll(err.Error(), "throttle: ", "")
}

func quote(s string) string { return `"` + s + `"` }
