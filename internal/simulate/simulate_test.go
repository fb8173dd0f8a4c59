package simulate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hushpush/hush/throttle"
)

// fivePushes is one user pushed five times one second apart, in both time
// formats (10:00:02Z is 1795255202000 ms), with a header and a comment.
const fivePushes = `time,user
# one user, one push a second
2026-11-21T10:00:00Z,u-1
2026-11-21T10:00:01Z,u-1

1795255202000,u-1
2026-11-21T10:00:03.000Z,"u-1"
2026-11-21T11:00:04+01:00, u-1
`

func mustRuleSet(t testing.TB, s string) ruleSet {
	t.Helper()
	rs, err := parseRuleSet(s, sharedRules{})
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestSimulateHandComputed(t *testing.T) {
	tr, err := readTrace(strings.NewReader(fivePushes), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Under 3/10s with min-gap 2s, pushes at 0,1,2,3,4 s get the slots:
	//   0: now; 1: 2 (gap after 0); 2: 4 (gap after the booking at 2);
	//   3: 10 (0,2,4 fill the 10 s window until 0 leaves it);
	//   4: 12 (2,4,10 would be 4 in a window before 12; gap after 10).
	// Delays 0,1,2,7,8 s.
	tests := []struct {
		name  string
		rules string
		ttl   time.Duration
		want  Result
	}{
		{"3/10s gap 2s", "3/10s@2s", 0, Result{
			Rules: "3/10s min-gap 2s", QuietHours: "off", Timezone: "UTC", Events: 5, Allowed: 1, Deferred: 4, DeferredPct: 80,
			DelayP50: 2000, DelayP90: 8000, DelayP99: 8000, DelayMax: 8000, DelayTotal: 18000,
			HeldBy: map[string]int{"min-gap 2s": 2, "3/10s": 2}, Users: 1, UsersDeferred: 1,
		}},
		// With a 5 s ttl the pushes at 3 s and 4 s (slots 10 s and, once 10
		// is released, 10 s again) are dropped.
		{"3/10s gap 2s ttl 5s", "3/10s@2s", 5 * time.Second, Result{
			Rules: "3/10s min-gap 2s", QuietHours: "off", Timezone: "UTC", Events: 5, Allowed: 1, Deferred: 2, Dropped: 2, DeferredPct: 40, DroppedPct: 40,
			DelayP50: 1000, DelayP90: 2000, DelayP99: 2000, DelayMax: 2000, DelayTotal: 3000,
			HeldBy: map[string]int{"min-gap 2s": 2, "3/10s": 2}, Users: 1, UsersDeferred: 1,
		}},
		// A slot exactly ttl after the push is dropped too (the worker's
		// deadline is exclusive): the push at 2 s would wait exactly 2 s.
		// Its slot given back, the push at 3 s takes 4 s (1 s wait); the
		// one at 4 s meets 0,2,4 in the window and would wait 6 s.
		{"ttl equals the wait", "3/10s@2s", 2 * time.Second, Result{
			Rules: "3/10s min-gap 2s", QuietHours: "off", Timezone: "UTC", Events: 5, Allowed: 1, Deferred: 2, Dropped: 2, DeferredPct: 40, DroppedPct: 40,
			DelayP50: 1000, DelayP90: 1000, DelayP99: 1000, DelayMax: 1000, DelayTotal: 2000,
			HeldBy: map[string]int{"min-gap 2s": 3, "3/10s": 1}, Users: 1, UsersDeferred: 1,
		}},
		// A gap of exactly the spacing allows everything.
		{"gap 1s", "@1s", 0, Result{
			Rules: "min-gap 1s", QuietHours: "off", Timezone: "UTC", Events: 5, Allowed: 5, HeldBy: map[string]int{}, Users: 1,
		}},
		{"5/1m", "5/1m", 0, Result{
			Rules: "5/1m", QuietHours: "off", Timezone: "UTC", Events: 5, Allowed: 5, HeldBy: map[string]int{}, Users: 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := simulate(context.Background(), tr, mustRuleSet(t, tt.rules), simOptions{TTL: tt.ttl, HeldBy: true})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Result{}, "Seconds")); diff != "" {
				t.Errorf("simulate (-want +got):\n%s", diff)
			}
		})
	}
}

