package test

import (
	"fmt"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestUsersApart (issue 12, threat b): two real users on a node. A's task
// runs with A's uid, gid and groups; B cannot cancel, signal, hold,
// requeue or read the output of A's job; an operator the policy names can;
// with private_jobs, B no longer sees A's job at all. The operator is
// named as a Unix group ("@shoalop", the user's own group).
func TestUsersApart(t *testing.T) {
	mustRoot(t)
	policy := policyFile(t, `{"operators": ["@shoalop"]}`)
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]
	userA, userB, op := newSecUser(t, "shoala"), newSecUser(t, "shoalb"), newSecUser(t, "shoalop")
	baseA, workA := secDirs(t, c, userA)
	baseB, _ := secDirs(t, c, userB)
	baseOp, _ := secDirs(t, c, op)
	waitPolicy(t, a, "shoalop")

	// A's task is A: uid, gid and supplementary groups.
	r := userA.run(t, a, workA, nil, "submit", "--parsable", "--chdir", workA, "--", "id")
	if r.code != 0 {
		t.Fatalf("submit as A: exit %d %s", r.code, r.stderr)
	}
	idJob := strings.TrimSpace(r.stdout)
	want, err := osexec.Command("setpriv", "--reuid=shoala", "--regid=shoala", "--init-groups", "id").Output()
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "A's id job", func() error {
		r := userA.run(t, a, workA, nil, "logs", idJob)
		if strings.TrimSpace(r.stdout) != strings.TrimSpace(string(want)) {
			return fmt.Errorf("logs %q %q; want %q", r.stdout, r.stderr, want)
		}
		return nil
	})

	r = userA.run(t, a, workA, nil, "submit", "--parsable", "--chdir", workA, "--", "sleep", "120")
	if r.code != 0 {
		t.Fatalf("submit as A: exit %d %s", r.code, r.stderr)
	}
	job := strings.TrimSpace(r.stdout)
	waitState(t, a, mustID(t, job), "RUNNING", "")
	for _, args := range [][]string{
		{"cancel", job},
		{"cancel", "--signal", "USR1", job},
		{"slurm", "scontrol", "hold", job},
		{"slurm", "scontrol", "requeue", job},
		{"logs", job},
	} {
		if r := userB.run(t, a, baseB, nil, args...); r.code == 0 || !strings.Contains(r.stderr, "only its owner, root or an operator") {
			t.Errorf("B: shoal %s: exit %d %q; want refused", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := userB.run(t, a, baseB, nil, "queue", "--all"); r.code != 0 || !strings.Contains(r.stdout, " "+job+" ") && !strings.Contains(r.stdout, job) {
		t.Errorf("B: shoal queue --all: exit %d %q; want A's job listed, as squeue does", r.code, r.stdout)
	}

	// With private_jobs, B sees only B's; A and the operator still see A's.
	setPolicy(t, a, `{"operators": ["@shoalop"], "private_jobs": true}`)
	if r := userB.run(t, a, baseB, nil, "queue", "--all"); r.code != 0 || strings.Contains(r.stdout, "shoala") {
		t.Errorf("B with private_jobs: shoal queue --all: exit %d %q; want none of A's jobs", r.code, r.stdout)
	}
	if r := userB.run(t, a, baseB, nil, "job", job); r.code == 0 || !strings.Contains(r.stderr, "keeps jobs private") {
		t.Errorf("B with private_jobs: shoal job %s: exit %d %q; want refused", job, r.code, r.stderr)
	}
	if r := userA.run(t, a, baseA, nil, "queue"); r.code != 0 || !strings.Contains(r.stdout, "shoala") {
		t.Errorf("A with private_jobs: shoal queue: exit %d %q; want A's job", r.code, r.stdout)
	}
	if r := op.run(t, a, baseOp, nil, "queue"); r.code != 0 || !strings.Contains(r.stdout, "shoala") {
		t.Errorf("operator with private_jobs: shoal queue: exit %d %q; want A's job", r.code, r.stdout)
	}
	// The operator may act on A's job, and may not drain a node.
	if r := op.run(t, a, baseOp, nil, "cancel", job); r.code != 0 {
		t.Errorf("operator: cancel A's job: exit %d %q", r.code, r.stderr)
	}
	if r := op.run(t, a, baseOp, nil, "drain", "n1", "--reason", "x"); r.code == 0 {
		t.Errorf("operator: drain: exit 0; want refused (root's)")
	}
	if j := waitJob(t, a, mustID(t, job), 30*time.Second); j.State != "CANCELLED" {
		t.Errorf("A's job after the operator's cancel: %s", j.State)
	}
}

func mustID(t *testing.T, s string) uint64 {
	t.Helper()
	var id uint64
	if _, err := fmt.Sscan(s, &id); err != nil {
		t.Fatalf("job id %q: %v", s, err)
	}
	return id
}
