package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The map of the code (internals.md) and the README's "where things are"
// table name files and the functions in them. A name is written as a code
// span: a path (`worker/booking.go`, `worker/httpapi/`; a bare file name,
// `record.lua`, is in the directory of the path named before it), and
// after a path either one code span (`worker/booking.go` `book`) or a
// parenthesis of them (`worker/booking.go` (`book`, `release`)): those
// are the path's symbols. A symbol is a name (a function, method, type,
// constant or variable of a Go file, a function of a Lua file) or
// Type.Name (a method or field of Type; pkg.Name for a package's name).

// codeSpan matches a Markdown code span.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// pathSpan is a code span that names a path in the repository.
var pathSpan = regexp.MustCompile(`^[\w.-]+(/[\w.-]+)*/?$`)

// symbolSpan is a code span that names a declaration.
var symbolSpan = regexp.MustCompile(`^[A-Za-z_]\w*(\.[A-Za-z_]\w*)?$`)

// luaFunc matches the declaration of a Lua function.
var luaFunc = regexp.MustCompile(`(?m)^\s*(?:local\s+)?function\s+([\w.:]+)\s*\(`)

// isPath reports whether a code span names a path: a directory or a file
// of a known kind, not a URL path or a Redis key.
func isPath(s string) bool {
	if !pathSpan.MatchString(s) || strings.HasPrefix(s, ".") {
		return false
	}
	switch filepath.Ext(s) {
	case ".go", ".lua", ".md", ".yaml", ".json":
		return true
	}
	return strings.Contains(s, "/") && !strings.Contains(filepath.Base(s), ".")
}

// codeRef is one symbol a page names in a file, at a line of the page.
type codeRef struct {
	line   int
	path   string // relative to the repository root; ends in "/" for a directory
	symbol string // "" for the path alone
}

// codeRefs returns the paths and symbols named in text, whose first line
// is line first of its page. A unit is one paragraph, list item or table
// row: a bare file name takes its directory from the unit's last path.
func codeRefs(text string, first int) []codeRef {
	var refs []codeRef
	lineAt := func(off int) int { return first + strings.Count(text[:off], "\n") }
	spans := codeSpan.FindAllStringSubmatchIndex(text, -1)
	dir := ""      // directory of the last path
	owner := ""    // the file or directory symbols belong to, "" for none
	depth := 0     // parentheses open since owner was set
	direct := true // the next span may be owner's single symbol
	prev := 0      // end of the previous span
	for _, m := range spans {
		between := text[prev:m[0]]
		s := text[m[2]:m[3]]
		prev = m[1]
		if owner != "" {
			// A parenthesis opens right after the path, or continues.
			t := strings.TrimSpace(between)
			if depth > 0 || strings.HasPrefix(t, "(") {
				direct = false
				depth += strings.Count(between, "(") - strings.Count(between, ")")
				if depth <= 0 {
					owner = ""
				}
			} else if t != "" || !direct {
				owner = ""
			}
		}
		switch {
		case isPath(s):
			p := s
			if !strings.Contains(strings.TrimSuffix(s, "/"), "/") && dir != "" && !strings.HasSuffix(s, "/") {
				p = dir + s
			}
			refs = append(refs, codeRef{line: lineAt(m[0]), path: p})
			if strings.HasSuffix(p, "/") {
				dir = p
			} else {
				dir = filepath.ToSlash(filepath.Dir(p)) + "/"
			}
			if owner == "" {
				owner, depth, direct = p, 0, true
			} else if e := filepath.Ext(p); e == ".go" || e == ".lua" || strings.HasSuffix(p, "/") {
				owner = p // later symbols of the parenthesis are in this file
			}
		case owner != "" && symbolSpan.MatchString(s):
			refs = append(refs, codeRef{line: lineAt(m[0]), path: owner, symbol: s})
			if depth <= 0 {
				owner = "" // the one symbol written right after the path
			}
		default:
			if depth <= 0 {
				owner = ""
			}
		}
	}
	return refs
}

// units splits md (its lines from line first) into paragraphs, list
// items and table rows, each with its first line.
func units(md string, first int) (texts []string, lines []int) {
	var cur []string
	start := 0
	flush := func() {
		if len(cur) > 0 {
			texts, lines = append(texts, strings.Join(cur, "\n")), append(lines, start)
		}
		cur = nil
	}
	listItem := regexp.MustCompile(`^\s*(\d+\.|-)\s`)
	for i, line := range strings.Split(md, "\n") {
		n := first + i
		switch {
		case strings.TrimSpace(line) == "":
			flush()
			continue
		case strings.HasPrefix(strings.TrimSpace(line), "|"), listItem.MatchString(line), strings.HasPrefix(line, "#"):
			flush()
		}
		if len(cur) == 0 {
			start = n
		}
		cur = append(cur, line)
	}
	flush()
	return texts, lines
}

