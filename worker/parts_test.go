package worker

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPartsDoNotImportTheFacade: no package under worker/internal imports
// package worker or the HTTP API in front of it, so every part can be read
// and tested without the facade, and the imports run one way. Each part's
// doc.go says its one job in at most 60 lines.
func TestPartsDoNotImportTheFacade(t *testing.T) {
	const facade = "github.com/hushpush/hush/worker"
	parts, err := filepath.Glob("internal/*")
	if err != nil || len(parts) == 0 {
		t.Fatalf("no parts under worker/internal: %v", err)
	}
	fset := token.NewFileSet()
	for _, dir := range parts {
		files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
		for _, f := range files {
			af, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				if path == facade || strings.HasPrefix(path, facade+"/") && !strings.HasPrefix(path, facade+"/internal/") {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
		doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Errorf("%s has no doc.go: %v", dir, err)
			continue
		}
		if n := strings.Count(string(doc), "\n"); n > 60 {
			t.Errorf("%s/doc.go is %d lines, want at most 60", dir, n)
		}
	}
}
