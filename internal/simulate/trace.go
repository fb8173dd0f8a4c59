package simulate

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/throttle"
)

// traceEvent is one push of a trace: a user at an instant (Unix ms), in
// a category and a time zone, with the categories the user had opted out
// of then, the four as indexes into its trace's tables, so a million
// events are 24 MB the garbage collector need not scan.
type traceEvent struct {
	at   int64
	user int32  // trace.users
	cat  uint16 // trace.categories; 0 is none
	zone uint16 // trace.zones; 0 is the default (--timezone)
	opt  uint16 // trace.optOuts; 0 is none
}

// trace is what readTrace read: the events, sorted by time, and the
// users, categories and zones they name, each once.
type trace struct {
	events []traceEvent
	users  []string
	// categories[0] is "" (none); catLines are the first line naming each
	// (catLines[0] is 0).
	categories []string
	catLines   []int
	// zones[0] is nil, the default zone.
	zones []*time.Location
	// optOuts are the distinct sets of opted-out categories the lines
	// name, each sorted; optOuts[0] is none.
	optOuts [][]string
}

// maxTags is the most distinct categories, and zones, a trace may name.
const maxTags = 1<<16 - 1

// traceLineError is a trace line that cannot be read; it names the line and
// the field.
type traceLineError struct {
	Line  int
	Field string // "time", "user", "category", "timezone" or "opted_out"
	Text  string
	Err   error
}

func (e *traceLineError) Error() string {
	msg := fmt.Sprintf("line %d: %s %q", e.Line, e.Field, e.Text)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *traceLineError) Unwrap() error { return e.Err }

var (
	// errNotTime is the reason a time field did not parse.
	errNotTime = errors.New("want RFC 3339 (2026-11-21T10:00:00Z) or Unix epoch milliseconds")
	// errNotCategory is the reason a category field is not a name.
	errNotCategory = fmt.Errorf("want 1 to %d of a-z, 0-9, _ and - (or nothing, for none)", throttle.MaxCategoryLen)
)

