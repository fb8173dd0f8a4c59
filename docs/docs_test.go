package docs_test

// The tests of this package read the contract's pages (docs/*.md) and the
// code they describe, and fail when the two disagree on something that can
// be checked mechanically: a field, a state, a route, a key, a flag. Each
// page's checks live in the test file named after it; this file holds the
// helpers they share and the checks across pages.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/google/go-cmp/cmp"
)

// readDoc returns the text of a file, relative to docs/.
func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// table returns the body rows of the Markdown table in md whose header line
// is header, each row as its cells (trimmed). It fails the test when md has
// no such table or more than one.
func table(t *testing.T, md, header string) [][]string {
	t.Helper()
	var rows [][]string
	found := 0
	in := false
	for line := range strings.Lines(md) {
		line = strings.TrimSpace(line)
		switch {
		case line == header:
			found++
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			rows = append(rows, cells(line))
		default:
			in = false
		}
	}
	if found != 1 {
		t.Fatalf("want one table with header %q, found %d", header, found)
	}
	return rows
}

// cells splits a Markdown table row into its trimmed cells.
func cells(row string) []string {
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	out := strings.Split(row, "|")
	for i, c := range out {
		out[i] = strings.TrimSpace(c)
	}
	return out
}

// firstColumn returns the first cell of each row without its backticks.
func firstColumn(rows [][]string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = unquote(r[0])
	}
	return out
}

// unquote removes the backticks of a code span.
func unquote(cell string) string { return strings.Trim(cell, "`") }

// sameSet reports the difference between two lists taken as sets (want:
// from the code, got: from the page), or "" when they hold the same
// elements once each.
func sameSet(want, got []string) string {
	w, g := slices.Sorted(slices.Values(want)), slices.Sorted(slices.Values(got))
	if d := cmp.Diff(w, g); d != "" {
		return "(-code +docs):\n" + d
	}
	if c := slices.Compact(slices.Clone(g)); len(c) != len(g) {
		return "the page lists an entry twice"
	}
	return ""
}

// jsonFields returns the JSON paths of t's fields, as encoding/json sees
// them: embedded structs are inlined, a struct field's fields follow as
// "field.sub" and an array's elements as "field[].sub". Times, maps and
// other leaves are not entered.
func jsonFields(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			out = append(out, jsonFields(ft, prefix)...)
			continue
		}
		if name == "" {
			name = f.Name
		}
		path := prefix + name
		out = append(out, path)
		switch {
		case ft == reflect.TypeFor[time.Time]():
		case ft.Kind() == reflect.Struct:
			out = append(out, jsonFields(ft, path+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, jsonFields(ft.Elem(), path+"[].")...)
		}
	}
	return out
}

// goFiles returns the non-test Go files of dir (relative to docs/) whose
// base names match glob; there may be none.
func goFiles(t *testing.T, dir, glob string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, glob))
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return strings.HasSuffix(n, "_test.go") })
}

// parseFiles parses Go files.
func parseFiles(t *testing.T, names []string) []*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// parseGo parses the non-test Go files of dir whose base names match glob,
// and fails the test when there is none.
func parseGo(t *testing.T, dir, glob string) []*ast.File {
	t.Helper()
	names := goFiles(t, dir, glob)
	if len(names) == 0 {
		t.Fatalf("no Go file matches %s", filepath.Join(dir, glob))
	}
	return parseFiles(t, names)
}

// stringConsts returns the values of the string constants of dir's
// non-test files whose names match name, written as plain literals.
func stringConsts(t *testing.T, dir string, name *regexp.Regexp) []string {
	t.Helper()
	var out []string
	for _, f := range parseGo(t, dir, "*.go") {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !name.MatchString(id.Name) || i >= len(vs.Values) {
						continue
					}
					if v, ok := stringLit(vs.Values[i]); ok {
						out = append(out, v)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no string constant in %s matches %s", dir, name)
	}
	return out
}

// stringLit returns the value of a string literal expression.
func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}

// mdLink matches a Markdown link's target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinks: every relative link of the pages, and every link of the
// repository's README into docs/, points at a file that exists (and at a
// heading of it, when it names one); the index links every page; nothing
// points at SPEC.md, which is not in the repository.
func TestLinks(t *testing.T) {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	check := func(from, target string) {
		file, frag, _ := strings.Cut(target, "#")
		path := filepath.Join(filepath.Dir(from), file)
		if file == "" {
			path = from
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s links %s: %v", from, target, err)
			return
		}
		if frag != "" && strings.HasSuffix(path, ".md") && !slices.Contains(anchors(string(b)), frag) {
			t.Errorf("%s links %s: %s has no heading with anchor #%s", from, target, path, frag)
		}
	}
	for _, p := range append(pages, "../README.md") {
		md := readDoc(t, p)
		if strings.Contains(md, "SPEC.md") {
			t.Errorf("%s mentions SPEC.md; the contract is docs/", p)
		}
		for _, m := range mdLink.FindAllStringSubmatch(md, -1) {
			target := m[1]
			switch {
			case strings.Contains(target, "://"), strings.HasPrefix(target, "mailto:"):
			case p == "../README.md" && !strings.HasPrefix(target, "docs/"):
			default:
				check(p, target)
			}
		}
	}
	index := readDoc(t, "README.md")
	for _, p := range pages {
		if p != "README.md" && !strings.Contains(index, "]("+p+")") {
			t.Errorf("docs/README.md does not link %s", p)
		}
	}
}

// anchors returns the anchors GitHub gives the headings of md: lower case,
// punctuation other than "-" and "_" removed, spaces turned into "-".
func anchors(md string) []string {
	var out []string
	for line := range strings.Lines(md) {
		h, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		h = strings.TrimSpace(strings.TrimLeft(h, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-', r == '_', unicode.IsLetter(r), unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out = append(out, b.String())
	}
	return out
}
