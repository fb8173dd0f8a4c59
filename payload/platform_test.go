package payload

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// platformConstants returns the values of the package's Platform constants,
// read from its source so that a constant without a table entry is found.
func platformConstants(t *testing.T) map[string]Platform {
	t.Helper()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	consts := map[string]Platform{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "Platform" {
					continue
				}
				for i, name := range vs.Names {
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("const %s: want a string literal, the test reads no other", name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					consts[name.Name] = Platform(v)
				}
			}
		}
	}
	return consts
}

// TestPlatformsTable: every Platform constant has a complete entry in the
// platforms table, and the table has no other entry.
func TestPlatformsTable(t *testing.T) {
	consts := platformConstants(t)
	if len(consts) == 0 {
		t.Fatal("found no Platform constant in the package source")
	}
	for name, p := range consts {
		spec, ok := platforms[p]
		switch {
		case !ok:
			t.Errorf("%s (%q) has no entry in platforms", name, p)
		case spec.tokenProblem == nil || spec.dataKeyProblem == nil || spec.render == nil:
			t.Errorf("platforms[%s] lacks a function: %+v", name, spec)
		case spec.maxBytes <= 0 || spec.rendered == "":
			t.Errorf("platforms[%s]: maxBytes %d, rendered %q; want both set", name, spec.maxBytes, spec.rendered)
		}
	}
	if len(platforms) != len(consts) {
		t.Errorf("platforms has %d entries, the package declares %d Platform constants", len(platforms), len(consts))
	}
}

// TestPlatformMessages: the platform problems list the table's platforms.
func TestPlatformMessages(t *testing.T) {
	for _, tc := range []struct {
		platform Platform
		want     string
	}{
		{"", `recipients[0].devices[0].platform: is required: "apns", "fcm" or "webpush"`},
		{"web", `recipients[0].devices[0].platform: unknown platform "web", want "apns", "fcm" or "webpush"`},
	} {
		t.Run(string(tc.platform), func(t *testing.T) {
			j := Job{
				Recipients: []Recipient{{UserID: "u", Devices: []Device{{Platform: tc.platform, Token: "t"}}}},
				Content:    Content{Alert: &Alert{Title: "t"}},
			}
			var got string
			if ve, ok := errors.AsType[*ValidationError](j.Validate(testNow)); ok && len(ve.Problems) > 0 {
				got = ve.Problems[0].Error()
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("first problem (-want +got):\n%s", d)
			}
		})
	}
}