// mustZone loads an IANA zone for a test.
func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// namedEvent is a traceEvent as a test writes it: names, not indexes ("" for
// no category and for the default zone).
type namedEvent struct {
	At              int64
	User, Cat, Zone string
	OptOut          []string
}

// eventsOf are tr's events with their names.
func eventsOf(tr trace) []namedEvent {
	var out []namedEvent
	for _, e := range tr.events {
		ev := namedEvent{At: e.at, User: tr.users[e.user], Cat: tr.categories[e.cat]}
		if loc := tr.zones[e.zone]; loc != nil {
			ev.Zone = loc.String()
		}
		ev.OptOut = tr.optOuts[e.opt]
		out = append(out, ev)
	}
	return out
}

func TestReadTrace(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		want      []namedEvent
		wantCats  []string
		wantLines []int
	}{
		{"both time formats, header, comment, blank, quotes", fivePushes, []namedEvent{
			{At: 1795255200000, User: "u-1"}, {At: 1795255201000, User: "u-1"}, {At: 1795255202000, User: "u-1"},
			{At: 1795255203000, User: "u-1"}, {At: 1795255204000, User: "u-1"},
		}, []string{""}, []int{0}},
		{"no header, columns after the fifth ignored", "5,a,,,,x\n7,b,,,,y\n", []namedEvent{{At: 5, User: "a"}, {At: 7, User: "b"}}, []string{""}, []int{0}},
		{"opt-outs, by spaces or semicolons, each once, sorted", "1,a,promo,,promo;news\n2,a,,,news promo news\n3,b,,, ; \n4,b\n", []namedEvent{
			{At: 1, User: "a", Cat: "promo", OptOut: []string{"news", "promo"}}, {At: 2, User: "a", OptOut: []string{"news", "promo"}},
			{At: 3, User: "b"}, {At: 4, User: "b"}}, []string{"", "promo"}, []int{0, 1}},
		{"sorted by time, equal times in input order", "9,a\n3,b\n9,c\n1,d\n", []namedEvent{
			{At: 1, User: "d"}, {At: 3, User: "b"}, {At: 9, User: "a"}, {At: 9, User: "c"}}, []string{""}, []int{0}},
		{"fractional seconds", "2026-11-21T10:00:00.250Z,a\n", []namedEvent{{At: 1795255200250, User: "a"}}, []string{""}, []int{0}},
		{"categories and zones, empty or missing, quoted", `time,user,category,timezone
1,a,social,Europe/Berlin
2,b,,America/New_York
0,c,marketing
4,d
5, "a" , "social" , "Europe/Berlin"
6,e,,
`, []namedEvent{
			{At: 0, User: "c", Cat: "marketing"}, {At: 1, User: "a", Cat: "social", Zone: "Europe/Berlin"},
			{At: 2, User: "b", Zone: "America/New_York"}, {At: 4, User: "d"},
			{At: 5, User: "a", Cat: "social", Zone: "Europe/Berlin"}, {At: 6, User: "e"},
		}, []string{"", "social", "marketing"}, []int{0, 2, 4}},
		{"empty", "", nil, []string{""}, []int{0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readTrace(strings.NewReader(tt.input), nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, eventsOf(got)); diff != "" {
				t.Errorf("readTrace events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCats, got.categories); diff != "" {
				t.Errorf("readTrace categories (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantLines, got.catLines); diff != "" {
				t.Errorf("readTrace categories' first lines (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReadTraceTables: each user, category and zone is in its table once,
// whatever the number of lines naming it.
func TestReadTraceTables(t *testing.T) {
	tr, err := readTrace(strings.NewReader("1,u-1,marketing,Europe/Berlin\n2,u-2,marketing,Europe/Berlin\n3,u-1,,Europe/Berlin\n4,u-1,marketing\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"u-1", "u-2"}, tr.users); diff != "" {
		t.Errorf("users (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "marketing"}, tr.categories); diff != "" {
		t.Errorf("categories (-want +got):\n%s", diff)
	}
	if len(tr.zones) != 2 || tr.zones[0] != nil || tr.zones[1].String() != "Europe/Berlin" {
		t.Errorf("zones %v, want [nil Europe/Berlin]", tr.zones)
	}
}

func TestReadTraceErrors(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  traceLineError // Err not compared
	}{
		{"bad time after the header", "time,user\n1,a\n\nyesterday,b\n", traceLineError{Line: 4, Field: "time", Text: "yesterday"}},
		{"a second unparsable line is no header", "time,user\nwhen,who\n", traceLineError{Line: 2, Field: "time", Text: "when"}},
		{"bad date", "1,a\n2026-13-01T00:00:00Z,b\n", traceLineError{Line: 2, Field: "time", Text: "2026-13-01T00:00:00Z"}},
		{"missing user", "1,a\n# c\n2\n", traceLineError{Line: 3, Field: "user", Text: ""}},
		{"empty user", "1,a\n2, ,x\n", traceLineError{Line: 2, Field: "user", Text: ""}},
		{"category not a name", "1,a,marketing\n2,b,Marketing\n", traceLineError{Line: 2, Field: "category", Text: "Marketing"}},
		{"category too long", "1,a," + strings.Repeat("x", 33) + "\n", traceLineError{Line: 1, Field: "category", Text: strings.Repeat("x", 33)}},
		{"unknown zone", "time,user,category,timezone\n1,a,,Europe/Berlin\n2,b,,Mars/Olympus\n", traceLineError{Line: 3, Field: "timezone", Text: "Mars/Olympus"}},
		{"the machine's own zone", "1,a,,Local\n", traceLineError{Line: 1, Field: "timezone", Text: "Local"}},
		{"an opt-out not a category name", "1,a,,,promo\n2,a,,,promo;Promo\n", traceLineError{Line: 2, Field: "opted_out", Text: "promo;Promo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readTrace(strings.NewReader(tt.input), nil)
			le, ok := errors.AsType[*traceLineError](err)
			if !ok {
				t.Fatalf("err = %v, want a *traceLineError", err)
			}
			got := *le
			got.Err = nil
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), tt.want.Field) {
				t.Errorf("message %q does not name the line and the field", err)
			}
		})
	}
}

func TestGeneratedTraceReadsBack(t *testing.T) {
	start := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		gen       traceGen
		wantCats  []string
		wantZones []string
	}{
		{"time,user", traceGen{n: 5000, users: 100, start: start, seed: 7}, []string{""}, []string{""}},
		{"categories", traceGen{n: 5000, users: 100, start: start, seed: 7, categories: []string{"marketing", "social", ""}},
			[]string{"", "marketing", "social"}, []string{""}},
		{"zones", traceGen{n: 5000, users: 100, start: start, seed: 7, zones: []string{"Europe/Berlin", "America/New_York"}},
			[]string{""}, []string{"America/New_York", "Europe/Berlin"}},
		{"both", traceGen{n: 5000, users: 100, start: start, seed: 7, categories: []string{"social"}, zones: []string{"Asia/Tokyo"}},
			[]string{"social"}, []string{"Asia/Tokyo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := writeTrace(&buf, tt.gen); err != nil {
				t.Fatal(err)
			}
			tr, err := readTrace(&buf, nil)
			if err != nil {
				t.Fatal(err)
			}
			users, cats, zones := map[string]bool{}, map[string]bool{}, map[string]bool{}
			userZone := map[string]string{}
			for _, e := range eventsOf(tr) {
				users[e.User], cats[e.Cat], zones[e.Zone] = true, true, true
				if z, ok := userZone[e.User]; ok && z != e.Zone {
					t.Errorf("user %s in two zones, %q and %q", e.User, z, e.Zone)
				}
				userZone[e.User] = e.Zone
			}
			if len(tr.events) != 5000 || len(users) < 50 {
				t.Errorf("generated %d events over %d users, want 5000 over most of 100", len(tr.events), len(users))
			}
			if diff := cmp.Diff(tt.wantCats, slices.Sorted(maps.Keys(cats))); diff != "" {
				t.Errorf("categories (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantZones, slices.Sorted(maps.Keys(zones))); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkSimulate replays a generated bursty trace (100k events over 10k
// users, a day long) under the worker's default rules with a 1h ttl, and
// a few others.
func BenchmarkSimulate(b *testing.B) {
	var buf bytes.Buffer
	if err := writeTrace(&buf, traceGen{n: 100_000, users: 10_000, start: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), seed: 1}); err != nil {
		b.Fatal(err)
	}
	tr, err := readTrace(&buf, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		rules  string
		heldBy bool
	}{{"10/1m,100/24h@3s", true}, {"10/1m,100/24h@3s", false}, {"3/10s@2s", true}, {"10/1m,100/24h@3s quiet=22:00-08:00", true}} {
		rules, heldBy := bc.rules, bc.heldBy
		b.Run(fmt.Sprintf("%s/held-by=%t", rules, heldBy), func(b *testing.B) {
			rs := mustRuleSet(b, rules)
			b.ReportAllocs()
			start := time.Now()
			n := 0
			for b.Loop() {
				if _, err := simulate(context.Background(), tr, rs, simOptions{TTL: time.Hour, HeldBy: heldBy}); err != nil {
					b.Fatal(err)
				}
				n += len(tr.events)
			}
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "events/s")
		})
	}
}

func TestFmtDelay(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{0, "0"}, {850, "850ms"}, {2549, "2.5s"}, {59_999, "59.9s"}, {190_500, "3m10s"},
		{3_599_999, "59m59s"}, {26*3_600_000 + 59_999, "26h0m"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := fmtDelay(tt.ms); got != tt.want {
				t.Errorf("fmtDelay(%d) = %q, want %q", tt.ms, got, tt.want)
			}
		})
	}
}

// BenchmarkReadTrace reads a generated trace of 100k lines, without and
// with the category and timezone columns.
func BenchmarkReadTrace(b *testing.B) {
	for _, bc := range []struct {
		name string
		gen  traceGen
	}{
		{"time,user", traceGen{}},
		{"time,user,category,timezone", traceGen{categories: []string{"marketing", "social", ""}, zones: []string{"Europe/Berlin", "America/New_York"}}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			g := bc.gen
			g.n, g.users, g.start, g.seed = 100_000, 10_000, time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC), 1
			var buf bytes.Buffer
			if err := writeTrace(&buf, g); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(int64(buf.Len()))
			for b.Loop() {
				if _, err := readTrace(bytes.NewReader(buf.Bytes()), nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(g.n)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
		})
	}
}

// TestSimulateOptOuts: a push of a category its user had opted out of at
// that line is counted opted out, books nothing (the next push of the
// user is not held by it), and counts in its category's row; opting back
// in lets the category through again.
func TestSimulateOptOuts(t *testing.T) {
	const trace = `time,user,category,timezone,opted_out
0,u-1,promo
10000,u-1,promo,,promo
10500,u-1,news,,promo
20000,u-1,promo
`
	tr, err := readTrace(strings.NewReader(trace), nil)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := parseRuleSet("1/1m", sharedRules{categories: map[string]throttle.Category{"promo": {}, "news": {}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := simulate(context.Background(), tr, rs, simOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// 0: sent; 10000: opted out, nothing booked; 10500: news, held by the
	// 1/1m after 0 until 60000; 20000: promo again, after news's booking.
	if got.OptedOut != 1 || got.Allowed != 1 || got.Deferred != 2 {
		t.Errorf("opted out %d, allowed %d, deferred %d; want 1, 1, 2", got.OptedOut, got.Allowed, got.Deferred)
	}
	cats := map[string]categoryResult{}
	for _, c := range got.Categories {
		cats[c.Category] = c
	}
	if cats["promo"].OptedOut != 1 || cats["promo"].Events != 3 || cats["news"].OptedOut != 0 {
		t.Errorf("by category %+v, want promo's 3 pushes with 1 opted out, news's none", got.Categories)
	}
	if got.DelayP50 != 49500 || got.DelayMax != 100000 {
		t.Errorf("delays p50 %d, max %d ms; want 49500 (news until 60000) and 100000 (promo until 120000)", got.DelayP50, got.DelayMax)
	}
}
