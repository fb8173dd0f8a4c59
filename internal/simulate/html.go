package simulate

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"os"
	"strconv"
)

//go:embed report.html.tmpl
var simulateHTMLTemplate string

// traceInfo describes the replayed trace for the HTML report's header.
type traceInfo struct {
	Name        string
	First, Last int64 // Unix ms of the first and last push (0 when empty)
	HeldBy      bool  // --held-by: rules were blamed
}

// htmlPage is everything report.html.tmpl shows. Every figure of the
// text report comes from the simReport it holds, as the same string.
type htmlPage struct {
	Title   string
	Trace   string // what was replayed, one line
	Setup   string // what every rule set shares (simReport.Setup)
	Columns []reportColumn
	// QuietColumns head the quiet-hours table (nil when no rule set has
	// quiet hours).
	QuietColumns []reportColumn
	// CategoryColumns head each rule set's table by category.
	CategoryColumns []reportColumn
	Note            string
	Sets            []htmlSet
	// Compare draws every rule set's delays on one chart; nil with one
	// rule set.
	Compare *svgChart
}

// htmlSet is one rule set's section.
type htmlSet struct {
	Index int
	Class string // colours the rule set (s0..s5)
	setReport
	Figures []htmlFigure // the table's cells, labelled
	// QuietFigures are its row of the quiet-hours table (nil when no
	// rule set has quiet hours).
	QuietFigures []htmlFigure
	// Categories are its table by category, each figure keyed
	// "cat:NAME:KEY".
	Categories          []htmlCategory
	Delay, Held, Time   svgChart
	HeldNote, TimeWidth string
}

// htmlCategory is one row of a rule set's table by category.
type htmlCategory struct {
	Name    string
	Figures []htmlFigure
}

// htmlFigure is a table cell with its column.
type htmlFigure struct {
	reportColumn
	Value string
}

// newHTMLPage lays rep out; charts of different rule sets share their
// scales, so they compare at a glance.
func newHTMLPage(rep simReport, tr traceInfo) htmlPage {
	page := htmlPage{Title: "hush simulate: " + tr.Name, Setup: rep.Setup, Columns: reportColumns,
		CategoryColumns: categoryColumns, Note: rep.Note}
	if rep.Quiet {
		page.QuietColumns = quietColumns
	}
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
		hs.Figures = figures(reportColumns, s.Cells, "")
		hs.QuietFigures = figures(quietColumns, s.QuietCells, "")
		for _, c := range s.Categories {
			hs.Categories = append(hs.Categories, htmlCategory{Name: c.Name, Figures: figures(categoryColumns, c.Cells, "cat:"+c.Name+":")})
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

// figures labels cells (one per column, or none) with cols, each key
// after prefix.
func figures(cols []reportColumn, cells []string, prefix string) []htmlFigure {
	if len(cells) == 0 {
		return nil
	}
	out := make([]htmlFigure, len(cols))
	for k, c := range cols {
		c.Key = prefix + c.Key
		out[k] = htmlFigure{reportColumn: c, Value: cells[k]}
	}
	return out
}

// renderHTML writes page as one self-contained HTML document.
func renderHTML(page htmlPage) ([]byte, error) {
	t, err := template.New("page").Funcs(template.FuncMap{
		"f": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
	}).Parse(simulateHTMLTemplate)
	if err != nil {
		return nil, fmt.Errorf("parse report.html.tmpl: %w", err)
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
