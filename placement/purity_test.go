package placement

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPurity keeps placement pure (DESIGN: placement is pure functions, no
// I/O, no clock, no goroutines): the package's non-test files may not call
// time.Now, import os, net or global randomness, start goroutines, or
// import anything outside the standard library but the cluster types.
func TestPurity(t *testing.T) {
	forbidden := map[string]bool{"os": true, "net": true, "math/rand": true, "math/rand/v2": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		timeName := ""
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			switch {
			case forbidden[path] || strings.HasPrefix(path, "net/") || strings.HasPrefix(path, "os/"):
				t.Errorf("%s imports %q; placement does no I/O and uses no global randomness", fset.Position(imp.Pos()), path)
			case strings.Contains(first, ".") && path != "github.com/shoal-sched/shoal/cluster":
				t.Errorf("%s imports %q; placement imports only the standard library and cluster", fset.Position(imp.Pos()), path)
			}
			if path == "time" {
				timeName = "time"
				if imp.Name != nil {
					timeName = imp.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s: go statement; placement starts no goroutines", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && (n.Sel.Name == "Now" || n.Sel.Name == "Since" || n.Sel.Name == "Until") {
					t.Errorf("%s: time.%s; placement takes now as an argument", fset.Position(n.Pos()), n.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 3 {
		t.Errorf("checked %d files; want every non-test file of the package (3 or more)", checked)
	}
}
