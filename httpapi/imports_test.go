package httpapi

import (
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/internal/purity"
)

// allowedImports are what httpapi may import of Shoal, and why (doc.go):
// it owns only HTTP, so never what decides (placement, leader, worker,
// exec), nor the replicated state machine, raft or gossip (fsm,
// consensus, gossip: the sentinels its status table maps live in cluster,
// Info renders the members itself), nor the agent that composes it.
var allowedImports = map[string]string{
	"api":     "the wire types",
	"cluster": "records, identities, sentinels",
	"slurm":   "ParseJobID",
	"pki":     "user tokens, a renewal's CSR and certificate",
}

func TestImportsNothingOfScheduling(t *testing.T) {
	const shoal = "github.com/shoal-sched/shoal/"
	imports, files, err := purity.Imports(".")
	if err != nil || files == 0 {
		t.Fatalf("purity.Imports(.) = %d files, %v", files, err)
	}
	for path, where := range imports {
		if pkg, ok := strings.CutPrefix(path, shoal); ok && allowedImports[pkg] == "" {
			t.Errorf("%s: imports %s: httpapi knows nothing of scheduling; reach it through a role (doc.go)", where, path)
		}
	}
}
