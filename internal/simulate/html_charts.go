package simulate

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// svgChart is one chart's geometry, computed here and drawn by the
// "chart" template of report.html.tmpl, so every label goes through
// html/template's escaping. Coordinates are in the viewBox's units, which
// the page shows at about one pixel each.
type svgChart struct {
	W, H  float64
	Label string // the chart's accessible name
	Grid  []svgLine
	Axes  []svgLine
	Bars  []svgRect
	Paths []svgPath
	Marks []svgMark
	Texts []svgText
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
}

type svgRect struct {
	X, Y, W, H float64
	Class      string
	Title      string // the tooltip
}

type svgPath struct {
	D     string
	Class string
	Title string
}

// svgMark is a labelled vertical line at a delay: a percentile.
type svgMark struct {
	X, Y1, Y2 float64
	Label     svgText
	Field     string // the report column it marks (p50, p90, p99)
	Ms        int64
}

type svgText struct {
	X, Y   float64
	Prefix string // written before Text, outside its data-field
	Text   string
	Anchor string // start, middle or end
	Class  string
	Rotate bool // read bottom to top (a y axis title)
	// Set and Field, when Field is set, name the report figure the text
	// shows (data-set, data-field), so tests can compare it with the
	// text report.
	Set   int
	Field string
}

// plotBox is the area inside a chart's axes.
type plotBox struct{ L, T, R, B float64 }

func (p plotBox) W() float64 { return p.R - p.L }
func (p plotBox) H() float64 { return p.B - p.T }

// delayTicks are the delays the delay axis may label, in milliseconds.
var delayTicks = []struct {
	ms    int64
	label string
}{
	{1, "1ms"}, {10, "10ms"}, {100, "100ms"}, {1e3, "1s"}, {10e3, "10s"},
	{60e3, "1m"}, {600e3, "10m"}, {3600e3, "1h"}, {6 * 3600e3, "6h"}, {24 * 3600e3, "1d"},
	{7 * 24 * 3600e3, "7d"}, {30 * 24 * 3600e3, "30d"}, {365 * 24 * 3600e3, "365d"},
}

// delayAxis maps a delay to x: a band for 0 (sent at once) at the left,
// then a log scale from Lo to Hi ms.
type delayAxis struct {
	Lo, Hi int64
	box    plotBox
	band   float64
}

// newDelayRange returns the log scale's ends that every rule set's delays
// fit in: labelled delays at or below the shortest wait and at or above the
// longest.
func newDelayRange(sets []setReport) (lo, hi int64) {
	minPos, maxD := int64(math.MaxInt64), int64(0)
	for _, s := range sets {
		if s.Result.Detail == nil {
			continue
		}
		d := s.Result.Detail.Delays
		if i := sort.Search(len(d), func(i int) bool { return d[i] > 0 }); i < len(d) {
			minPos = min(minPos, d[i])
		}
		maxD = max(maxD, s.Result.DelayMax)
	}
	if maxD == 0 {
		return 1e3, 60e3 // nothing waited: an axis of seconds
	}
	lo, hi = delayTicks[0].ms, 0
	for _, t := range delayTicks {
		if t.ms <= minPos {
			lo = t.ms
		}
		if hi == 0 && t.ms >= maxD && t.ms > lo {
			hi = t.ms
		}
	}
	if hi == 0 {
		hi = maxD
	}
	return lo, hi
}

const zeroBand = 44 // width of the delay axis's "0" band

func (a delayAxis) x(ms int64) float64 {
	if ms <= 0 {
		return a.box.L
	}
	v := max(float64(ms), float64(a.Lo))
	f := (math.Log(v) - math.Log(float64(a.Lo))) / (math.Log(float64(a.Hi)) - math.Log(float64(a.Lo)))
	return a.box.L + a.band + min(f, 1)*(a.box.W()-a.band)
}

// shareY maps a share 0..1 to y.
func shareY(box plotBox, share float64) float64 { return box.B - share*box.H() }

