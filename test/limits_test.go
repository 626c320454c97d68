package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestMaxSubmitJobs (issue 12): a user past the policy's MaxSubmitJobs gets
// a clear error naming the limit, from shoal submit and from sbatch; other
// users are not held to that user's count; a finished job frees its place.
func TestMaxSubmitJobs(t *testing.T) {
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"max_submit_jobs": 2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]
	eventually(t, 20*time.Second, "the policy in force", func() error {
		if out := mustShoal(t, a, "policy", "show"); !strings.Contains(out, "max_submit_jobs") {
			return fmt.Errorf("policy: %s", out)
		}
		return nil
	})
	first := submit(t, a, "--hold", "--", "true")
	submit(t, a, "--hold", "--", "true")
	r := shoal(t, a, "submit", "--hold", "--", "true")
	if r.code == 0 || !strings.Contains(r.stderr, "MaxSubmitJobs") || !strings.Contains(r.stderr, "limit of 2") {
		t.Errorf("third live job: exit %d %q; want refused naming MaxSubmitJobs", r.code, r.stderr)
	}
	shims := newSlurmShims(t, a)
	if r := shims.run("sbatch", "--hold", "--wrap", "true"); r.code == 0 || !strings.Contains(r.stderr, "MaxSubmitJobs") {
		t.Errorf("sbatch past the limit: exit %d %q; want refused naming MaxSubmitJobs", r.code, r.stderr)
	}
	mustShoal(t, a, "cancel", fmt.Sprint(first))
	submit(t, a, "--hold", "--", "true")
}
