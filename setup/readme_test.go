package setup

import (
	"bufio"
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestReadmeConfigurationTable: the README's configuration table lists
// every key hush serve reads, once, with the default it really has.
func TestReadmeConfigurationTable(t *testing.T) {
	want := map[string]string{}
	for _, k := range Keys() {
		want[k.Name] = k.Default
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "| `HUSH_") {
			continue
		}
		cells := strings.Split(line, " | ")
		if len(cells) < 4 {
			t.Errorf("README row %q: want | key | type | default | meaning |", line)
			continue
		}
		key := strings.Trim(strings.TrimPrefix(cells[0], "| "), "`")
		if _, dup := got[key]; dup {
			t.Errorf("README lists %s twice", key)
		}
		got[key] = strings.Trim(cells[2], "` ")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("README configuration table: key -> default (-hush serve --help +README):\n%s", diff)
	}
}