// cdfPath is the step curve of the share of all events (pushes) sent
// within each delay, from the sorted delays of those sent (0: at once).
// Steps closer than half a unit are merged, so a million delays make at
// most about two points per unit of width.
func cdfPath(delays []int64, events int, a delayAxis) string {
	var b strings.Builder
	n := float64(events)
	zeros := sort.Search(len(delays), func(i int) bool { return delays[i] > 0 })
	curX, curY := a.x(0), shareY(a.box, float64(zeros)/n)
	fmt.Fprintf(&b, "M%.1f %.1f", curX, curY)
	pendY := curY
	for i := zeros; i < len(delays); {
		v := delays[i]
		j := i + 1
		for j < len(delays) && delays[j] == v {
			j++
		}
		px := math.Round(a.x(v)*2) / 2
		if px > curX {
			if pendY != curY {
				fmt.Fprintf(&b, "V%.1f", pendY)
				curY = pendY
			}
			fmt.Fprintf(&b, "H%.1f", px)
			curX = px
		}
		pendY = shareY(a.box, float64(j)/n)
		i = j
	}
	if pendY != curY {
		fmt.Fprintf(&b, "V%.1f", pendY)
	}
	fmt.Fprintf(&b, "H%.1f", a.box.R)
	return b.String()
}

// delayFrame draws a delay chart's grid, axes and their labels.
func delayFrame(c *svgChart, a delayAxis) {
	box := a.box
	for _, s := range []float64{0, 0.25, 0.5, 0.75, 1} {
		y := shareY(box, s)
		c.Grid = append(c.Grid, svgLine{box.L, y, box.R, y})
		c.Texts = append(c.Texts, svgText{X: box.L - 8, Y: y + 4, Text: fmt.Sprintf("%.0f%%", 100*s), Anchor: "end", Class: "tick"})
	}
	c.Texts = append(c.Texts, svgText{X: a.x(0), Y: box.B + 18, Text: "0", Anchor: "middle", Class: "tick"})
	c.Grid = append(c.Grid, svgLine{box.L + a.band, box.T, box.L + a.band, box.B})
	for _, t := range delayTicks {
		if t.ms < a.Lo || t.ms > a.Hi {
			continue
		}
		x := a.x(t.ms)
		c.Grid = append(c.Grid, svgLine{x, box.T, x, box.B})
		c.Texts = append(c.Texts, svgText{X: x, Y: box.B + 18, Text: t.label, Anchor: "middle", Class: "tick"})
	}
	c.Axes = append(c.Axes, svgLine{box.L, box.B, box.R, box.B}, svgLine{box.L, box.T, box.L, box.B})
	c.Texts = append(c.Texts,
		svgText{X: box.L + a.band + (box.W()-a.band)/2, Y: box.B + 40, Text: "delay until sent (log scale; 0 = sent at once)", Anchor: "middle", Class: "axis-title"},
		svgText{X: 16, Y: box.T + box.H()/2, Text: "pushes sent within the delay", Anchor: "middle", Class: "axis-title", Rotate: true},
	)
}

