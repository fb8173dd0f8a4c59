package setup

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"
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