// readTrace reads "time,user[,category[,timezone[,opted_out]]]" lines.
// Blank lines and lines starting with # are skipped, and so is a first
// line whose time does not parse (a header). An empty category is none; an
// empty timezone is the default zone; opted_out is the categories the user
// had opted out of at that push, separated by spaces or ";" (empty:
// none), as their preferences would say (throttle.Preferences.OptOut).
// Further columns are ignored; surrounding spaces and
// double quotes are trimmed. The events come back sorted by time (stable,
// so equal times keep their input order). progress, when not nil, is
// called with the bytes and lines read so far every 64k lines.
func readTrace(r io.Reader, progress func(bytesRead int64, lines int)) (trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var (
		tr      = trace{categories: []string{""}, catLines: []int{0}, zones: []*time.Location{nil}, optOuts: [][]string{nil}}
		read    int64
		line    int
		content int // non-blank, non-comment lines seen
		sorted  = true
		// Indexes into tr's tables: no string per line, one per distinct
		// user, category and zone, and each zone loaded once.
		users = map[string]int32{}
		cats  = map[string]uint16{}
		zones = map[string]uint16{}
		opts  = map[string]uint16{}
	)
	for sc.Scan() {
		line++
		b := sc.Bytes()
		read += int64(len(b)) + 1
		if progress != nil && line%65536 == 0 {
			progress(read, line)
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 || b[0] == '#' {
			continue
		}
		content++
		ts, rest, _ := bytes.Cut(b, comma)
		ts = unquote(ts)
		at, err := parseTraceTime(ts)
		if err != nil {
			if content == 1 {
				continue // a header such as "time,user"
			}
			return trace{}, &traceLineError{Line: line, Field: "time", Text: string(ts), Err: err}
		}
		user, rest, _ := bytes.Cut(rest, comma)
		cat, rest, _ := bytes.Cut(rest, comma)
		zone, rest, _ := bytes.Cut(rest, comma)
		opt, _, _ := bytes.Cut(rest, comma)
		ev := traceEvent{at: at}
		var ok bool
		if user = unquote(user); len(user) == 0 {
			return trace{}, &traceLineError{Line: line, Field: "user", Text: "", Err: errors.New("empty (want time,user[,category[,timezone[,opted_out]]])")}
		}
		if ev.user, ok = users[string(user)]; !ok {
			ev.user = int32(len(tr.users))
			tr.users = append(tr.users, string(user))
			users[tr.users[ev.user]] = ev.user
		}
		if cat = unquote(cat); len(cat) > 0 {
			if ev.cat, ok = cats[string(cat)]; !ok {
				name := string(cat)
				switch {
				case !throttle.ValidCategory(name):
					return trace{}, &traceLineError{Line: line, Field: "category", Text: name, Err: errNotCategory}
				case len(tr.categories) > maxTags:
					return trace{}, &traceLineError{Line: line, Field: "category", Text: name, Err: fmt.Errorf("more than %d categories", maxTags)}
				}
				ev.cat = uint16(len(tr.categories))
				tr.categories, tr.catLines = append(tr.categories, name), append(tr.catLines, line)
				cats[name] = ev.cat
			}
		}
		if zone = unquote(zone); len(zone) > 0 {
			if ev.zone, ok = zones[string(zone)]; !ok {
				name := string(zone)
				loc, err := loadZone(name)
				switch {
				case err != nil:
					return trace{}, &traceLineError{Line: line, Field: "timezone", Text: name, Err: err}
				case len(tr.zones) > maxTags:
					return trace{}, &traceLineError{Line: line, Field: "timezone", Text: name, Err: fmt.Errorf("more than %d time zones", maxTags)}
				}
				ev.zone = uint16(len(tr.zones))
				tr.zones = append(tr.zones, loc)
				zones[name] = ev.zone
			}
		}
		if opt = unquote(opt); len(opt) > 0 {
			if ev.opt, ok = opts[string(opt)]; !ok {
				set, err := parseOptOuts(string(opt))
				switch {
				case err != nil:
					return trace{}, &traceLineError{Line: line, Field: "opted_out", Text: string(opt), Err: err}
				case len(tr.optOuts) > maxTags:
					return trace{}, &traceLineError{Line: line, Field: "opted_out", Text: string(opt), Err: fmt.Errorf("more than %d sets of opt-outs", maxTags)}
				}
				if set != nil {
					ev.opt = uint16(len(tr.optOuts))
					tr.optOuts = append(tr.optOuts, set)
				}
				opts[string(opt)] = ev.opt
			}
		}
		if n := len(tr.events); n > 0 && at < tr.events[n-1].at {
			sorted = false
		}
		tr.events = append(tr.events, ev)
	}
	if err := sc.Err(); err != nil {
		return trace{}, fmt.Errorf("line %d: %w", line+1, err)
	}
	if !sorted {
		slices.SortStableFunc(tr.events, func(a, b traceEvent) int { return cmp.Compare(a.at, b.at) })
	}
	return tr, nil
}

var comma = []byte{','}

// loadZone loads an IANA zone name by the rule a recipient's timezone is
// checked by (payload's, on the built-in zone database), so a trace line's
// zone is valid exactly when a job's would be.
func loadZone(name string) (*time.Location, error) {
	return payload.Recipient{Timezone: name}.Location()
}

// parseOptOuts reads an opted_out field: category names separated by
// spaces or ";", each once, at most throttle.MaxOptOuts; nil for none.
func parseOptOuts(s string) ([]string, error) {
	var set []string
	for _, c := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ' ' }) {
		if !throttle.ValidCategory(c) {
			return nil, fmt.Errorf("%q: %w", c, errNotCategory)
		}
		if !slices.Contains(set, c) {
			set = append(set, c)
		}
	}
	if len(set) > throttle.MaxOptOuts {
		return nil, fmt.Errorf("%d categories, at most %d", len(set), throttle.MaxOptOuts)
	}
	slices.Sort(set)
	return set, nil
}

