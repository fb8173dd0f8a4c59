package throttle

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has
)

// quietByWallClock is the definition: t is quiet when its wall-clock time
// of day in loc is in [from, to) (wrapping midnight when from > to).
func quietByWallClock(q Quiet, t int64, loc *time.Location) bool {
	w := time.UnixMilli(t).In(loc)
	tod := ((int64(w.Hour())*60+int64(w.Minute()))*60+int64(w.Second()))*1000 + int64(w.Nanosecond()/1e6)
	from, to := q.From.Milliseconds(), q.To.Milliseconds()
	if from < to {
		return from <= tod && tod < to
	}
	return tod >= from || tod < to
}

// The intervals agree with the wall-clock definition over a whole year in
// zones with an hour's change, a half hour's (Lord Howe), none, one south
// of the equator and one with a change at midnight (Santiago), for windows
// across midnight, inside one day, and ending or starting where clocks
// jump: every interval's ends are exact to the millisecond, and every five
// minutes and at random instants no quiet instant is missed.
func TestQuietIntervalsFollowTheWallClock(t *testing.T) {
	t.Parallel()
	zones := []string{"Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Tokyo", "America/Santiago", "Pacific/Chatham", "UTC"}
	windows := []Quiet{
		{22 * time.Hour, 8 * time.Hour},
		{1 * time.Hour, 5 * time.Hour},
		{2*time.Hour + 30*time.Minute, 3 * time.Hour},
		{0, 3 * time.Hour},
		{23 * time.Hour, 0},
		{2 * time.Hour, 2*time.Hour + time.Millisecond},
		{3*time.Hour + 59*time.Minute, 2 * time.Hour},
	}
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	to := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range windows {
			ivs := q.intervals(loc, from, to)
			if len(ivs) < 300 && q.To-q.From != time.Millisecond {
				t.Errorf("%s %s: %d intervals in a year", zone, q, len(ivs))
			}
			in := func(x int64) bool {
				k := sort.Search(len(ivs), func(j int) bool { return ivs[j].e > x })
				return k < len(ivs) && ivs[k].s <= x
			}
			for k, iv := range ivs {
				if k > 0 && iv.s <= ivs[k-1].e {
					t.Fatalf("%s %s: intervals %d and %d touch or overlap", zone, q, k-1, k)
				}
				for _, c := range []struct {
					at   int64
					want bool
				}{{iv.s - 1, false}, {iv.s, true}, {iv.e - 1, true}, {iv.e, false}} {
					if got := quietByWallClock(q, c.at, loc); got != c.want {
						t.Fatalf("%s %s: interval [%s, %s): at %s quiet %v, want %v", zone, q,
							time.UnixMilli(iv.s).In(loc), time.UnixMilli(iv.e).In(loc), time.UnixMilli(c.at).In(loc), got, c.want)
					}
				}
			}
			check := func(x int64) {
				if x < ivs[0].e || x > ivs[len(ivs)-1].s {
					return // the ends of the range
				}
				if got, want := in(x), quietByWallClock(q, x, loc); got != want {
					t.Fatalf("%s %s: at %s intervals say %v, wall clock %v", zone, q, time.UnixMilli(x).In(loc), got, want)
				}
			}
			if len(ivs) == 0 {
				continue
			}
			for x := from; x < to; x += 5 * 60_000 {
				check(x)
			}
			for range 2000 {
				check(from + rng.Int64N(to-from))
			}
		}
	}
}

// A clock change inside the quiet hours: in Berlin, 22:00-08:00 is 9 hours
// of real time on the night clocks go forward and 11 on the night they go
// back; a window the clocks jump over (02:00-03:00 in spring) does not
// happen that night, and one the clocks go through twice (02:00-02:30 in
// autumn) happens twice.
func TestQuietHoursAcrossClockChanges(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	day := func(y int, m time.Month, d int) int64 { return time.Date(y, m, d, 12, 0, 0, 0, berlin).UnixMilli() }
	cases := []struct {
		name     string
		q        Quiet
		noon     int64 // the noon before the night
		want     []time.Duration
		wantFrom time.Time
	}{
		{"spring forward, 22-08", Quiet{22 * time.Hour, 8 * time.Hour}, day(2027, 3, 27), []time.Duration{9 * time.Hour},
			time.Date(2027, 3, 27, 22, 0, 0, 0, berlin)},
		{"fall back, 22-08", Quiet{22 * time.Hour, 8 * time.Hour}, day(2026, 10, 24), []time.Duration{11 * time.Hour},
			time.Date(2026, 10, 24, 22, 0, 0, 0, berlin)},
		{"spring forward, 02-03 does not happen", Quiet{2 * time.Hour, 3 * time.Hour}, day(2027, 3, 27), nil, time.Time{}},
		{"fall back, 02:00-02:30 happens twice", Quiet{2 * time.Hour, 2*time.Hour + 30*time.Minute}, day(2026, 10, 24),
			[]time.Duration{30 * time.Minute, 30 * time.Minute}, time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ivs := c.q.intervals(berlin, c.noon, c.noon+dayMs-1)
			var got []time.Duration
			for _, iv := range ivs {
				if iv.s > c.noon && iv.s < c.noon+dayMs {
					got = append(got, time.Duration(iv.e-iv.s)*time.Millisecond)
				}
			}
			if len(got) != len(c.want) {
				t.Fatalf("intervals %v, want lengths %v", got, c.want)
			}
			for i := range got {
				if got[i] != c.want[i] {
					t.Errorf("interval %d lasts %s, want %s", i, got[i], c.want[i])
				}
			}
			if len(c.want) > 0 && !time.UnixMilli(ivs[0].s).Equal(c.wantFrom) {
				t.Errorf("first interval starts %s, want %s", time.UnixMilli(ivs[0].s).UTC(), c.wantFrom.UTC())
			}
		})
	}
}
