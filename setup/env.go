package setup

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hushpush/hush/internal/suggest"
)

// Every HUSH_* value is checked against its type here, before envconfig
// reads the environment: envconfig stops at the first bad value and words
// it as Go does ("converting 'ten' to type int. details: strconv.ParseInt
// ..."). checkEnv reports every bad key at once, each in an operator's
// words.

// keyOf is the environment key of a Config field: HUSH_ and, with
// split_words, the field's words joined by "_" (envconfig's rule:
// APNSKeyID is APNS_KEY_ID).
func keyOf(f reflect.StructField) string {
	name := f.Name
	if f.Tag.Get("split_words") == "true" {
		words := splitWords.FindAllStringSubmatch(name, -1)
		parts := make([]string, 0, len(words))
		for _, w := range words {
			if m := acronym.FindStringSubmatch(w[0]); len(m) == 3 {
				parts = append(parts, m[1], m[2])
			} else {
				parts = append(parts, w[0])
			}
		}
		name = strings.Join(parts, "_")
	}
	return strings.ToUpper(envPrefix + "_" + name)
}

// splitWords and acronym are envconfig's camel-case splitters.
var (
	splitWords = regexp.MustCompile("([^A-Z]+|[A-Z]+[^A-Z]+|[A-Z]+)")
	acronym    = regexp.MustCompile("([A-Z]+)([A-Z][^A-Z]+)")
)

// checkEnv checks the value of every set key against its field's type; the
// error joins one *KeyError per bad key, in Config's order.
func checkEnv(lookup func(string) (string, bool)) error {
	var errs []error
	t := reflect.TypeFor[Config]()
	for i := range t.NumField() {
		f := t.Field(i)
		key := keyOf(f)
		v, ok := lookup(key)
		if !ok {
			continue
		}
		if err := checkValue(f.Type, v); err != nil {
			errs = append(errs, &KeyError{Key: key, Err: err})
		}
	}
	return errors.Join(errs...)
}

var durationType = reflect.TypeFor[time.Duration]()

// checkValue says what is wrong with v for a field of type t.
func checkValue(t reflect.Type, v string) error {
	switch {
	case t == durationType:
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("want a duration such as 500ms, 3s or 1h, got %q", v)
		}
	case t.Kind() == reflect.Int || t.Kind() == reflect.Int64:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("want an integer, got %q", v)
		}
	case t.Kind() == reflect.Bool:
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("want true or false, got %q", v)
		}
	case t.Kind() == reflect.Map:
		for _, kv := range strings.Split(v, ",") {
			k, w, ok := strings.Cut(kv, ":")
			if _, err := strconv.Atoi(w); !ok || k == "" || err != nil {
				return fmt.Errorf("want a comma list of name:integer (e.g. critical:6,high:3,normal:1), got %q", v)
			}
		}
	}
	return nil
}

// UnknownKey is a HUSH_* variable hush serve does not read: most often a
// misspelled key, whose value would otherwise be ignored in silence.
type UnknownKey struct {
	Key     string // e.g. HUSH_THROTLE_LIMITS
	Nearest string // the known key nearest it, e.g. HUSH_THROTTLE_LIMITS; "" when none is near
}

// UnknownKeys lists the HUSH_* variables of environ (os.Environ's
// KEY=value form) that are not configuration keys, sorted by name.
func UnknownKeys(environ []string) []UnknownKey {
	known := make([]string, 0, len(Keys()))
	for _, k := range Keys() {
		known = append(known, k.Name)
	}
	// HUSH_* variables that hush's own tests and benchmarks read, not
	// serve: they are not reported.
	unread := []string{"HUSH_TEST_", "HUSH_E2E_", "HUSH_BENCH_"}
	var out []UnknownKey
	for _, kv := range environ {
		key, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(key, "HUSH_") || slices.Contains(known, key) ||
			slices.ContainsFunc(unread, func(p string) bool { return strings.HasPrefix(key, p) }) {
			continue
		}
		out = append(out, UnknownKey{Key: key, Nearest: suggest.Nearest(key, known)})
	}
	slices.SortFunc(out, func(a, b UnknownKey) int { return strings.Compare(a.Key, b.Key) })
	return slices.CompactFunc(out, func(a, b UnknownKey) bool { return a.Key == b.Key })
}

// WarnUnknownKeys logs one warning per unknown HUSH_* variable of environ
// (UnknownKeys), with the key it may have meant to set.
func WarnUnknownKeys(log *slog.Logger, environ []string) {
	for _, u := range UnknownKeys(environ) {
		attrs := []any{"key", u.Key}
		if u.Nearest != "" {
			attrs = append(attrs, "did_you_mean", u.Nearest)
		}
		log.Warn("unknown configuration key, ignored", attrs...)
	}
}
