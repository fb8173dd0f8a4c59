package main

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"strconv"
)

//go:embed simulate_html.tmpl
var simulateHTMLTemplate string

// traceInfo describes the replayed trace for the HTML report's header.
type traceInfo struct {
	Name        string
	First, Last int64 // Unix ms of the first and last push (0 when empty)
	HeldBy      bool  // --held-by: rules were blamed
}

// htmlPage is everything simulate_html.tmpl shows. Every figure of the
// text report comes from the simReport it holds, as the same string.
type htmlPage struct {
	Title   string
	Trace   string // what was replayed, one line
	Columns []reportColumn
	Note    string
	Sets    []htmlSet
	// Compare draws every rule set's delays on one chart; nil with one
	// rule set.
	Compare *svgChart
}

// htmlSet is one rule set's section.
type htmlSet struct {
	Index int
	Class string // colours the rule set (s0..s5)
	setReport
	Figures             []htmlFigure // the table's cells, labelled
	Delay, Held, Time   svgChart
	HeldNote, TimeWidth string
}

// htmlFigure is a table cell with its column.
type htmlFigure struct {
	reportColumn
	Value string
}

// newHTMLPage lays rep out; charts of different rule sets share their
// scales, so they compare at a glance.
func newHTMLPage(rep simReport, tr traceInfo) htmlPage {
	page := htmlPage{Title: "hush simulate: " + tr.Name, Columns: reportColumns, Note: rep.Note}
	events, users := 0, 0
	if len(rep.Sets) > 0 {
		events, users = rep.Sets[0].Result.Events, rep.Sets[0].Result.Users
	}
	page.Trace = fmt.Sprintf("%s: %s from %s", tr.Name, countNoun(events, "push", "pushes"), countNoun(users, "user", "users"))
	if events > 0 {
		page.Trace += fmt.Sprintf(", %s to %s UTC", fmtClock(tr.First, 60e3), fmtClock(tr.Last, 60e3))
	}
	lo, hi := newDelayRange(rep.Sets)
	yMax := timelineMax(rep.Sets)
	for i, s := range rep.Sets {
		hs := htmlSet{Index: i, Class: setClass(i), setReport: s,
			Delay: delayChart(i, s, lo, hi), Held: heldChart(i, s), Time: timeChart(i, s, yMax)}
		for k, c := range reportColumns {
			hs.Figures = append(hs.Figures, htmlFigure{reportColumn: c, Value: s.Cells[k]})
		}
		switch {
		case !tr.HeldBy:
			hs.HeldNote = "Not counted: this report was made with --held-by=false."
		case s.Result.Deferred+s.Result.Dropped == 0:
			hs.HeldNote = "No push was held back: every rule allowed every push at once."
		}
		if d := s.Result.Detail; d != nil && len(d.Timeline.Bins) > 0 {
			hs.TimeWidth = fmtSpan(d.Timeline.Width)
		}
		page.Sets = append(page.Sets, hs)
	}
	if len(rep.Sets) > 1 {
		c := compareChart(rep.Sets, lo, hi)
		page.Compare = &c
	}
	return page
}

// renderHTML writes page as one self-contained HTML document.
func renderHTML(page htmlPage) ([]byte, error) {
	t, err := template.New("page").Funcs(template.FuncMap{
		"f": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	}).Parse(simulateHTMLTemplate)
	if err != nil {
		return nil, fmt.Errorf("parse simulate_html.tmpl: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, page); err != nil {
		return nil, fmt.Errorf("render the report: %w", err)
	}
	return buf.Bytes(), nil
}

// writeHTMLFile renders page and writes it to path; a failed render leaves
// no file behind.
func writeHTMLFile(path string, page htmlPage) error {
	b, err := renderHTML(page)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
