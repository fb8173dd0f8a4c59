package setup

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// maxRateWindow is the longest window of a max_rate.
const maxRateWindow = 24 * time.Hour

// parseRate reads an app's max_rate, N/window, as sends per second:
// "500/s" is 500, "30000/1m" is 500, "1/10s" is 0.1. N is a positive
// integer; the window a Go duration (or a unit alone, one of it: s, m, h)
// or whole days ("1d"), at most a day.
func parseRate(s string) (float64, error) {
	bad := func(why string) (float64, error) {
		return 0, fmt.Errorf("%q: %s (want N/window such as 500/s or 30000/1m)", s, why)
	}
	ns, ws, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return bad("no /")
	}
	ns = strings.TrimSpace(ns)
	n, err := strconv.Atoi(ns)
	if err != nil || n <= 0 || strings.HasPrefix(ns, "+") {
		return bad("the count must be a positive integer, written without a sign")
	}
	ws = strings.TrimSpace(ws)
	if ws != "" && (ws[0] < '0' || ws[0] > '9') {
		ws = "1" + ws // "s" is one second
	}
	var w time.Duration
	if days, isDays := strings.CutSuffix(ws, "d"); isDays {
		d, err := strconv.Atoi(days)
		if err != nil {
			return bad("the window is not a duration")
		}
		w = time.Duration(d) * 24 * time.Hour
	} else if w, err = time.ParseDuration(ws); err != nil {
		return bad("the window is not a duration")
	}
	switch {
	case w <= 0:
		return bad("the window must be positive")
	case w > maxRateWindow:
		return bad("the window must be at most a day")
	}
	return float64(n) / w.Seconds(), nil
}

// rateText writes sends per second as an operator reads them: "500/s",
// "0.1/s".
func rateText(perSecond float64) string {
	return strconv.FormatFloat(perSecond, 'f', -1, 64) + "/s"
}
