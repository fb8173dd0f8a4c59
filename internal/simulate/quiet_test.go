package simulate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/hushpush/hush/throttle"
)

// quietTrace has pushes in and out of quiet hours of 22:00-08:00 in
// several zones: u-1 twice an hour apart at noon UTC, u-2 in Berlin, u-3
// in New York and u-4 in the default zone at 21:30 UTC (22:30 in Berlin,
// 16:30 in New York), and u-5 twice in the social category at 10:00.
const quietTrace = `time,user,category,timezone
2026-11-21T12:00:00Z,u-1
2026-11-21T13:00:00Z,u-1,,
2026-11-21T21:30:00Z,u-2,,Europe/Berlin
2026-11-21T21:30:00Z,u-3,,America/New_York
2026-11-21T21:30:00Z,u-4
2026-11-21T10:00:00Z,u-5,social
2026-11-21T10:00:30Z,u-5,social
`

const hourMs = int64(time.Hour / time.Millisecond)

// TestSimulateQuietHours: quiet hours in each line's zone (or the
// default) hold pushes past the slot the rules give, and the result counts
// that time apart from the rules'.
func TestSimulateQuietHours(t *testing.T) {
	tr, err := readTrace(strings.NewReader(quietTrace), nil)
	if err != nil {
		t.Fatal(err)
	}
	shared := sharedRules{quiet: throttle.Quiet{From: 22 * time.Hour, To: 8 * time.Hour},
		categories: map[string]throttle.Category{"social": {}}}
	rs, err := parseRuleSet("1/12h", shared)
	if err != nil {
		t.Fatal(err)
	}
	const m30 = 30 * 60_000
	tests := []struct {
		name string
		zone string
		ttl  time.Duration
		want Result
	}{
		// Under 1/12h and 22:00-08:00 UTC:
		//   u-1 at 13:00: the rules say 00:00 (12 h after 12:00), quiet
		//     until 08:00: waits 19 h, 11 h the rules', 8 h the quiet
		//     hours' (held back by 1/12h);
		//   u-2 at 22:30 in Berlin: quiet until 07:00 UTC, 9h30m, all
		//     the quiet hours' (held back by them);
		//   u-3 (16:30 in New York) and u-4 (21:30 UTC) go at once;
		//   u-5 at 10:00:30: the rules say 22:00, quiet until 08:00:
		//     21h59m30s, 10 h the quiet hours'.
		{"UTC", "UTC", 0, Result{
			Events: 7, Allowed: 4, Deferred: 3, DeferredPct: 100 * 3.0 / 7,
			DelayP90: 22*hourMs - m30/60, DelayP99: 22*hourMs - m30/60, DelayMax: 22*hourMs - m30/60,
			DelayTotal: 9*hourMs + m30 + 19*hourMs + 22*hourMs - m30/60,
			HeldBy:     map[string]int{"1/12h": 2, heldByQuiet: 1},
			Quiet: &quietResult{Deferred: 3, DeferredPct: 100 * 3.0 / 7, DelayP50: 9*hourMs + m30, DelayMax: 10 * hourMs,
				DelayTotal: 27*hourMs + m30, DelayPct: 100 * float64(27*hourMs+m30) / float64(50*hourMs+m30-m30/60)},
			Categories: []categoryResult{
				{Category: "", Events: 5, Allowed: 3, Deferred: 2, DeferredPct: 40, DelayP99: 19 * hourMs, DelayMax: 19 * hourMs, QuietDeferred: 2},
				{Category: "social", Events: 2, Allowed: 1, Deferred: 1, DeferredPct: 50, DelayP99: 22*hourMs - m30/60, DelayMax: 22*hourMs - m30/60, QuietDeferred: 1},
			},
			Users: 5, UsersDeferred: 3,
		}},
		// Berlin by default (UTC+1): u-1 until 07:00 UTC (18 h, 7 h of
		// it quiet), u-4 now quiet too (9h30m), u-5 until 07:00
		// (20h59m30s, 9 h quiet).
		{"Berlin by default", "Europe/Berlin", 0, Result{
			Events: 7, Allowed: 3, Deferred: 4, DeferredPct: 100 * 4.0 / 7,
			DelayP50: 9*hourMs + m30, DelayP90: 21*hourMs - m30/60, DelayP99: 21*hourMs - m30/60, DelayMax: 21*hourMs - m30/60,
			DelayTotal: 18*hourMs + 2*(9*hourMs+m30) + 21*hourMs - m30/60,
			HeldBy:     map[string]int{"1/12h": 2, heldByQuiet: 2},
			Quiet: &quietResult{Deferred: 4, DeferredPct: 100 * 4.0 / 7, DelayP50: 9 * hourMs, DelayMax: 9*hourMs + m30,
				DelayTotal: 35 * hourMs, DelayPct: 100 * float64(35*hourMs) / float64(58*hourMs-m30/60)},
			Categories: []categoryResult{
				{Category: "", Events: 5, Allowed: 2, Deferred: 3, DeferredPct: 60, DelayP50: 9*hourMs + m30, DelayP99: 18 * hourMs, DelayMax: 18 * hourMs, QuietDeferred: 3},
				{Category: "social", Events: 2, Allowed: 1, Deferred: 1, DeferredPct: 50, DelayP99: 21*hourMs - m30/60, DelayMax: 21*hourMs - m30/60, QuietDeferred: 1},
			},
			Users: 5, UsersDeferred: 4,
		}},
		// A 9 h ttl drops all three: u-2 only because of the quiet hours
		// (the rules alone would send it at once), u-1 and u-5 because
		// of the rules already (11 h and 12 h).
		{"ttl 9h", "UTC", 9 * time.Hour, Result{
			Events: 7, Allowed: 4, Dropped: 3, DroppedPct: 100 * 3.0 / 7,
			HeldBy: map[string]int{"1/12h": 2, heldByQuiet: 1},
			Quiet:  &quietResult{Dropped: 1},
			Categories: []categoryResult{
				{Category: "", Events: 5, Allowed: 3, Dropped: 2, DroppedPct: 40},
				{Category: "social", Events: 2, Allowed: 1, Dropped: 1, DroppedPct: 50},
			},
			Users: 5, UsersDeferred: 3,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := simOptions{TTL: tt.ttl, Zone: mustZone(t, tt.zone), HeldBy: true}
			got, err := simulate(context.Background(), tr, rs, o)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.Rules, want.QuietHours, want.Timezone = "1/12h", "22:00-08:00", tt.zone
			want.CategoryRules = map[string]string{"social": "none"}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Result{}, "Seconds"), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("simulate (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSimulateCategories: each category's own caps hold its pushes, a
// category with global=off skips the global rules, and the figures break
// down by category.
func TestSimulateCategories(t *testing.T) {
	tr, err := readTrace(strings.NewReader(`time,user,category
2026-11-21T10:00:00Z,u-1,marketing
2026-11-21T10:00:01Z,u-1,marketing
2026-11-21T10:00:02Z,u-1,social
2026-11-21T10:00:03Z,u-1,social
2026-11-21T10:00:04Z,u-1,social
2026-11-21T10:00:05Z,u-1
2026-11-21T10:00:06Z,u-1,transactional
2026-11-21T10:00:06Z,u-1,transactional
2026-11-21T10:00:06Z,u-1,transactional
2026-11-21T10:00:07Z,u-1
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	cats, err := throttle.ParseCategories("marketing=1/1h; social=2/1h; transactional=none global=off")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := parseRuleSet("5/1m", sharedRules{categories: cats})
	if err != nil {
		t.Fatal(err)
	}
	got, err := simulate(context.Background(), tr, rs, simOptions{HeldBy: true})
	if err != nil {
		t.Fatal(err)
	}
	// marketing's second push waits for 1/1h (until 11:00:00), social's
	// third for 2/1h (until 11:00:02); the pushes without a category fit
	// 5/1m (10:00:00, :02 and :03 before the first), as the transactional
	// ones neither wait for 5/1m nor count toward it.
	want := Result{
		Rules: "5/1m", QuietHours: "off", Timezone: "UTC",
		CategoryRules: map[string]string{"marketing": "1/1h", "social": "2/1h", "transactional": "none global=off quiet=off"},
		Events:        10, Allowed: 8, Deferred: 2, DeferredPct: 20,
		DelayP90: 3_598_000, DelayP99: 3_599_000, DelayMax: 3_599_000, DelayTotal: 3_599_000 + 3_598_000,
		HeldBy: map[string]int{"marketing 1/1h": 1, "social 2/1h": 1},
		Categories: []categoryResult{
			{Category: "", Events: 2, Allowed: 2},
			{Category: "marketing", Events: 2, Allowed: 1, Deferred: 1, DeferredPct: 50, DelayP99: 3_599_000, DelayMax: 3_599_000},
			{Category: "social", Events: 3, Allowed: 2, Deferred: 1, DeferredPct: 100.0 / 3, DelayP99: 3_598_000, DelayMax: 3_598_000},
			{Category: "transactional", Events: 3, Allowed: 3},
		},
		Users: 1, UsersDeferred: 1,
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Result{}, "Seconds"), cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("simulate (-want +got):\n%s", diff)
	}
}

func TestSimulateOutcomeOf(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 21, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	booked := func(wait time.Duration) throttle.Reservation {
		return throttle.Reservation{At: at(wait), Wait: wait, Now: t0}
	}
	late := func(slot time.Duration) throttle.Reservation {
		return throttle.Reservation{At: at(slot), Wait: slot, Refused: throttle.RefusedLate, Now: t0}
	}
	explained := func(rules, quiet time.Duration, heldBy string) throttle.Explanation {
		return throttle.Explanation{Now: t0, WithoutQuiet: at(rules), At: at(rules + quiet), HeldBy: heldBy}
	}
	h := time.Hour
	tests := []struct {
		name      string
		r         throttle.Reservation
		ex        throttle.Explanation
		explained bool
		deadline  time.Time
		want      outcome
	}{
		{"allowed", booked(0), explained(0, 0, ""), true, time.Time{}, outcome{kind: outcomeAllowed}},
		{"deferred by a rule", booked(10 * time.Second), explained(10*time.Second, 0, "10/1m"), true, time.Time{},
			outcome{kind: outcomeDeferred, delay: 10_000, heldBy: "10/1m"}},
		{"deferred by the quiet hours alone", booked(h), explained(0, h, ""), true, time.Time{},
			outcome{kind: outcomeDeferred, delay: hourMs, quietExtra: hourMs, heldBy: heldByQuiet}},
		{"both, the quiet hours longer", booked(3 * h), explained(h, 2*h, "1/12h"), true, time.Time{},
			outcome{kind: outcomeDeferred, delay: 3 * hourMs, quietExtra: 2 * hourMs, heldBy: heldByQuiet}},
		{"both, the rules longer", booked(3 * h), explained(2*h, h, "1/12h"), true, time.Time{},
			outcome{kind: outcomeDeferred, delay: 3 * hourMs, quietExtra: hourMs, heldBy: "1/12h"}},
		{"a tie goes to the rules", booked(2 * h), explained(h, h, "1/12h"), true, time.Time{},
			outcome{kind: outcomeDeferred, delay: 2 * hourMs, quietExtra: hourMs, heldBy: "1/12h"}},
		{"dropped by the quiet hours", late(9 * h), explained(10*time.Minute, 9*h-10*time.Minute, "min-gap 3s"), true, at(h),
			outcome{kind: outcomeDropped, quietDropped: true, heldBy: heldByQuiet}},
		{"dropped, the rules too late already", late(9 * h), explained(2*h, 7*h, "1/12h"), true, at(h),
			outcome{kind: outcomeDropped, heldBy: heldByQuiet}},
		{"dropped by a rule", late(2 * h), explained(2*h, 0, "1/12h"), true, at(h),
			outcome{kind: outcomeDropped, heldBy: "1/12h"}},
		{"refused under quiet hours without a ttl", late(63 * 24 * h), explained(62*24*h, 10*h, "1/1d"), true, time.Time{},
			outcome{kind: outcomeDropped, quietDropped: true, heldBy: "1/1d"}},
		{"not explained", booked(h), throttle.Explanation{}, false, time.Time{}, outcome{kind: outcomeDeferred, delay: hourMs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := outcomeOf(tt.r, tt.ex, tt.explained, tt.deadline)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(outcome{})); diff != "" {
				t.Errorf("outcomeOf (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSimulateParseRuleSet(t *testing.T) {
	quiet := func(from, to time.Duration) *throttle.Quiet {
		return &throttle.Quiet{From: from * time.Hour, To: to * time.Hour}
	}
	shared := sharedRules{quiet: *quiet(22, 8), categories: map[string]throttle.Category{
		"marketing": {Limits: []throttle.Limit{{N: 2, Window: 24 * time.Hour}}},
		"social":    {Limits: []throttle.Limit{{N: 10, Window: time.Hour}}},
	}}
	tests := []struct {
		name, rules string
		wantName    string
		wantQuiet   throttle.Quiet
		wantCats    map[string]throttle.Category
	}{
		{"the shared rules", "10/1m,100/24h@3s", "10/1m,100/24h min-gap 3s", *quiet(22, 8), shared.categories},
		{"own quiet hours off", "10/1m@3s quiet=off", "10/1m min-gap 3s quiet=off", throttle.Quiet{}, shared.categories},
		{"own quiet hours and a category replaced", "10/1m @3s quiet=23:00-07:00 ; marketing=1/1d quiet=off", "10/1m min-gap 3s quiet=23:00-07:00; marketing=1/24h quiet=off",
			*quiet(23, 7), map[string]throttle.Category{
				"marketing": {Limits: []throttle.Limit{{N: 1, Window: 24 * time.Hour}}, Quiet: &throttle.Quiet{}},
				"social":    shared.categories["social"],
			}},
		{"a category added", "@2s; promo=1/1h global=off", "min-gap 2s; promo=1/1h global=off", *quiet(22, 8), map[string]throttle.Category{
			"marketing": shared.categories["marketing"], "social": shared.categories["social"],
			"promo": {Limits: []throttle.Limit{{N: 1, Window: time.Hour}}, SkipGlobal: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseRuleSet(tt.rules, shared)
			if err != nil {
				t.Fatal(err)
			}
			if got.name != tt.wantName {
				t.Errorf("name %q, want %q", got.name, tt.wantName)
			}
			if diff := cmp.Diff(tt.wantQuiet, got.policy.Quiet); diff != "" {
				t.Errorf("quiet hours (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCats, got.policy.Categories); diff != "" {
				t.Errorf("categories (-want +got):\n%s", diff)
			}
		})
	}
	if len(shared.categories) != 2 || shared.categories["marketing"].Limits[0].N != 2 {
		t.Errorf("parseRuleSet changed the shared categories: %v", shared.categories)
	}
	for _, bad := range []string{"10/1m quiet=25:00-07:00", "10/1m quiet=22:00", "quiet=22:00-08:00", "10/1m; Marketing=1/1d", "10/1m; marketing"} {
		if _, err := parseRuleSet(bad, shared); err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("parseRuleSet(%q) = %v, want an error quoting it", bad, err)
		}
	}
}

// TestSimulateCommandQuietHours: the text report shows what every rule
// set shares, counts the quiet hours among what held pushes back and
// shows their time in a table of its own, and a table by category; --json
// has the same figures.
func TestSimulateCommandQuietHours(t *testing.T) {
	o := Options{Rules: []string{"1/12h", "1/12h quiet=off"}, QuietHours: "22:00-08:00", Categories: "social=none",
		Trace: writeFile(t, "trace.csv", quietTrace)}
	stdout, _ := replay(t, o)
	rep := textReport(t, stdout)
	if want := "every rule set: quiet hours 22:00-08:00; categories social=none; lines without a timezone in UTC"; rep.setup != want {
		t.Errorf("setup line %q, want %q", rep.setup, want)
	}
	if want := []string{"1/12h", "1/12h quiet=off"}; !slices.Equal(rep.order, want) {
		t.Errorf("rule sets %q, want %q", rep.order, want)
	}
	wantQuiet := map[string][]string{
		"1/12h":           {"3", "42.9%", "9h30m", "10h0m", "54.5%", "0"},
		"1/12h quiet=off": {"-", "-", "-", "-", "-", "-"},
	}
	if diff := cmp.Diff(wantQuiet, rep.quiet); diff != "" {
		t.Errorf("quiet-hours table (-want +got):\n%s\n%s", diff, stdout)
	}
	if want := "1/12h: held back by 1/12h 67%, quiet hours 33%"; !slices.Contains(rep.held, want) {
		t.Errorf("held-back lines %q, want %q", rep.held, want)
	}
	wantCats := map[string][]string{
		"(none)": {"5", "3", "2", "40.0%", "0", "0.0%", "0", "0", "19h0m", "2"},
		"social": {"2", "1", "1", "50.0%", "0", "0.0%", "0", "0", "21h59m", "1"},
	}
	if diff := cmp.Diff(wantCats, rep.cats["1/12h"]); diff != "" {
		t.Errorf("table by category of 1/12h (-want +got):\n%s", diff)
	}
	if got := rep.cats["1/12h quiet=off"]["social"]; len(got) == 0 || got[len(got)-1] != "-" {
		t.Errorf("without quiet hours, social's moved %q, want -", got)
	}

	o.JSON = true
	stdout, _ = replay(t, o)
	var raw []map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	for _, key := range []string{"rules", "quiet_hours", "timezone", "category_rules", "held_back_by", "quiet", "categories", "delay_total_ms"} {
		if _, ok := raw[0][key]; !ok {
			t.Errorf("--json has no %q: %v", key, raw[0])
		}
	}
	if _, ok := raw[1]["quiet"]; ok {
		t.Errorf("--json has quiet figures for the rule set without quiet hours: %v", raw[1])
	}
	q, _ := raw[0]["quiet"].(map[string]any)
	for _, key := range []string{"deferred", "deferred_pct", "dropped", "extra_delay_p50_ms", "extra_delay_max_ms", "extra_delay_total_ms", "delay_pct"} {
		if _, ok := q[key]; !ok {
			t.Errorf("--json's quiet has no %q: %v", key, q)
		}
	}
	var results []Result
	if err := json.Unmarshal([]byte(stdout), &results); err != nil {
		t.Fatal(err)
	}
	r := results[0]
	if r.QuietHours != "22:00-08:00" || r.Timezone != "UTC" || r.CategoryRules["social"] != "none" || r.HeldBy[heldByQuiet] != 1 ||
		r.Quiet.Deferred != 3 || r.Quiet.DelayMax != 10*hourMs || len(r.Categories) != 2 || r.Categories[1].QuietDeferred != 1 {
		t.Errorf("--json result: %+v", r)
	}
}