// delayChart is one rule set's delays as a cumulative curve over all its
// pushes, with the table's percentiles marked.
func delayChart(i int, s setReport, lo, hi int64) svgChart {
	c := svgChart{W: 660, H: 380, Label: "share of pushes sent within each delay under " + s.Result.Rules}
	a := delayAxis{Lo: lo, Hi: hi, box: plotBox{L: 64, T: 58, R: 640, B: 318}, band: zeroBand}
	delayFrame(&c, a)
	r := s.Result
	if r.Events == 0 || r.Detail == nil {
		c.Texts = append(c.Texts, svgText{X: a.box.L + a.box.W()/2, Y: a.box.T + a.box.H()/2, Text: "no pushes in the trace", Anchor: "middle", Class: "empty"})
		return c
	}
	c.Paths = append(c.Paths, svgPath{D: cdfPath(r.Detail.Delays, r.Events, a), Class: "cdf " + setClass(i), Title: r.Rules})
	// Percentile labels sit on three rows above the plot, so close ones
	// do not overlap.
	for row, p := range []struct {
		field string
		ms    int64
	}{{"p50", r.DelayP50}, {"p90", r.DelayP90}, {"p99", r.DelayP99}} {
		x := a.x(p.ms)
		label := svgText{X: x, Y: a.box.T - 40 + 15*float64(row), Prefix: p.field + " ", Text: s.cell(p.field), Anchor: "middle", Class: "mark-label", Set: i, Field: p.field}
		switch {
		case x < a.box.L+50:
			label.Anchor, label.X = "start", x-4
		case x > a.box.R-50:
			label.Anchor, label.X = "end", x+4
		}
		c.Marks = append(c.Marks, svgMark{X: x, Y1: label.Y + 4, Y2: a.box.B, Label: label, Field: p.field, Ms: p.ms})
	}
	if r.Allowed > 0 {
		y := shareY(a.box, float64(r.Allowed)/float64(r.Events))
		// Under the curve's first level, or above it when the level is too
		// low for a line between it and the axis.
		ly := y + 16
		if ly > a.box.B-6 {
			ly = y - 6
		}
		c.Texts = append(c.Texts, svgText{X: a.box.L + 4, Y: ly, Text: fmt.Sprintf("%.1f%% at once", 100*float64(r.Allowed)/float64(r.Events)), Class: "note"})
	}
	if r.Dropped > 0 {
		// In the gap between the curve's last level (the share sent) and
		// 100%, or under that level when the gap is too thin for a line.
		sent := shareY(a.box, float64(r.Allowed+r.Deferred)/float64(r.Events))
		y := (sent+a.box.T)/2 + 4
		if sent-a.box.T < 20 {
			y = sent + 18
		}
		c.Texts = append(c.Texts, svgText{X: a.box.R - 4, Y: y, Prefix: "dropped, never sent: ", Text: s.cell("dropped_pct"), Anchor: "end", Class: "note dropped-note", Set: i, Field: "dropped_pct"})
	}
	return c
}

// compareChart draws every rule set's delay curve on one chart.
func compareChart(sets []setReport, lo, hi int64) svgChart {
	c := svgChart{W: 1100, H: 400, Label: "share of pushes sent within each delay, per rule set"}
	a := delayAxis{Lo: lo, Hi: hi, box: plotBox{L: 64, T: 20, R: 1080, B: 338}, band: zeroBand}
	delayFrame(&c, a)
	for i, s := range sets {
		if s.Result.Events == 0 || s.Result.Detail == nil {
			continue
		}
		c.Paths = append(c.Paths, svgPath{D: cdfPath(s.Result.Detail.Delays, s.Result.Events, a), Class: "cdf " + setClass(i), Title: s.Result.Rules})
	}
	return c
}

// heldRow is one rule's bar in the held-back chart.
type heldRow struct {
	Rule  string
	Count int
	Share float64
	Pct   string
}

// heldRows are every rule of the set in its order (limits, then the gap),
// with what the report counted for it, and any other DeniedBy last.
func heldRows(s setReport) []heldRow {
	byRule := map[string]heldShare{}
	for _, h := range s.HeldBy {
		byRule[h.Rule] = h
	}
	var rows []heldRow
	add := func(rule string) {
		h, ok := byRule[rule]
		if !ok {
			h = heldShare{Rule: rule, Pct: "0%"}
		}
		delete(byRule, rule)
		rows = append(rows, heldRow{Rule: rule, Count: h.Count, Share: h.Share, Pct: h.Pct})
	}
	if s.Result.Detail != nil {
		for _, rule := range s.Result.Detail.Rules {
			add(rule)
		}
	}
	for _, h := range s.HeldBy {
		if _, left := byRule[h.Rule]; left {
			add(h.Rule)
		}
	}
	return rows
}

