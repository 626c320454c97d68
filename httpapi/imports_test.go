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

// refusedBelow are what no package httpapi imports, directly or through
// Shoal's packages, may import: raft and its store, and memberlist
// (doc.go: neither is among its dependencies).
var refusedBelow = []string{"github.com/hashicorp/raft", "go.etcd.io/bbolt", "github.com/hashicorp/memberlist"}

func TestDependsOnNeitherRaftNorGossip(t *testing.T) {
	const shoal = "github.com/shoal-sched/shoal/"
	via := map[string]string{".": "httpapi"} // Shoal package dir -> the chain that reached it
	for queue := []string{"."}; len(queue) > 0; queue = queue[1:] {
		dir := queue[0]
		imports, files, err := purity.Imports(dir)
		if err != nil || files == 0 {
			t.Fatalf("purity.Imports(%s) = %d files, %v", dir, files, err)
		}
		for path, where := range imports {
			if pkg, ok := strings.CutPrefix(path, shoal); ok {
				if next := "../" + pkg; via[next] == "" {
					via[next] = via[dir] + " -> " + pkg
					queue = append(queue, next)
				}
				continue
			}
			for _, bad := range refusedBelow {
				if path == bad || strings.HasPrefix(path, bad+"/") {
					t.Errorf("%s (%s) imports %s: httpapi must not depend on raft or gossip", via[dir], where, path)
				}
			}
		}
	}
}
