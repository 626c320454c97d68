package fsm

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// forbidden reports whether an import reads the outside world or shared
// randomness: the FSM must be a pure function of the log (DESIGN invariant
// 5). os and net are forbidden with every package under them.
func forbidden(path string) bool {
	switch path {
	case "os", "net", "math/rand", "math/rand/v2", "syscall", "unsafe":
		return true
	}
	return strings.HasPrefix(path, "os/") || strings.HasPrefix(path, "net/")
}

// allowedModules are the only non-standard imports: never raft or
// memberlist.
var allowedModules = []string{"github.com/vmihailenco/msgpack/v5", "github.com/shoal-sched/shoal/cluster", "github.com/shoal-sched/shoal/wire"}

// clockReaders are the time functions that read or wait on the clock.
var clockReaders = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true}

// impurities returns one line per impure construct in a file.
func impurities(fset *token.FileSet, f *ast.File) []string {
	var bad []string
	timeName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		pos := fset.Position(imp.Pos())
		if forbidden(path) {
			bad = append(bad, pos.String()+": imports "+path)
		}
		if strings.Contains(strings.Split(path, "/")[0], ".") && !slices.Contains(allowedModules, path) {
			bad = append(bad, pos.String()+": imports non-standard "+path)
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
			bad = append(bad, fset.Position(n.Pos()).String()+": go statement")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && clockReaders[n.Sel.Name] {
				bad = append(bad, fset.Position(n.Pos()).String()+": reads the clock with time."+n.Sel.Name)
			}
		}
		return true
	})
	return bad
}

// TestPurity parses the package's non-test files and fails on clock reads,
// I/O or randomness imports, and goroutines.
func TestPurity(t *testing.T) {
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
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range impurities(fset, f) {
			t.Error(b)
		}
		checked++
	}
	if checked < 5 {
		t.Fatalf("checked %d files; want the whole package", checked)
	}
}

// TestImpuritiesDetects checks that the purity check itself can fail.
func TestImpuritiesDetects(t *testing.T) {
	tests := []struct {
		name, src string
		want      int
	}{
		{"clean", `package p; import "time"; func f(t time.Time) time.Time { return t.Add(time.Second) }`, 0},
		{"time.Now", `package p; import "time"; var x = time.Now()`, 1},
		{"renamed time", `package p; import tm "time"; var x = tm.Since`, 1},
		{"os", `package p; import "os"; var _ = os.Args`, 1},
		{"os/exec", `package p; import "os/exec"; var _ = exec.Command`, 1},
		{"net", `package p; import "net"; var _ net.Conn`, 1},
		{"math/rand", `package p; import "math/rand"; var _ = rand.Int`, 1},
		{"math/rand/v2", `package p; import "math/rand/v2"; var _ = rand.Int`, 1},
		{"raft", `package p; import "github.com/hashicorp/raft"; var _ raft.FSM`, 1},
		{"go statement", `package p; func f() { go f() }`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, "x.go", tt.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := impurities(fset, f); len(got) != tt.want {
				t.Errorf("impurities(%s) = %q; want %d findings", tt.name, got, tt.want)
			}
		})
	}
}
