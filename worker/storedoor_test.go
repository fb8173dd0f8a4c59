package worker

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hushpush/hush/worker/internal/store"
)

// jobKeyPrefixes are the job store's keys as their builders spell them
// (doc.go lists them).
var jobKeyPrefixes = []string{"hush:job:{", "hush:done:{", "hush:jobs-at:{", "hush:held-run:{", "hush:throttle-reset:{"}

// TestStoreIsTheOneDoor: the job store (the part worker/internal/store,
// and this package's store*.go, which call it) is the one door to the job
// records. The part alone declares the key builders and the Lua scripts;
// outside the store no code builds a job key (a literal of
// jobKeyPrefixes, or a call of a key builder), declares a Lua script
// (redis.NewScript, a *redis.Script variable) or uses one of the store's
// scripts. A command on a job key then has to come from the store, since
// no other file can name the key.
func TestStoreIsTheOneDoor(t *testing.T) {
	fset := token.NewFileSet()
	var names []string
	for _, pattern := range []string{"*.go", "internal/store/*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m...)
	}
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name == "worker" || f.Name.Name == "store" {
			files[name] = f
		}
	}
	inPart := func(name string) bool { return strings.HasPrefix(name, "internal/store/") }
	isStore := func(name string) bool { return inPart(name) || strings.HasPrefix(name, "store") }

	// The part's key builders: its plain functions returning a key
	// (string or []string) that spell a prefix or call another builder.
	// Scripts: package variables set by redis.NewScript, anywhere (found
	// outside the part, they are reported below).
	builders, scripts := map[string]bool{}, map[string]bool{}
	type fn struct {
		name string
		body *ast.BlockStmt
	}
	var cands []fn
	for _, name := range slices.Sorted(maps.Keys(files)) {
		for _, d := range files[name].Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if inPart(name) && d.Recv == nil && d.Body != nil && returnsKeys(d.Type) {
					cands = append(cands, fn{d.Name.Name, d.Body})
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok {
						continue
					}
					for i, n := range vs.Names {
						if isScriptType(vs.Type) || (i < len(vs.Values) && isNewScript(vs.Values[i])) {
							scripts[n.Name] = true
						}
					}
				}
			}
		}
	}
	for grew := true; grew; {
		grew = false
		for _, c := range cands {
			if !builders[c.name] && (spellsKey(c.body) || callsAny(c.body, builders)) {
				builders[c.name], grew = true, true
			}
		}
	}
	for _, want := range []string{"JobKey", "RecpKey", "DevKey", "ExceptKey", "JobKeys", "HeldRunKey", "ResetMarkKey", "TogetherKeys"} {
		if !builders[want] {
			t.Errorf("%s is not found as a key builder of worker/internal/store", want)
		}
	}
	for _, want := range []string{"StartScript", "RecordScript", "TogetherScript", "RaiseScript"} {
		if !scripts[want] {
			t.Errorf("script %s is not found", want)
		}
	}

	for _, name := range slices.Sorted(maps.Keys(files)) {
		if inPart(name) {
			continue
		}
		// This package's store files call the part's builders and
		// scripts; they declare none.
		door := isStore(name)
		ast.Inspect(files[name], func(n ast.Node) bool {
			var why string
			switch n := n.(type) {
			case *ast.BasicLit:
				if door {
					break
				}
				if v, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING {
					for _, p := range jobKeyPrefixes {
						if strings.Contains(v, p) {
							why = "spells job key " + p
						}
					}
				}
			case *ast.Ident:
				switch {
				case door:
				case builders[n.Name]:
					why = "names key builder " + n.Name
				case scripts[n.Name]:
					why = "names script " + n.Name
				}
			case *ast.CallExpr:
				if isNewScript(n) {
					why = "calls redis.NewScript"
				}
			case *ast.ValueSpec:
				if isScriptType(n.Type) {
					why = "declares a *redis.Script"
				}
			}
			switch {
			case why != "" && door:
				t.Errorf("%s: %s: move it into worker/internal/store", fset.Position(n.Pos()), why)
			case why != "":
				t.Errorf("%s: %s outside the job store: move it into worker/internal/store or a store*.go file", fset.Position(n.Pos()), why)
			}
			return true
		})
	}
}

// returnsKeys reports whether ft returns one string or []string.
func returnsKeys(ft *ast.FuncType) bool {
	if ft.Results == nil || len(ft.Results.List) != 1 || len(ft.Results.List[0].Names) > 1 {
		return false
	}
	switch t := ft.Results.List[0].Type.(type) {
	case *ast.Ident:
		return t.Name == "string"
	case *ast.ArrayType:
		id, ok := t.Elt.(*ast.Ident)
		return ok && t.Len == nil && id.Name == "string"
	}
	return false
}

func spellsKey(n ast.Node) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
			v, _ := strconv.Unquote(l.Value)
			found = found || slices.ContainsFunc(jobKeyPrefixes, func(p string) bool { return strings.Contains(v, p) })
		}
		return !found
	})
	return found
}

func callsAny(n ast.Node, fns map[string]bool) bool {
	found := false
	ast.Inspect(n, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			if id, ok := c.Fun.(*ast.Ident); ok && fns[id.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

// isRedisSel reports whether e is redis.<name>.
func isRedisSel(e ast.Expr, name string) bool {
	s, ok := e.(*ast.SelectorExpr)
	if !ok || s.Sel.Name != name {
		return false
	}
	id, ok := s.X.(*ast.Ident)
	return ok && id.Name == "redis"
}

func isNewScript(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	return ok && isRedisSel(c.Fun, "NewScript")
}

func isScriptType(e ast.Expr) bool {
	s, ok := e.(*ast.StarExpr)
	return ok && isRedisSel(s.X, "Script")
}

// TestStoreScriptHeaders: the scripts TestScriptArgs has no builder for
// declare their KEYS and ARGV as the others do.
func TestStoreScriptHeaders(t *testing.T) {
	for name, src := range map[string]string{"together.lua": store.TogetherSrc, "raise.lua": store.RaiseSrc} {
		h, err := parseScript(src)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if len(h.keys) == 0 || len(h.argv) == 0 {
			t.Errorf("%s: header names %d KEYS and %d ARGV, want both", name, len(h.keys), len(h.argv))
		}
	}
	if got, want := store.ResetMarkKeyOf(3), "hush:throttle-reset:{3}"; got != want {
		t.Errorf("store.ResetMarkKeyOf(3) = %q, raise.lua's header names %q", got, want)
	}
}