// heldChart draws, per rule, the share of the held-back pushes it held
// back; empty (H 0) when nothing was held back or it was not counted.
func heldChart(i int, s setReport) svgChart {
	rows := heldRows(s)
	if len(s.HeldBy) == 0 || len(rows) == 0 {
		return svgChart{}
	}
	const rowH, top = 46, 12
	// Room left of the bars for the longest rule's name (a category's
	// "marketing min-gap 1h"), about 7.5 units a character.
	longest := 0
	for _, r := range rows {
		longest = max(longest, len(ruleLabel(r.Rule)))
	}
	left := max(112, 7.5*float64(longest)+16)
	box := plotBox{L: left, T: top, R: left + 218, B: top + rowH*float64(len(rows))}
	c := svgChart{W: box.R + 90, H: box.B + 46, Label: "share of held-back pushes per rule under " + s.Result.Rules}
	for _, f := range []float64{0, 0.5, 1} {
		x := box.L + f*box.W()
		c.Grid = append(c.Grid, svgLine{x, box.T, x, box.B})
		c.Texts = append(c.Texts, svgText{X: x, Y: box.B + 16, Text: fmt.Sprintf("%.0f%%", 100*f), Anchor: "middle", Class: "tick"})
	}
	c.Axes = append(c.Axes, svgLine{box.L, box.T, box.L, box.B})
	c.Texts = append(c.Texts, svgText{X: box.L + box.W()/2, Y: box.B + 36, Text: "share of the pushes held back", Anchor: "middle", Class: "axis-title"})
	for k, r := range rows {
		y := box.T + rowH*float64(k)
		w := r.Share * box.W()
		c.Bars = append(c.Bars, svgRect{X: box.L, Y: y + 10, W: max(w, 1), H: rowH - 20, Class: "held " + setClass(i),
			Title: fmt.Sprintf("%s held back %s of the held-back pushes (%s)", r.Rule, r.Pct, countNoun(r.Count, "push", "pushes"))})
		c.Texts = append(c.Texts,
			svgText{X: box.L - 10, Y: y + rowH/2 + 5, Text: ruleLabel(r.Rule), Anchor: "end", Class: "rule"},
			svgText{X: box.L + w + 6, Y: y + rowH/2 - 1, Text: r.Pct, Class: "value", Set: i, Field: "held:" + r.Rule},
			svgText{X: box.L + w + 6, Y: y + rowH/2 + 13, Text: countNoun(r.Count, "push", "pushes"), Class: "sub"},
		)
	}
	return c
}

// ruleLabel names a rule for a chart ("" is a push the limiter blamed on
// no rule).
func ruleLabel(rule string) string {
	if rule == "" {
		return "(no rule)"
	}
	return rule
}

// timeChart stacks, per bin of trace time, the pushes sent at once,
// deferred and dropped; yMax is the scale's top (shared by every rule set).
func timeChart(i int, s setReport, yMax int) svgChart {
	c := svgChart{W: 1100, H: 330, Label: "pushes per time bin by outcome under " + s.Result.Rules}
	box := plotBox{L: 70, T: 16, R: 1080, B: 268}
	r := s.Result
	if r.Detail == nil || len(r.Detail.Timeline.Bins) == 0 {
		c.H = 60
		c.Texts = append(c.Texts, svgText{X: c.W / 2, Y: 30, Text: "no pushes in the trace", Anchor: "middle", Class: "empty"})
		return c
	}
	tl := r.Detail.Timeline
	step, top := niceScale(yMax)
	countY := func(n int) float64 { return box.B - float64(n)/float64(top)*box.H() }
	for v := 0; v <= top; v += step {
		y := countY(v)
		c.Grid = append(c.Grid, svgLine{box.L, y, box.R, y})
		c.Texts = append(c.Texts, svgText{X: box.L - 8, Y: y + 4, Text: fmtCount(v), Anchor: "end", Class: "tick"})
	}
	end := tl.Start + tl.Width*int64(len(tl.Bins))
	timeX := func(ms int64) float64 { return box.L + float64(ms-tl.Start)/float64(end-tl.Start)*box.W() }
	bw := box.W() / float64(len(tl.Bins))
	gap := min(bw*0.15, 2)
	for k, b := range tl.Bins {
		x := box.L + float64(k)*bw
		from := tl.Start + int64(k)*tl.Width
		when := fmt.Sprintf("%s to %s UTC", fmtClock(from, tl.Width), fmtClock(from+tl.Width, tl.Width))
		base := 0
		for _, part := range []struct {
			n           int
			class, what string
		}{{b.Allowed, "allowed", "sent at once"}, {b.Deferred, "deferred", "deferred"}, {b.Dropped, "dropped", "dropped"}} {
			if part.n == 0 {
				continue
			}
			y0, y1 := countY(base), countY(base+part.n)
			c.Bars = append(c.Bars, svgRect{X: x + gap/2, Y: y1, W: bw - gap, H: y0 - y1, Class: part.class,
				Title: fmt.Sprintf("%s: %s %s (of %d)", when, countNoun(part.n, "push", "pushes"), part.what, b.Allowed+b.Deferred+b.Dropped)})
			base += part.n
		}
	}
	for _, t := range timeTicks(tl.Start, end) {
		x := timeX(t.ms)
		c.Axes = append(c.Axes, svgLine{x, box.B, x, box.B + 5})
		c.Texts = append(c.Texts, svgText{X: x, Y: box.B + 20, Text: t.label, Anchor: "middle", Class: "tick"})
	}
	c.Axes = append(c.Axes, svgLine{box.L, box.B, box.R, box.B}, svgLine{box.L, box.T, box.L, box.B})
	c.Texts = append(c.Texts,
		svgText{X: box.L + box.W()/2, Y: box.B + 46, Text: fmt.Sprintf("time of the push in the trace (UTC), one bar per %s", fmtSpan(tl.Width)), Anchor: "middle", Class: "axis-title"},
		svgText{X: 18, Y: box.T + box.H()/2, Text: "pushes per bar", Anchor: "middle", Class: "axis-title", Rotate: true},
	)
	return c
}

