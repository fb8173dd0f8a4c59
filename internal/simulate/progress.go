package simulate

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// progress draws a one-line bar on a terminal.
type progress struct {
	w    io.Writer
	last int // last percentage drawn, -1 when the line is clear
}

// newProgress returns a bar on w when w is a terminal, else nil (every
// method of a nil *progress does nothing).
func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return &progress{w: w, last: -1}
}

// show draws "label [#####.....]  45%" when the percentage changed.
func (p *progress) show(label string, done, total int64) {
	if p == nil || total <= 0 {
		return
	}
	pct := int(min(100, 100*done/total))
	if pct == p.last {
		return
	}
	p.last = pct
	const width = 30
	n := pct * width / 100
	fmt.Fprintf(p.w, "\r%-24.24s [%s%s] %3d%%", label, strings.Repeat("#", n), strings.Repeat(".", width-n), pct)
}

// count draws "label 1200000 lines" when the size is not known.
func (p *progress) count(label string, lines int) {
	if p == nil {
		return
	}
	p.last = 0
	fmt.Fprintf(p.w, "\r%-24.24s %d lines", label, lines)
}

// clear erases the bar's line.
func (p *progress) clear() {
	if p == nil || p.last < 0 {
		return
	}
	fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", 64))
	p.last = -1
}
