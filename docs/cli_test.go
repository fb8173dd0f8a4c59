package docs_test

import (
	"go/ast"
	"strings"
	"testing"
)

// subcommands returns the names in cmd/hush's commands() list, the one
// list the command line dispatches on, plus help.
func subcommands(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, f := range parseGo(t, "../cmd/hush", "commands.go") {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "commands" {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				lit, ok := n.(*ast.CompositeLit)
				if !ok || len(lit.Elts) == 0 {
					return true
				}
				if name, ok := stringLit(lit.Elts[0]); ok {
					names = append(names, name)
					return false
				}
				return true
			})
		}
	}
	if len(names) == 0 {
		t.Fatal("found no command in cmd/hush/commands.go's commands()")
	}
	return append(names, "help")
}

// flagNameArg is the index of the flag name among the arguments of each
// flag.FlagSet method that defines a flag.
var flagNameArg = map[string]int{
	"Bool": 0, "Duration": 0, "Float64": 0, "Func": 0, "BoolFunc": 0,
	"Int": 0, "Int64": 0, "String": 0, "Uint": 0, "Uint64": 0,
	"BoolVar": 1, "DurationVar": 1, "Float64Var": 1, "IntVar": 1, "Int64Var": 1,
	"StringVar": 1, "TextVar": 1, "UintVar": 1, "Uint64Var": 1, "Var": 1,
}

// commandFlags returns the flags defined in cmd/hush/<name>.go and
// <name>_*.go: the file of a command and its helpers.
func commandFlags(t *testing.T, name string) []string {
	t.Helper()
	var flags []string
	for _, glob := range []string{name + ".go", name + "_*.go"} {
		for _, f := range parseFiles(t, goFiles(t, "../cmd/hush", glob)) {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if i, ok := flagNameArg[sel.Sel.Name]; ok && i < len(call.Args) {
					if flag, ok := stringLit(call.Args[i]); ok {
						flags = append(flags, flag)
					}
				}
				return true
			})
		}
	}
	return flags
}

// cliSections splits docs/cli.md into its "## hush <command>" sections.
func cliSections(t *testing.T) map[string]string {
	t.Helper()
	sections := map[string]string{}
	var cur string
	for line := range strings.Lines(readDoc(t, "cli.md")) {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			cur = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(h), "hush "))
			if _, dup := sections[cur]; dup {
				t.Errorf("docs/cli.md has two sections for %s", cur)
			}
			sections[cur] = ""
			continue
		}
		if cur != "" {
			sections[cur] += line
		}
	}
	return sections
}

// TestCLICommands: docs/cli.md has one "## hush <command>" section per
// subcommand, and each section's flag table lists exactly the flags that
// command defines.
func TestCLICommands(t *testing.T) {
	names := subcommands(t)
	sections := cliSections(t)
	var documented []string
	for s := range sections {
		documented = append(documented, s)
	}
	if d := sameSet(names, documented); d != "" {
		t.Errorf("docs/cli.md's sections and cmd/hush's commands differ %s", d)
	}
	for _, name := range names {
		body, ok := sections[name]
		if !ok {
			continue
		}
		var got []string
		if strings.Contains(body, "| flag | default | meaning |") {
			for _, r := range table(t, body, "| flag | default | meaning |") {
				flag, _, _ := strings.Cut(unquote(r[0]), " ")
				got = append(got, strings.TrimLeft(flag, "-"))
			}
		}
		if d := sameSet(commandFlags(t, name), got); d != "" {
			t.Errorf("hush %s: docs/cli.md's flags and cmd/hush's differ %s", name, d)
		}
	}
}
