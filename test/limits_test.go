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
	policy := policyFile(t, `{"max_submit_jobs": 2}`)
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]
	waitPolicy(t, a, "max_submit_jobs")
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

// TestMinJobAge (issue 12): finished jobs leave the live state once
// MinJobAge has passed — shoal status counts them no more — and sacct,
// shoal job and shoal logs still find them, on any agent.
func TestMinJobAge(t *testing.T) {
	policy := policyFile(t, `{"min_job_age": "1s"}`)
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 1, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]
	id := submit(t, a, "--", "echo", "archived-output")
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" {
		t.Fatalf("job %d = %s", id, j.State)
	}
	for _, ag := range c.Agents {
		eventually(t, 30*time.Second, ag.Name+": the job out of the live state", func() error {
			if out := mustShoal(t, ag, "status"); !strings.Contains(out, "Jobs=0") {
				return fmt.Errorf("status: %s", out)
			}
			return nil
		})
		shims := newSlurmShims(t, ag)
		if out := shims.must("sacct", "-n", "-P", "-X", "-j", fmt.Sprint(id), "--format=JobID,State,ExitCode"); !strings.Contains(out, fmt.Sprintf("%d|COMPLETED|0:0", id)) {
			t.Errorf("%s: sacct of the archived job: %q", ag.Name, out)
		}
		if out := mustShoal(t, ag, "job", fmt.Sprint(id)); !strings.Contains(out, "COMPLETED") {
			t.Errorf("%s: shoal job of the archived job:\n%s", ag.Name, out)
		}
		if out := mustShoal(t, ag, "logs", fmt.Sprint(id)); !strings.Contains(out, "archived-output") {
			t.Errorf("%s: shoal logs of the archived job: %q", ag.Name, out)
		}
	}
	if out := mustShoal(t, a, "queue"); strings.Contains(out, fmt.Sprint(id)+" ") {
		t.Errorf("shoal queue lists the archived job:\n%s", out)
	}
}

// TestMinJobAgeOlderCluster: while a server speaks a protocol older than
// 7, the archive loop still archives, without asking the FSM to forget
// request ids (a proposal that did would be refused by the protocol
// gate, and the job would stay live).
func TestMinJobAgeOlderCluster(t *testing.T) {
	policy := policyFile(t, `{"min_job_age": "1s"}`)
	c := startCluster(t, localcluster.Options{Nodes: 3, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]
	_, id, _ := protocol4Allocation(t, c)
	mustShoal(t, a, "cancel", fmt.Sprint(id))
	eventually(t, 60*time.Second, "the cancelled job out of the live state", func() error {
		if out := mustShoal(t, a, "status"); !strings.Contains(out, "Jobs=0") {
			return fmt.Errorf("status: %s", out)
		}
		return nil
	})
}

// TestOutputRetention (issue 12): once a finished job is archived and its
// output retention has passed, every node removes its task directories;
// accounting still knows the job.
func TestOutputRetention(t *testing.T) {
	policy := policyFile(t, `{"min_job_age": "1s", "output_retention": "2s"}`)
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 1, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]
	id := submit(t, a, "--nodes", "2", "--", "echo", "kept-for-a-while")
	if j := waitJob(t, a, id, 30*time.Second); j.State != "COMPLETED" {
		t.Fatalf("job %d = %s", id, j.State)
	}
	for _, ag := range c.Agents {
		dir := filepath.Join(ag.DataDir, "exec", "jobs", fmt.Sprintf("%d.1", id))
		eventually(t, 30*time.Second, ag.Name+": the task directory removed", func() error {
			if _, err := os.Stat(dir); err == nil {
				return fmt.Errorf("%s still there", dir)
			}
			return nil
		})
	}
	if out := mustShoal(t, a, "logs", fmt.Sprint(id)); strings.Contains(out, "kept-for-a-while") {
		t.Errorf("logs after the retention: %q; want the output gone", out)
	}
	if out := mustShoal(t, a, "job", fmt.Sprint(id)); !strings.Contains(out, "COMPLETED") {
		t.Errorf("shoal job after the retention:\n%s", out)
	}
}

// TestSlurmRequestVariables (issue 13): a batch job asked with
// --gpus-per-node sees SLURM_GPUS_PER_NODE (Ray's Slurm launcher reads
// it), the host it was submitted from, the cluster's name from the policy
// and its CPUs per node in Slurm's format.
func TestSlurmRequestVariables(t *testing.T) {
	policy := policyFile(t, `{"cluster_name": "lab"}`)
	c := startCluster(t, localcluster.Options{Nodes: 2, GPUsPerNode: 2, ExtraArgs: []string{"--policy", policy}})
	a := c.Agents[0]
	waitPolicy(t, a, "lab")
	work := t.TempDir()
	out := filepath.Join(work, "vars.out")
	shims := newSlurmShims(t, a)
	shims.must("sbatch", "--wait", "-N2", "--gpus-per-node=2", "--ntasks-per-node=2", "--chdir", work, "-o", out,
		"--wrap", `echo "GPN=$SLURM_GPUS_PER_NODE HOST=$SLURM_SUBMIT_HOST CLUSTER=$SLURM_CLUSTER_NAME CPN=$SLURM_JOB_CPUS_PER_NODE ON=$SLURM_CPUS_ON_NODE ROCR=$ROCR_VISIBLE_DEVICES"`)
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	want := fmt.Sprintf("GPN=2 HOST=%s CLUSTER=lab CPN=2(x2) ON=2 ROCR=0,1", host)
	if got := strings.TrimSpace(string(data)); got != want {
		t.Errorf("batch script printed %q; want %q", got, want)
	}
}
