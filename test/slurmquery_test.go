package test

import (
	"fmt"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
	"github.com/shoal-sched/shoal/slurm"
)

// TestSlurmQueryShims: squeue, sinfo, sacct and scancel through the
// install-shims links, parsed the way users' scripts parse them.
func TestSlurmQueryShims(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[0]
	shims := t.TempDir()
	mustShoal(t, a, "install-shims", shims)
	env := []string{"SHOAL_DATA_DIR=" + a.DataDir}
	slurmCmd := func(name string, args ...string) cliResult {
		t.Helper()
		return runEnv(t, env, filepath.Join(shims, name), args...)
	}
	must := func(name string, args ...string) string {
		t.Helper()
		r := slurmCmd(name, args...)
		if r.code != 0 {
			t.Fatalf("%s %s: exit %d\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	lines := func(s string) []string {
		return strings.Fields(strings.TrimSpace(s))
	}
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}

	// A batch job whose step succeeds and whose script fails.
	work := t.TempDir()
	out := must("sbatch", "--parsable", "-N", "1", "--chdir", work, "--wrap", "srun true; exit 3")
	var failed uint64
	if _, err := fmt.Sscan(out, &failed); err != nil {
		t.Fatalf("sbatch --parsable printed %q", out)
	}
	waitJob(t, a, failed, 60*time.Second)

	// One job holding every GPU, one waiting behind it.
	running := submit(t, a, "--name", "sleeper", "-N", "3", "--gpus-per-node", "2", "--time", "5", "--", "sleep", "300")
	pending := submit(t, a, "--name", "waiter", "-N", "1", "--gpus-per-node", "1", "--", "true")
	eventually(t, 30*time.Second, "the sleeper to run", func() error {
		got := strings.TrimSpace(must("squeue", "-h", "-j", fmt.Sprint(running), "-o", "%t"))
		if got != "R" {
			return fmt.Errorf("squeue -o %%t = %q", got)
		}
		return nil
	})

	// squeue: live jobs only, pending first; finished ones with -t all.
	if got, want := lines(must("squeue", "-h", "-o", "%i")), []string{fmt.Sprint(pending), fmt.Sprint(running)}; !slices.Equal(got, want) {
		t.Errorf("squeue -h -o %%i = %q; want %q", got, want)
	}
	if got := lines(must("squeue", "-h", "-t", "all", "-o", "%i:%t")); !slices.Contains(got, fmt.Sprintf("%d:F", failed)) || len(got) != 3 {
		t.Errorf("squeue -t all = %q; want 3 jobs with %d:F", got, failed)
	}
	if got := lines(must("squeue", "-h", "--states=PD", "-o", "%i")); !slices.Equal(got, []string{fmt.Sprint(pending)}) {
		t.Errorf("squeue -t PD = %q; want %d", got, pending)
	}
	all := must("squeue")
	header := "             JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)"
	if first, _, _ := strings.Cut(all, "\n"); first != header {
		t.Errorf("squeue header = %q; want %q", first, header)
	}
	if !strings.Contains(all, fmt.Sprintf("%18d     shoal   waiter %8.8s PD       0:00      1 (", pending, me.Username)) {
		t.Errorf("squeue does not show the waiting job in Slurm's columns:\n%s", all)
	}
	if got := lines(must("squeue", "--me", "-h", "-o", "%u")); len(got) != 2 || got[0] != me.Username {
		t.Errorf("squeue --me -o %%u = %q; want %s twice", got, me.Username)
	}
	if got := must("squeue", "-h", "-u", "nosuchuser"); got != "" {
		t.Errorf("squeue -u nosuchuser printed %q", got)
	}
	if r := slurmCmd("squeue", "-j", "99999"); r.code != 1 || !strings.Contains(r.stderr, "Invalid job id specified") {
		t.Errorf("squeue -j 99999: exit %d %q; want 1 and Invalid job id specified", r.code, r.stderr)
	}
	if r := slurmCmd("squeue", "--bogus"); r.code != 1 || !strings.HasPrefix(r.stderr, "squeue: unrecognized option '--bogus'") {
		t.Errorf("squeue --bogus: exit %d %q", r.code, r.stderr)
	}
	if r := run(t, "--data-dir", a.DataDir, "slurm", "squeue", "-h", "-o", "%j"); r.code != 0 || !slices.Equal(lines(r.stdout), []string{"waiter", "sleeper"}) {
		t.Errorf("shoal slurm squeue: exit %d %q %q", r.code, r.stdout, r.stderr)
	}

	// sinfo: every node allocated, each with its GPUs.
	if got := strings.TrimSpace(must("sinfo", "-h", "-o", "%P %D %t %N")); got != "shoal* 3 alloc "+nodeRange(c) {
		t.Errorf("sinfo = %q; want shoal* 3 alloc %s", got, nodeRange(c))
	}
	if got := lines(must("sinfo", "-N", "-h", "-o", "%N:%G:%T")); len(got) != 3 || got[0] != c.Agents[0].Name+":gpu:2:allocated" {
		t.Errorf("sinfo -N -o %%N:%%G:%%T = %q", got)
	}
	if got := must("sinfo", "-N", "-l"); !strings.Contains(got, "NODELIST   NODES PARTITION       STATE CPUS    S:C:T MEMORY") {
		t.Errorf("sinfo -N -l lacks Slurm's header:\n%s", got)
	}

	// sacct: the job, its batch step and its srun step.
	if got := must("sacct", "-P", "-X", "-j", fmt.Sprint(failed), "--format", "JobID,State,ExitCode"); got != fmt.Sprintf("JobID|State|ExitCode\n%d|FAILED|3:0\n", failed) {
		t.Errorf("sacct -P -X = %q", got)
	}
	want := fmt.Sprintf("%d|wrap|FAILED|3:0\n%d.batch|batch|FAILED|3:0\n%d.0|true|COMPLETED|0:0\n", failed, failed, failed)
	if got := must("sacct", "-P", "-n", "-j", fmt.Sprint(failed), "--format=JobID,JobName,State,ExitCode"); got != want {
		t.Errorf("sacct with steps = %q; want %q", got, want)
	}
	if got := must("sacct", "-X", "-n", "-j", fmt.Sprintf("%d,%d", running, pending), "-o", "JobID,State"); !strings.Contains(got, "RUNNING") || !strings.Contains(got, "PENDING") {
		t.Errorf("sacct of the live jobs:\n%s", got)
	}

	// scancel: bad ids, unsupported signals, unknown jobs, by name, by user.
	if r := slurmCmd("scancel", "abc"); r.code != 1 || !strings.Contains(r.stderr, "scancel: error: Invalid job id abc") {
		t.Errorf("scancel abc: exit %d %q", r.code, r.stderr)
	}
	// N_1 of a job that is no array names no job: not an error, as for
	// any unknown job, and the job runs on.
	if r := slurmCmd("scancel", fmt.Sprintf("%d_1", running)); r.code != 0 {
		t.Errorf("scancel N_1 of a plain job: exit %d %q; want 0", r.code, r.stderr)
	}
	// --signal sends without cancelling (CONT: the sleeper runs on).
	if r := slurmCmd("scancel", "--signal=CONT", fmt.Sprint(running)); r.code != 0 {
		t.Errorf("scancel --signal=CONT: exit %d %q; want 0", r.code, r.stderr)
	}
	if r := slurmCmd("scancel", "--signal=BOGUS", fmt.Sprint(running)); r.code != 1 {
		t.Errorf("scancel --signal=BOGUS: exit %d %q; want 1", r.code, r.stderr)
	}
	if r := slurmCmd("scancel"); r.code != 1 || !strings.Contains(r.stderr, "No job identification provided") {
		t.Errorf("scancel with nothing: exit %d %q", r.code, r.stderr)
	}
	if r := slurmCmd("scancel", "99999"); r.code != 0 || r.stderr != "" {
		t.Errorf("scancel of an unknown job: exit %d %q; want 0 and silence, as Slurm 22.05", r.code, r.stderr)
	}
	must("scancel", "-n", "waiter")
	eventually(t, 30*time.Second, "the waiter to be cancelled", func() error {
		if got := lines(must("squeue", "-h", "-o", "%i")); !slices.Equal(got, []string{fmt.Sprint(running)}) {
			return fmt.Errorf("squeue -o %%i = %q", got)
		}
		return nil
	})
	must("scancel", "-u", me.Username)
	eventually(t, 30*time.Second, "the sleeper to be cancelled", func() error {
		if got := must("squeue", "-h"); got != "" {
			return fmt.Errorf("squeue -h = %q", got)
		}
		return nil
	})
	if got := must("sacct", "-P", "-n", "-X", "-j", fmt.Sprintf("%d,%d", pending, running), "-o", "JobID,State"); got != fmt.Sprintf("%d|CANCELLED\n%d|CANCELLED\n", running, pending) {
		t.Errorf("sacct after scancel = %q", got)
	}
}

// nodeRange is the cluster's node names as one hostlist, as sinfo prints
// them.
func nodeRange(c *localcluster.Cluster) string {
	names := make([]string, len(c.Agents))
	for i, a := range c.Agents {
		names[i] = a.Name
	}
	slices.Sort(names)
	return slurm.CompressHostlist(names)
}
