package docs_test

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/hushpush/hush/setup"
)

// configRow is one key of the configuration.
type configRow struct {
	Key, Type, Range, Default, Meaning string
}

// usageRows are the keys `hush serve --help` prints (setup.Keys).
func usageRows(t *testing.T) []configRow {
	t.Helper()
	var rows []configRow
	for _, k := range setup.Keys() {
		rows = append(rows, configRow{Key: k.Name, Type: k.Type, Range: k.Range, Default: k.Default, Meaning: k.Description})
	}
	if len(rows) == 0 {
		t.Fatal("setup.Keys lists no key")
	}
	return rows
}

// TestConfigurationTable: docs/configuration.md's table lists every key
// `hush serve --help` prints, in the same order, with the same type,
// range, default and meaning (backticks aside).
func TestConfigurationTable(t *testing.T) {
	want := usageRows(t)
	var got []configRow
	for _, c := range table(t, readDoc(t, "configuration.md"), "| key | type | range | default | meaning |") {
		if len(c) != 5 {
			t.Errorf("row %q: want | key | type | range | default | meaning |", c)
			continue
		}
		got = append(got, configRow{
			Key:     unquote(c[0]),
			Type:    c[1],
			Range:   c[2],
			Default: unquote(c[3]),
			Meaning: strings.ReplaceAll(c[4], "`", ""),
		})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/configuration.md's table differs from `hush serve --help` (-help +docs):\n%s", diff)
	}
}

// hushKey matches a configuration key's name; a name followed by "*" is a
// pattern, not a key.
var hushKey = regexp.MustCompile(`HUSH_[A-Z0-9_]*[A-Z0-9]\b\*?`)

// TestPagesNameRealKeys: every HUSH_* name on the pages is a key hush
// reads.
func TestPagesNameRealKeys(t *testing.T) {
	keys := map[string]bool{}
	for _, r := range usageRows(t) {
		keys[r.Key] = true
	}
	// The variables hush's own tests read: a page may name them, and
	// hush serve never does.
	for _, k := range []string{"HUSH_TESTS", "HUSH_TEST_REDIS_URL", "HUSH_SIM_RACE"} {
		keys[k] = true
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		for _, k := range hushKey.FindAllString(readDoc(t, p), -1) {
			if !strings.HasSuffix(k, "*") && !keys[k] {
				t.Errorf("%s names %s, which is not a configuration key", p, k)
			}
		}
	}
}
