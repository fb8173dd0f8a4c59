package main

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/internal/simulate"
	"github.com/hushpush/hush/internal/testkit"
)

// chromium is Debian's chromium on PATH. Without it the render test is
// skipped, and fails under CI=true, whose .ci/run installs it.
func chromium(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if testkit.InCI() {
			t.Fatalf("CI=true but no chromium on PATH (.ci/run installs Debian's chromium package): %v", err)
		}
		t.Skip("skipping the HTML render test: no chromium on PATH (apt-get install chromium to run it)")
	}
	return bin
}

// runChromium runs headless chromium on url with args and returns its
// standard output.
func runChromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + t.TempDir(),
		"--window-size=1200,2000"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestSimulateHTMLRendersInChromium writes the report of a day-long
// generated trace under two rule sets and has headless Chromium load it:
// the DOM it builds holds every chart, and its screenshot shows them in
// their colours (the bars of the held-back and timeline charts, the rule
// sets' curves).
func TestSimulateHTMLRendersInChromium(t *testing.T) {
	bin := chromium(t)
	start := time.Now()
	var trace bytes.Buffer
	if err := simulate.Generate(&trace, simulate.GenerateOptions{Events: 3000, Users: 60, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tracePath := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(tracePath, trace.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(dir, "report.html")
	_, stderr, code := runCmd(t, "simulate", "--rules", "10/1m,100/24h@3s", "--rules", "3/10s@2s", "--ttl", "1h", "--html", report, tracePath)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	url := "file://" + report

	dom := string(runChromium(t, bin, url, "--dump-dom"))
	for _, w := range []struct {
		what string
		n    int
	}{
		{`<svg class="chart"`, 1 + 2*3}, // the comparison, then per rule set delays, held back, timeline
		{`<path class="cdf s0"`, 2}, {`<path class="cdf s1"`, 2},
		{`<rect class="held s0"`, 3}, {`<rect class="held s1"`, 2},
		{`<rect class="deferred"`, 20}, {`<g class="mark"`, 6},
		{`data-field="p99"`, 3 * 2},
	} {
		if got := strings.Count(dom, w.what); got < w.n {
			t.Errorf("the rendered DOM has %d %s, want at least %d", got, w.what, w.n)
		}
	}

	shot := filepath.Join(dir, "out.png")
	runChromium(t, bin, url, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1200x2000", b.Dx(), b.Dy())
	}
	// Colours of report.html.tmpl's CSS, and how many pixels of each a
	// rendered page shows at least in its first 2000 pixels.
	for _, c := range []struct {
		name string
		rgb  color.RGBA
		min  int
	}{
		{"first rule set (--c of .s0: held-back bars, curves)", color.RGBA{0x2d, 0x6c, 0xb5, 0xff}, 2000},
		{"second rule set (--c of .s1: curve, swatches)", color.RGBA{0xd9, 0x70, 0x2a, 0xff}, 200},
		{"deferred (timeline bars)", color.RGBA{0xf0, 0xa8, 0x30, 0xff}, 2000},
		{"text (--ink)", color.RGBA{0x1f, 0x24, 0x30, 0xff}, 2000},
	} {
		if n := countColor(img, c.rgb); n < c.min {
			t.Errorf("screenshot %s has %d pixels of %s, want at least %d", shot, n, c.name, c.min)
		}
	}
	if t.Failed() {
		keep := filepath.Join(os.TempDir(), "hush-simulate-report-failed.png")
		if b, err := os.ReadFile(shot); err == nil && os.WriteFile(keep, b, 0o644) == nil {
			t.Logf("screenshot kept as %s", keep)
		}
	}
	t.Logf("rendered and checked in %s", time.Since(start).Round(time.Millisecond))
}

// countColor counts img's pixels within a small distance of c (anti-aliasing
// and colour management shift edges by a few units).
func countColor(img image.Image, c color.RGBA) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, c.R) && near(g>>8, c.G) && near(bl>>8, c.B) {
				n++
			}
		}
	}
	return n
}

func near(v uint32, want uint8) bool {
	d := int(v) - int(want)
	return d >= -6 && d <= 6
}
