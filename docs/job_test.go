package docs_test

import (
	"go/ast"
	"go/token"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hushpush/hush/payload"
)

// TestJobFields: docs/job.md's field table lists every JSON field of
// payload.Job and its parts (Recipient, Device, Content, Alert), by path,
// and no other.
func TestJobFields(t *testing.T) {
	want := jsonFields(reflect.TypeFor[payload.Job](), "")
	got := firstColumn(table(t, readDoc(t, "job.md"), "| field | type | rules |"))
	if d := sameSet(want, got); d != "" {
		t.Errorf("docs/job.md's field table and payload.Job differ %s", d)
	}
}

// limitValues are the values of the constants of payload/limits.go, as
// integers (durations in nanoseconds).
var limitValues = map[string]int64{
	"MaxRecipients":       payload.MaxRecipients,
	"MaxDevices":          payload.MaxDevices,
	"MaxPayloadBytes":     payload.MaxPayloadBytes,
	"MaxIDBytes":          payload.MaxIDBytes,
	"MaxTTL":              int64(payload.MaxTTL),
	"MaxSendAhead":        int64(payload.MaxSendAhead),
	"MaxCategoryBytes":    payload.MaxCategoryBytes,
	"MaxAppBytes":         payload.MaxAppBytes,
	"MaxCollapseKeyBytes": payload.MaxCollapseKeyBytes,
	"MinAPNsTokenLen":     payload.MinAPNsTokenLen,
	"MaxAPNsTokenLen":     payload.MaxAPNsTokenLen,
	"MaxFCMTokenLen":      payload.MaxFCMTokenLen,
	"MaxDataKeys":         payload.MaxDataKeys,
	"MaxProblems":         payload.MaxProblems,
	"MaxBatchJobs":        payload.MaxBatchJobs,
}

// TestJobLimits: docs/job.md's limits table has one row per constant of
// payload/limits.go, with its value ("10,000", "4,096 bytes", "28 days").
func TestJobLimits(t *testing.T) {
	var consts []string
	for _, f := range parseGo(t, "../payload", "limits.go") {
		for _, d := range f.Decls {
			if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
				for _, s := range g.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						if id.IsExported() {
							consts = append(consts, id.Name)
						}
					}
				}
			}
		}
	}
	for _, c := range consts {
		if _, ok := limitValues[c]; !ok {
			t.Errorf("payload.%s is new: add it to limitValues and to docs/job.md's limits table", c)
		}
	}
	rows := table(t, readDoc(t, "job.md"), "| limit | value | Go constant |")
	var documented []string
	for _, r := range rows {
		name := strings.TrimPrefix(unquote(r[2]), "payload.")
		documented = append(documented, name)
		want, ok := limitValues[name]
		if !ok {
			continue // reported by sameSet below
		}
		got, err := limitValue(r[1])
		if err != nil {
			t.Errorf("docs/job.md, limit %s: %v", r[0], err)
		} else if got != want {
			t.Errorf("docs/job.md says %s is %q; payload.%s is %d", r[0], r[1], name, want)
		}
	}
	if d := sameSet(consts, documented); d != "" {
		t.Errorf("docs/job.md's limits table and payload/limits.go differ %s", d)
	}
}

// limitValue reads a limits table value: a number with thousands commas,
// then a unit ("days" and "hours" scale it to nanoseconds; any other word,
// such as "bytes", leaves it as is).
func limitValue(cell string) (int64, error) {
	f := strings.Fields(cell)
	if len(f) == 0 {
		return 0, strconv.ErrSyntax
	}
	n, err := strconv.ParseInt(strings.ReplaceAll(f[0], ",", ""), 10, 64)
	if err != nil {
		return 0, err
	}
	if len(f) > 1 {
		switch f[1] {
		case "days":
			n *= int64(24 * time.Hour)
		case "hours":
			n *= int64(time.Hour)
		}
	}
	return n, nil
}