// unquote trims spaces and one pair of double quotes around a field.
func unquote(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		b = bytes.TrimSpace(b[1 : len(b)-1])
	}
	return b
}

// parseTraceTime reads RFC 3339 (fractional seconds allowed) or Unix epoch
// milliseconds.
func parseTraceTime(b []byte) (int64, error) {
	if len(b) == 0 {
		return 0, errNotTime
	}
	if b[0] >= '0' && b[0] <= '9' && !bytes.ContainsAny(b, "-:T") {
		ms, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return 0, errNotTime
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, string(b))
	if err != nil {
		return 0, errNotTime
	}
	return t.UnixMilli(), nil
}

// traceGen describes a synthetic trace (--generate).
type traceGen struct {
	n, users int
	start    time.Time
	seed     uint64 // makes it reproducible
	// categories, when set, tag each burst with one of them, picked at
	// random ("" is no category).
	categories []string
	// zones, when set, give user u the zone zones[u % len(zones)].
	zones []string
}

// writeTrace writes the synthetic bursty trace g describes: n events over
// users users from start. Each user has a random weight (a few users are
// much busier than the rest) and events come in bursts of 1 to 20 pushes a
// few hundred milliseconds apart, bursts spread over one day. The columns
// are time,user, then category and timezone when g tags lines with them.
func writeTrace(w io.Writer, g traceGen) error {
	rng := rand.New(rand.NewPCG(g.seed, g.seed^0x9e3779b97f4a7c15))
	bw := bufio.NewWriterSize(w, 1<<16)
	header := "time,user\n"
	switch {
	case len(g.zones) > 0:
		header = "time,user,category,timezone\n"
	case len(g.categories) > 0:
		header = "time,user,category\n"
	}
	if _, err := bw.WriteString(header); err != nil {
		return err
	}
	// Per-user cumulative weights, skewed: weight 1/sqrt(rank+1), so the
	// busiest of 10k users gets about 0.5% of the events.
	cum := make([]float64, g.users)
	total := 0.0
	for i := range cum {
		total += 1 / math.Sqrt(float64(i+1))
		cum[i] = total
	}
	t0 := g.start.UnixMilli()
	const day = int64(24 * time.Hour / time.Millisecond)
	// Bursts are generated in time order: the next burst starts a random
	// exponential gap after the previous one, scaled so n events span a day.
	meanBurst := 10.5
	meanGap := float64(day) / (float64(g.n) / meanBurst)
	at := t0
	var buf []byte
	for written := 0; written < g.n; {
		at += int64(rng.ExpFloat64() * meanGap)
		x := rng.Float64() * total
		u, _ := slices.BinarySearch(cum, x)
		u = min(u, g.users-1)
		size := 1 + rng.IntN(20)
		var tags []byte // the columns after the user, the same for the burst
		if len(g.categories) > 0 || len(g.zones) > 0 {
			tags = append(tags, ',')
		}
		if len(g.categories) > 0 {
			tags = append(tags, g.categories[rng.IntN(len(g.categories))]...)
		}
		if len(g.zones) > 0 {
			tags = append(append(tags, ','), g.zones[u%len(g.zones)]...)
		}
		t := at
		for k := 0; k < size && written < g.n; k++ {
			buf = strconv.AppendInt(buf[:0], t, 10)
			buf = append(buf, ",u-"...)
			buf = strconv.AppendInt(buf, int64(u), 10)
			buf = append(buf, tags...)
			buf = append(buf, '\n')
			if _, err := bw.Write(buf); err != nil {
				return err
			}
			written++
			t += int64(rng.IntN(500))
		}
	}
	return bw.Flush()
}
