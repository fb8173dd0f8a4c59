package setup

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
)

// Key describes one configuration key, as `hush serve --help`, the README
// and docs/configuration.md list it.
type Key struct {
	Name        string // e.g. HUSH_CONCURRENCY
	Type        string // string, int, bool, duration, list or name:weight list
	Default     string // "" when none
	Range       string // the values a numeric key accepts, e.g. "1 to 10000"; "" for the others
	Description string
}

// Keys lists every key hush serve reads, in Config's order.
func Keys() []Key {
	t := reflect.TypeFor[Config]()
	defaults := reflect.ValueOf(DefaultConfig())
	bs := bounds()
	out := make([]Key, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		k := Key{Name: keyOf(f), Type: typeName(f.Type), Default: defaultText(defaults.Field(i)), Description: f.Tag.Get("desc")}
		if b, ok := bs[f.Name]; ok {
			k.Range = b.text(f.Type)
			if f.Type.Kind() == reflect.Map {
				k.Range = "weights " + k.Range
			}
		}
		out = append(out, k)
	}
	return out
}

// typeName is how a field's type is named for operators.
func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Int, t.Kind() == reflect.Int64:
		return "int"
	case t.Kind() == reflect.Bool:
		return "bool"
	case t.Kind() == reflect.Slice:
		return "list"
	case t.Kind() == reflect.Map:
		return "name:weight list"
	}
	return "string"
}

// PrintUsage writes every key with its type, default and description,
// wrapped to the terminal's width ($COLUMNS, else 80).
func PrintUsage(w io.Writer) error {
	width := 80
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil {
		width = min(max(c, 60), 160)
	}
	for _, k := range Keys() {
		head := k.Name + "  (" + k.Type
		if k.Range != "" {
			head += ", " + k.Range
		}
		if k.Default != "" {
			head += ", default " + k.Default
		}
		head += ")"
		lines := []string{head}
		if len([]rune(head)) > width-2 {
			lines = wrap(head, width-2)
		}
		for i, line := range lines {
			indent := "  "
			if i > 0 {
				indent = "    " // a head too long for one line goes on
			}
			if _, err := fmt.Fprintln(w, indent+line); err != nil {
				return err
			}
		}
		for _, line := range wrap(k.Description, width-6) {
			if _, err := fmt.Fprintln(w, "      "+line); err != nil {
				return err
			}
		}
	}
	return nil
}

// wrap breaks s into lines of at most width runes at spaces (a longer word
// stands alone).
func wrap(s string, width int) []string {
	var lines []string
	var cur strings.Builder
	for _, word := range strings.Fields(s) {
		if cur.Len() > 0 && len([]rune(cur.String()))+1+len([]rune(word)) > width {
			lines = append(lines, cur.String())
			cur.Reset()
		}
		if cur.Len() > 0 {
			cur.WriteByte(' ')
		}
		cur.WriteString(word)
	}
	if cur.Len() > 0 {
		lines = append(lines, cur.String())
	}
	return lines
}
