package httpapi

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// httpapi owns only HTTP (doc.go): of Shoal it may import the wire types,
// the records, the one job id parser, the token and certificate checks,
// the gossip member it renders and the sentinels its status table maps;
// never what decides (placement, leader, worker, exec) nor the agent
// that composes it.
var allowedImports = map[string]string{
	"api":       "the wire types",
	"cluster":   "records, identities, sentinels",
	"slurm":     "ParseJobID",
	"pki":       "user tokens, a renewal's CSR and certificate",
	"gossip":    "the member record Info returns",
	"fsm":       "sentinels of the status table",
	"consensus": "ErrNotLeader, a sentinel of the status table",
}

func TestImportsNothingOfScheduling(t *testing.T) {
	const shoal = "github.com/shoal-sched/shoal/"
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("glob *.go = %v, %v", files, err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			pkg, ok := strings.CutPrefix(path, shoal)
			if !ok {
				continue
			}
			if _, ok := allowedImports[pkg]; !ok {
				t.Errorf("%s imports %s: httpapi knows nothing of scheduling; reach it through a role (doc.go)", name, path)
			}
		}
	}
}
