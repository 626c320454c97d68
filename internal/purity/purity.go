// Package purity checks that a package's non-test Go files are pure in
// the sense DESIGN.md asks of fsm and placement: no clock reads, no I/O or
// global randomness imports, no goroutines, and no non-standard imports
// beyond an allow-list. Their purity tests call Test (or Check) on
// themselves.
package purity

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// forbidden reports whether an import reads the outside world or shared
// randomness. os and net are forbidden with every package under them.
func forbidden(path string) bool {
	switch path {
	case "os", "net", "math/rand", "math/rand/v2", "syscall", "unsafe":
		return true
	}
	return strings.HasPrefix(path, "os/") || strings.HasPrefix(path, "net/")
}

// clockReaders are the time functions that read or wait on the clock.
var clockReaders = map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true,
	"After": true, "Tick": true, "NewTimer": true, "NewTicker": true, "AfterFunc": true}

// Impurities returns one line per impure construct in a parsed file; only
// modules in allowed may be imported from outside the standard library.
func Impurities(fset *token.FileSet, f *ast.File, allowed []string) []string {
	var bad []string
	timeName := ""
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		pos := fset.Position(imp.Pos())
		if forbidden(path) {
			bad = append(bad, pos.String()+": imports "+path)
		}
		if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") && !slices.Contains(allowed, path) {
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

// Check parses every non-test Go file in dir and returns the impurities
// found and how many files it read.
func Check(dir string, allowed []string) (bad []string, files int, err error) {
	files, err = eachFile(dir, func(fset *token.FileSet, f *ast.File) {
		bad = append(bad, Impurities(fset, f, allowed)...)
	})
	return bad, files, err
}

// Imports returns every import path of dir's non-test Go files, each
// with where it is first imported, and how many files it read: for a
// package's test that it imports only what its doc.go allows.
func Imports(dir string) (imports map[string]string, files int, err error) {
	imports = map[string]string{}
	files, err = eachFile(dir, func(fset *token.FileSet, f *ast.File) {
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if _, seen := imports[path]; !seen {
				imports[path] = fset.Position(imp.Pos()).String()
			}
		}
	})
	return imports, files, err
}

// eachFile parses every non-test Go file in dir, in name order, and
// calls each with it; it returns how many files it read.
func eachFile(dir string, each func(*token.FileSet, *ast.File)) (files int, err error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return 0, err
	}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			return files, fmt.Errorf("purity: %w", err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			return files, fmt.Errorf("purity: %w", err)
		}
		each(fset, f)
		files++
	}
	return files, nil
}

// T is the part of *testing.T that Test uses (this package imports no
// testing: it reads no test file, and its own test checks that).
type T interface {
	Helper()
	Error(args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// Test is a package's purity test: it fails t for each impurity of the
// non-test Go files in the working directory (the package under test),
// and when it read fewer than minFiles of them (a check that read nothing
// would pass). allowed is as for Impurities.
func Test(t T, minFiles int, allowed ...string) {
	t.Helper()
	bad, files, err := Check(".", allowed)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bad {
		t.Error(b)
	}
	if files < minFiles {
		t.Fatalf("checked %d files; want every non-test file of the package (%d or more)", files, minFiles)
	}
}