// declared returns the names a Go file or a Go directory declares: its
// top-level names, "Recv.method" for each method (and "method"),
// "Type.field" for struct fields and interface methods, and "pkg.Name"
// for each top-level Name.
func declared(t *testing.T, names []string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, n := range names {
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		top := func(name string) {
			out[name] = true
			out[f.Name.Name+"."+name] = true
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) == 0 {
					top(d.Name.Name)
					continue
				}
				out[d.Name.Name] = true
				out[recvName(d.Recv.List[0].Type)+"."+d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						top(s.Name.Name)
						var fields *ast.FieldList
						switch ty := s.Type.(type) {
						case *ast.StructType:
							fields = ty.Fields
						case *ast.InterfaceType:
							fields = ty.Methods
						}
						if fields != nil {
							for _, fl := range fields.List {
								for _, id := range fl.Names {
									out[s.Name.Name+"."+id.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							top(id.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// recvName is the name of a method's receiver type, without its pointer
// or type parameters.
func recvName(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

// checkCodeRefs fails the test for each path of refs (from page doc) that
// does not exist and each symbol not declared in its path.
func checkCodeRefs(t *testing.T, doc string, refs []codeRef) {
	t.Helper()
	decls := map[string]map[string]bool{}
	for _, r := range refs {
		path := filepath.Join("..", filepath.FromSlash(r.path))
		info, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s:%d: %s does not exist", doc, r.line, r.path)
			continue
		}
		if r.symbol == "" {
			continue
		}
		names, ok := decls[r.path]
		if !ok {
			switch {
			case info.IsDir():
				names = declared(t, goFiles(t, path, "*.go"))
			case filepath.Ext(path) == ".go":
				names = declared(t, []string{path})
			case filepath.Ext(path) == ".lua":
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				names = map[string]bool{}
				for _, m := range luaFunc.FindAllStringSubmatch(string(b), -1) {
					names[m[1]] = true
				}
			}
			decls[r.path] = names
		}
		if !names[r.symbol] {
			t.Errorf("%s:%d: %s is not declared in %s", doc, r.line, r.symbol, r.path)
		}
	}
}

// TestCodeRefs: every file internals.md, architecture.md and the README's
// "where things are" table name exists, and every function, method or type they name
// in a file is declared there.
func TestCodeRefs(t *testing.T) {
	md := readDoc(t, "internals.md")
	texts, lines := units(md, 1)
	var refs []codeRef
	for i, u := range texts {
		refs = append(refs, codeRefs(u, lines[i])...)
	}
	if !slices.ContainsFunc(refs, func(r codeRef) bool { return r.symbol != "" }) {
		t.Fatal("internals.md names no symbol: is the notation still `file` (`symbol`)?")
	}
	checkCodeRefs(t, "docs/internals.md", refs)

	// architecture.md's parts table and prose name packages and files too.
	md = readDoc(t, "architecture.md")
	texts, lines = units(md, 1)
	refs = nil
	for i, u := range texts {
		refs = append(refs, codeRefs(u, lines[i])...)
	}
	checkCodeRefs(t, "docs/architecture.md", refs)

	readme := readDoc(t, "../README.md")
	head := "## Where things are\n"
	at := strings.Index(readme, head)
	if at < 0 {
		t.Fatal("README.md has no section \"Where things are\"")
	}
	section := readme[at+len(head):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	first := strings.Count(readme[:at+len(head)], "\n") + 1
	refs = nil
	rows := 0
	for i, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "|") || strings.HasPrefix(line, "|---") {
			continue
		}
		rows++
		refs = append(refs, codeRefs(line, first+i)...)
	}
	if rows < 2 || len(refs) == 0 {
		t.Fatalf("README.md's \"where things are\" table: %d rows, %d references", rows, len(refs))
	}
	checkCodeRefs(t, "README.md", refs)
}

// TestCodeRefsNotation: the notation is read as internals.md means it.
func TestCodeRefsNotation(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []codeRef
	}{
		{"parenthesis", "see `worker/booking.go` (`book`, `release`) and `TIME`", []codeRef{
			{1, "worker/booking.go", ""}, {1, "worker/booking.go", "book"}, {1, "worker/booking.go", "release"}}},
		{"one span after the path", "`worker/decide.go` `plan` decides", []codeRef{
			{1, "worker/decide.go", ""}, {1, "worker/decide.go", "plan"}}},
		{"bare file in the path's directory", "`worker/store_chunk.go` (`store.write`, the caller of `record.lua`)", []codeRef{
			{1, "worker/store_chunk.go", ""}, {1, "worker/store_chunk.go", "store.write"}, {1, "worker/record.lua", ""}}},
		{"a span in text is no symbol", "`worker/clock.go`; Redis `TIME`", []codeRef{{1, "worker/clock.go", ""}}},
		{"across lines", "`worker/held.go`\n(`heldSlots`)", []codeRef{{1, "worker/held.go", ""}, {2, "worker/held.go", "heldSlots"}}},
		{"not paths", "`hush:held`, `/v1/notifications`, `.lua`, `HUSH_*`", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := codeRefs(tc.text, 1)
			if !slices.Equal(tc.want, got) {
				t.Errorf("want %v, got %v", tc.want, got)
			}
		})
	}
}
