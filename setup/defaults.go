package setup

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hushpush/hush/payload"
	"github.com/hushpush/hush/providers/webpush"
	"github.com/hushpush/hush/throttle"
	"github.com/hushpush/hush/worker"
	"github.com/hushpush/hush/worker/httpapi"
)

// Defaults of the HUSH_* keys that are not the worker's own (those are
// worker.DefaultConcurrency and its siblings). DefaultConfig is the one place
// that fills them: LoadConfig starts from it, and `hush serve --help`, the
// README table and docs/configuration.md print what it holds.
const (
	DefaultDeliveryShards     = 1
	DefaultMaxRetry           = 8
	DefaultThrottleLimits     = "10/1m,100/24h"
	DefaultThrottleMinGap     = 3 * time.Second
	DefaultTimezone           = "UTC"
	DefaultThrottleMaxPending = throttle.DefaultMaxPending
	DefaultMaxThrottled       = time.Hour
	DefaultHTTPAddr           = ":8080"
	DefaultLogLevel           = "info"
	DefaultLogFormat          = "text"
)

// bound is the values a numeric key accepts, min to max inclusive
// (nanoseconds for a duration).
type bound struct{ min, max int64 }

func (b bound) contains(n int64) bool { return b.min <= n && n <= b.max }

// text is the bound as an operator writes the key's values: "1 to 10000",
// "1ms to 1h".
func (b bound) text(t reflect.Type) string {
	if t == durationType {
		return shortDuration(time.Duration(b.min)) + " to " + shortDuration(time.Duration(b.max))
	}
	return strconv.FormatInt(b.min, 10) + " to " + strconv.FormatInt(b.max, 10)
}

// day is 24 hours, the unit of the longest bounds.
const day = 24 * time.Hour

// bounds are the values every numeric HUSH_* key accepts, by Config field
// name; HUSH_QUEUES's bound is each weight's. Validate refuses a value
// outside, naming the key, the value and the range, and `hush serve
// --help` and docs/configuration.md print them. The maxima keep a typo
// from costing the process its memory (goroutines, pools and buffers are
// sized by these values) or overflowing what a value is multiplied into
// (10 x HUSH_CONCURRENCY held slots, retention plus a quarter).
func bounds() map[string]bound {
	return map[string]bound{
		"Concurrency":        {1, 10_000},
		"HeldConcurrency":    {0, 100_000},
		"Queues":             {1, 100},
		"DeliveryShards":     {1, worker.MaxDeliveryShards},
		"MaxRetry":           {0, 100},
		"ThrottleMinGap":     {0, int64(30 * day)},
		"ThrottleMaxPending": {0, 10_000},
		"MaxThrottled":       {0, int64(30 * day)},
		"MaxBodyBytes":       {1, 256 << 20},
		"EventsMaxlen":       {1, 100_000_000},
		"AppWait":            {int64(time.Second), int64(30 * day)},
		"ShutdownTimeout":    {int64(time.Millisecond), int64(time.Hour)},
		"JobRetention":       {int64(time.Second), int64(365 * day)},
	}
}

// DefaultThrottleBypass lists the priorities that skip the limiter unless
// HUSH_THROTTLE_BYPASS says otherwise.
func DefaultThrottleBypass() []string { return []string{string(payload.PriorityCritical)} }

// DefaultConfig returns the configuration hush serve runs with when no
// HUSH_* key is set: an embedded Redis and the dry-run sender.
func DefaultConfig() Config {
	return Config{
		Concurrency:        worker.DefaultConcurrency,
		Queues:             worker.DefaultQueues(),
		DeliveryShards:     DefaultDeliveryShards,
		MaxRetry:           DefaultMaxRetry,
		ThrottleLimits:     DefaultThrottleLimits,
		ThrottleMinGap:     DefaultThrottleMinGap,
		DefaultTimezone:    DefaultTimezone,
		ThrottleBypass:     DefaultThrottleBypass(),
		WebpushOrigins:     strings.Split(webpush.OriginsDefault, ","),
		ThrottleMaxPending: DefaultThrottleMaxPending,
		MaxThrottled:       DefaultMaxThrottled,
		HTTPAddr:           DefaultHTTPAddr,
		MaxBodyBytes:       httpapi.DefaultMaxBodyBytes,
		EventsMaxlen:       worker.DefaultEventsMaxLen,
		AppWait:            worker.DefaultAppWait,
		ShutdownTimeout:    worker.DefaultShutdownTimeout,
		JobRetention:       worker.DefaultJobRetention,
		LogLevel:           DefaultLogLevel,
		LogFormat:          DefaultLogFormat,
	}
}

// defaultText is field i of DefaultConfig as an operator would write it in
// the environment ("" when the key has no default).
func defaultText(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		return shortDuration(x)
	case bool:
		return strconv.FormatBool(x)
	case []string:
		return strings.Join(x, ",")
	case map[string]int:
		// Weights high to low, then by name: critical:6,high:3,normal:1.
		names := slices.Collect(maps.Keys(x))
		slices.SortFunc(names, func(a, b string) int {
			if x[a] != x[b] {
				return x[b] - x[a]
			}
			return strings.Compare(a, b)
		})
		parts := make([]string, len(names))
		for i, k := range names {
			parts[i] = k + ":" + strconv.Itoa(x[k])
		}
		return strings.Join(parts, ",")
	case string:
		return x
	case int, int64:
		if v.IsZero() {
			return ""
		}
		return fmt.Sprint(x)
	}
	panic(fmt.Sprintf("setup: no default text for %s", v.Type()))
}

// shortDuration writes d as an operator would: 1h, 1m30s, 3s, 250ms.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
