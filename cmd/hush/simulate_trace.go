package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// traceEvent is one push of a trace: a user at an instant (Unix ms).
type traceEvent struct {
	at   int64
	user string
}

// traceLineError is a trace line that cannot be read; it names the line and
// the field.
type traceLineError struct {
	Line  int
	Field string // "time" or "user"
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

// errNotTime is the reason a time field did not parse.
var errNotTime = fmt.Errorf("want RFC 3339 (2026-11-21T10:00:00Z) or Unix epoch milliseconds")

// readTrace reads "time,user" lines. Blank lines and lines starting with #
// are skipped, and so is a first line whose time does not parse (a header).
// Further columns are ignored; surrounding spaces and double quotes are
// trimmed. The events come back sorted by time (stable, so equal times keep
// their input order). progress, when not nil, is called with the bytes and
// lines read so far every 64k lines.
func readTrace(r io.Reader, progress func(bytesRead int64, lines int)) ([]traceEvent, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	var (
		events  []traceEvent
		read    int64
		line    int
		content int // non-blank, non-comment lines seen
		users   = map[string]string{}
		sorted  = true
	)
	for sc.Scan() {
		line++
		b := sc.Bytes()
		read += int64(len(b)) + 1
		if progress != nil && line%65536 == 0 {
			progress(read, line)
		}
		s := strings.TrimSpace(string(b))
		if s == "" || s[0] == '#' {
			continue
		}
		content++
		ts, rest, _ := strings.Cut(s, ",")
		ts = unquote(ts)
		at, err := parseTraceTime(ts)
		if err != nil {
			if content == 1 {
				continue // a header such as "time,user"
			}
			return nil, &traceLineError{Line: line, Field: "time", Text: ts, Err: err}
		}
		user, _, _ := strings.Cut(rest, ",")
		user = unquote(user)
		if user == "" {
			return nil, &traceLineError{Line: line, Field: "user", Text: user, Err: fmt.Errorf("empty (want time,user)")}
		}
		// One string per distinct user: a million lines over ten thousand
		// users keep ten thousand strings.
		if u, ok := users[user]; ok {
			user = u
		} else {
			users[user] = user
		}
		if n := len(events); n > 0 && at < events[n-1].at {
			sorted = false
		}
		events = append(events, traceEvent{at: at, user: user})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if !sorted {
		slices.SortStableFunc(events, func(a, b traceEvent) int { return cmp.Compare(a.at, b.at) })
	}
	return events, nil
}

func unquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	return s
}

// parseTraceTime reads RFC 3339 (fractional seconds allowed) or Unix epoch
// milliseconds.
func parseTraceTime(s string) (int64, error) {
	if s == "" {
		return 0, errNotTime
	}
	if s[0] >= '0' && s[0] <= '9' && !strings.ContainsAny(s, "-:T") {
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, errNotTime
		}
		return ms, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, errNotTime
	}
	return t.UnixMilli(), nil
}

// writeTrace writes a synthetic bursty trace of n events over users users,
// starting at start: each user has a random weight (a few users are much
// busier than the rest) and events come in bursts of 1 to 20 pushes a few
// hundred milliseconds apart, bursts spread over one day. seed makes it
// reproducible.
func writeTrace(w io.Writer, n, users int, start time.Time, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	bw := bufio.NewWriterSize(w, 1<<16)
	if _, err := bw.WriteString("time,user\n"); err != nil {
		return err
	}
	// Per-user cumulative weights, skewed: weight 1/sqrt(rank+1), so the
	// busiest of 10k users gets about 0.5% of the events.
	cum := make([]float64, users)
	total := 0.0
	for i := range cum {
		total += 1 / math.Sqrt(float64(i+1))
		cum[i] = total
	}
	t0 := start.UnixMilli()
	const day = int64(24 * time.Hour / time.Millisecond)
	// Bursts are generated in time order: the next burst starts a random
	// exponential gap after the previous one, scaled so n events span a day.
	meanBurst := 10.5
	meanGap := float64(day) / (float64(n) / meanBurst)
	at := t0
	var buf []byte
	for written := 0; written < n; {
		at += int64(rng.ExpFloat64() * meanGap)
		x := rng.Float64() * total
		u, _ := slices.BinarySearch(cum, x)
		u = min(u, users-1)
		size := 1 + rng.IntN(20)
		t := at
		for k := 0; k < size && written < n; k++ {
			buf = strconv.AppendInt(buf[:0], t, 10)
			buf = append(buf, ",u-"...)
			buf = strconv.AppendInt(buf, int64(u), 10)
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
