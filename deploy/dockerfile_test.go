package deploy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// dockerfilePath is the repository's Dockerfile. It cannot be built here,
// so it is parsed and checked instead.
const dockerfilePath = "../Dockerfile"

// mainPackageDir is where the binary's main package lives; -X must name one
// of its variables (the linker silently ignores a missing one).
const mainPackageDir = "../cmd/hush"

func readDockerfile(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(dockerfilePath)
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

func TestDockerfile(t *testing.T) {
	rep, err := checkDockerfile([]byte(readDockerfile(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.violations {
		t.Error(v)
	}
}

// TestDockerfileVersionVariableExists: the symbol -X sets from ARG VERSION
// is a package-level string variable of cmd/hush's main package.
func TestDockerfileVersionVariableExists(t *testing.T) {
	rep, err := checkDockerfile([]byte(readDockerfile(t)))
	if err != nil {
		t.Fatal(err)
	}
	if rep.build == nil {
		t.Fatal("no go build found")
	}
	vars, err := packageStringVars(mainPackageDir)
	if err != nil {
		t.Fatal(err)
	}
	for sym := range rep.build.ldflags {
		name, ok := strings.CutPrefix(sym, "main.")
		if !ok || !slices.Contains(vars, name) {
			t.Errorf("-X %s: %s has no package-level string variable %q (it has %v)", sym, mainPackageDir, name, vars)
		}
	}
	if _, ok := rep.build.ldflags[versionSymbol]; !ok {
		t.Errorf("go build sets no -X %s", versionSymbol)
	}
}

// packageStringVars lists the package-level variables declared with type
// string in the non-test files of the package main in dir.
func packageStringVars(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var vars []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if file.Name.Name != "main" {
			continue
		}
		for _, decl := range file.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "string" {
					for _, n := range vs.Names {
						vars = append(vars, n.Name)
					}
				}
			}
		}
	}
	slices.Sort(vars)
	return vars, nil
}

// TestDockerfileChecksCatchMistakes edits the real Dockerfile one way at a
// time and expects exactly the matching rule to fire (or none, for edits
// that keep every rule).
func TestDockerfileChecksCatchMistakes(t *testing.T) {
	real := readDockerfile(t)
	const (
		runtimeFrom = "FROM gcr.io/distroless/static-debian12:nonroot AS runtime"
		user        = "USER 65532:65532"
		versionArg  = "ARG VERSION=dev\n"
		cgo         = "CGO_ENABLED=0 "
		xVersion    = "-X main.version=${VERSION}"
		copySource  = "COPY . .\n"
	)
	tests := []struct {
		name     string
		old, new string // replace old with new in the real Dockerfile
		want     []rule
	}{
		{"unchanged", "", "", nil},
		{"single stage", runtimeFrom + "\nCOPY --from=build /out/hush /usr/local/bin/hush\n", "", []rule{ruleBase, ruleStages}},
		{"debian base", runtimeFrom, "FROM debian:12-slim AS runtime", []rule{ruleBase}},
		{"distroless debug", runtimeFrom, "FROM gcr.io/distroless/static-debian12:debug-nonroot AS runtime", []rule{ruleBase}},
		{"scratch base", runtimeFrom, "FROM scratch AS runtime", nil},
		{"final stage from the build stage", runtimeFrom, "FROM build AS runtime", []rule{ruleBase}},
		{"base through a meta ARG", runtimeFrom, "FROM gcr.io/distroless/${BASE} AS runtime", nil},
		{"root user", user, "USER root", []rule{ruleUser}},
		{"uid 0", user, "USER 0:65532", []rule{ruleUser}},
		{"no user", user + "\n", "", []rule{ruleUser}},
		{"user only in the build stage", user + "\n", "", []rule{ruleUser}},
		{"healthcheck", user, user + "\nHEALTHCHECK CMD [\"/usr/local/bin/hush\", \"version\"]", []rule{ruleHealthcheck}},
		{"healthcheck none", user, user + "\nHEALTHCHECK NONE", []rule{ruleHealthcheck}},
		{"ADD of a URL", copySource, copySource + "ADD https://example.com/ca.pem /etc/ssl/ca.pem\n", []rule{ruleRemoteAdd}},
		{"ADD of a git repository", copySource, copySource + "ADD git@github.com:hushpush/hush.git /src2\n", []rule{ruleRemoteAdd}},
		{"ADD of a local file", copySource, copySource + "ADD go.mod /tmp/go.mod\n", nil},
		{"no ARG VERSION", versionArg, "", []rule{ruleVersionArg}},
		{"ARG VERSION only before FROM", versionArg, "", []rule{ruleVersionArg}},
		{"ARG VERSION after go build", versionArg, "", []rule{ruleVersionArg}},
		{"literal version", xVersion, "-X main.version=dev", []rule{ruleVersionArg}},
		{"cgo on", cgo, "CGO_ENABLED=1 ", []rule{ruleCGO}},
		{"cgo unset", cgo, "", []rule{ruleCGO}},
		{"cgo off through ENV", "RUN " + cgo, "ENV CGO_ENABLED=0\nRUN ", nil},
		{"comment inside a continued RUN", "-o /out/hush", "\\\n# the binary\n    -o /out/hush", nil},
		{"no go build", "go build", "go vet", []rule{ruleGoBuild}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := real
			if tt.old != "" {
				if !strings.Contains(src, tt.old) {
					t.Fatalf("the Dockerfile no longer contains %q: update this case", tt.old)
				}
				src = strings.Replace(src, tt.old, tt.new, 1)
			}
			switch tt.name { // edits that need more than one replacement
			case "user only in the build stage":
				src = strings.Replace(src, "WORKDIR /src", "WORKDIR /src\n"+user, 1)
			case "ARG VERSION only before FROM":
				src = "ARG VERSION=dev\n" + src
			case "ARG VERSION after go build":
				src = strings.Replace(src, runtimeFrom, versionArg+runtimeFrom, 1)
			case "base through a meta ARG":
				src = "ARG BASE=static-debian12:nonroot\n" + src
			}
			rep, err := checkDockerfile([]byte(src))
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			var got []rule
			for _, v := range rep.violations {
				if !slices.Contains(got, v.rule) {
					got = append(got, v.rule)
				}
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tt.want))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("rules broken (-want +got):\n%s\nviolations: %v\n%s", diff, rep.violations, src)
			}
		})
	}
}