// timelineMax is the largest bin total of any rule set (the same trace, so
// the same for all).
func timelineMax(sets []setReport) int {
	m := 0
	for _, s := range sets {
		if s.Result.Detail == nil {
			continue
		}
		for _, b := range s.Result.Detail.Timeline.Bins {
			m = max(m, b.Allowed+b.Deferred+b.Dropped)
		}
	}
	return m
}

// niceScale returns a step of 1, 2 or 5 times a power of ten giving about
// four steps up to at least n, and the scale's top (a whole number of
// steps).
func niceScale(n int) (step, top int) {
	n = max(n, 1)
	raw := float64(n) / 4
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step = int(mag)
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = int(m * mag)
			break
		}
	}
	step = max(step, 1)
	top = (n + step - 1) / step * step
	return step, top
}

// fmtCount writes a count compactly: 950, 12k, 1.5k, 2.4M.
func fmtCount(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + "k"
	default:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	}
}

// countNoun writes "1 push", "3 pushes".
func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// fmtSpan writes a bin width: 15s, 5m, 2h, 1d.
func fmtSpan(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	case d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	default:
		return d.String()
	}
}

// fmtClock writes an instant (Unix ms) as precisely as a step of width
// needs.
func fmtClock(ms, width int64) string {
	t := time.UnixMilli(ms).UTC()
	switch {
	case width < 60e3:
		return t.Format("Jan 2 15:04:05")
	case width < 24*3600e3:
		return t.Format("Jan 2 15:04")
	default:
		return t.Format("Jan 2 2006")
	}
}

type timeTick struct {
	ms    int64
	label string
}

// timeTicks are at most eight round instants in start..end (Unix ms),
// labelled with the clock, and with the date where it changes.
func timeTicks(start, end int64) []timeTick {
	span := end - start
	step := int64(0)
	for _, w := range binWidths {
		if span/w <= 8 {
			step = w
			break
		}
	}
	if step == 0 {
		week := binWidths[len(binWidths)-1]
		step = week * (span/(week*8) + 1)
	}
	var ticks []timeTick
	lastDay := ""
	for ms := (floorDiv(start-1, step) + 1) * step; ms <= end; ms += step {
		t := time.UnixMilli(ms).UTC()
		day := t.Format("Jan 2")
		var label string
		switch {
		case step >= 24*3600e3:
			label = day
		case step < 60e3:
			label = t.Format("15:04:05")
		default:
			label = t.Format("15:04")
		}
		if day != lastDay && step < 24*3600e3 {
			label = day + " " + label
		}
		lastDay = day
		ticks = append(ticks, timeTick{ms, label})
	}
	return ticks
}

// setClass is the CSS class that colours rule set i.
func setClass(i int) string { return fmt.Sprintf("s%d", i%6) }

// cell is the report's figure for a column key ("" if there is none).
func (s setReport) cell(key string) string {
	for k, c := range reportColumns {
		if c.Key == key {
			return s.Cells[k]
		}
	}
	return ""
}
