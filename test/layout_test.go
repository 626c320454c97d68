package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// layoutScript prints the batch shell's view of the layout, then one line
// per task of a plain srun and of srun -m cyclic: its rank, node, local
// id and SLURM_DISTRIBUTION (and whether SLURM_TASK_PID is the task's
// pid).
const layoutScript = `echo "batch $SLURM_TASKS_PER_NODE ${SLURM_NTASKS_PER_NODE-unset} ${SLURM_DISTRIBUTION-unset} $SLURM_JOB_CPUS_PER_NODE $SLURM_NTASKS"
srun sh -c 'echo "plain $SLURM_PROCID $SLURMD_NODENAME $SLURM_LOCALID $SLURM_DISTRIBUTION $RANK $LOCAL_WORLD_SIZE pid=$(test "$SLURM_TASK_PID" = $$ && echo ok || echo "$SLURM_TASK_PID/$$")"'
srun -m cyclic sh -c 'echo "cyclic $SLURM_PROCID $SLURMD_NODENAME $SLURM_LOCALID $SLURM_DISTRIBUTION $RANK $LOCAL_WORLD_SIZE"'
srun -n 4 sh -c 'echo "n4 $SLURM_PROCID $SLURMD_NODENAME $SLURM_STEP_TASKS_PER_NODE"'
`

// TestJobLayout: sbatch -n 5 -N 2 runs 4 ranks on the first node and 1 on
// the second, as Debian's Slurm does on idle nodes (one on each node, the
// rest packed on the first: slurm/testdata/layout_golden.txt), holding
// each node's own share of CPUs; srun inside runs the job's ranks in that
// layout, and srun -m cyclic deals them round robin over the job's CPUs,
// as Slurm's srun numbers them (slurm.TestLayoutGolden). A
// job submitted with -m cyclic is sized the same and deals its own ranks
// that way.
func TestJobLayout(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	work := t.TempDir()
	run := func(name string, args ...string) (nodes []string, lines map[string][]string) {
		t.Helper()
		args = append([]string{"--chdir", work, "-o", name + "-%j.out"}, args...)
		id := batch(t, a, append(args, "--wrap", layoutScript)...)
		j, data := completedOutput(t, a, id, filepath.Join(work, fmt.Sprintf("%s-%d.out", name, id)))
		lines = map[string][]string{}
		for line := range strings.Lines(data) {
			kind, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
			// Node names as allocation indices, so the test does not
			// depend on which node the job got first.
			for i, n := range j.Nodes {
				rest = strings.ReplaceAll(rest, " "+n+" ", fmt.Sprintf(" node%d ", i))
			}
			lines[kind] = append(lines[kind], rest)
		}
		for _, l := range lines {
			slices.Sort(l)
		}
		return j.Nodes, lines
	}
	check := func(name, kind string, got []string, want ...string) {
		t.Helper()
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %s lines %q; want %q", name, kind, got, want)
		}
	}

	_, lines := run("block", "-n", "5", "-N", "2")
	check("-n5 -N2", "batch", lines["batch"], "4,1 unset unset 4,1 5")
	check("-n5 -N2", "plain", lines["plain"],
		"0 node0 0 block 0 4 pid=ok", "1 node0 1 block 1 4 pid=ok", "2 node0 2 block 2 4 pid=ok",
		"3 node0 3 block 3 4 pid=ok", "4 node1 0 block 4 1 pid=ok")
	// A step of 4 fills the job's shares (4 and 1) in blocks, as Slurm's
	// step fills its job's CPUs: 3 and 1.
	check("-n5 -N2", "n4", lines["n4"], "0 node0 3,1", "1 node0 3,1", "2 node0 3,1", "3 node1 3,1")
	// srun -m cyclic deals the ranks over the job's CPUs (4 and 1) as
	// Slurm's srun: 0,2,3,4 and 1 (layout_golden.txt: -n5 -N2 :: -n5 -m
	// cyclic).
	check("-n5 -N2", "cyclic", lines["cyclic"],
		"0 node0 0 cyclic 0 4", "2 node0 1 cyclic 2 4", "3 node0 2 cyclic 3 4", "4 node0 3 cyclic 4 4",
		"1 node1 0 cyclic 1 1")

	// A job with -m cyclic is sized as any (4 and 1), its ranks dealt
	// round robin over its CPUs: 0,2,3,4 and 1 (layout_golden.txt:
	// -n5 -N2 -m cyclic).
	_, lines = run("cyclic", "-n", "5", "-N", "2", "-m", "cyclic")
	check("-n5 -N2 -m cyclic", "batch", lines["batch"], "4,1 unset cyclic 4,1 5")
	check("-n5 -N2 -m cyclic", "plain", lines["plain"],
		"0 node0 0 cyclic 0 4 pid=ok", "2 node0 1 cyclic 2 4 pid=ok", "3 node0 2 cyclic 3 4 pid=ok",
		"4 node0 3 cyclic 4 4 pid=ok", "1 node1 0 cyclic 1 1 pid=ok")
}

// TestJobLayoutBusy: a job that starts where another holds CPUs lays its
// ranks out by the CPUs its nodes have free, as Debian's Slurm does
// (slurm/testdata/layout_golden.txt, "hold -w n1 -n14 ; -n5 -N2": 2 and
// 3): with 14 of the 16 CPUs of one node held, sbatch -n 5 -N 2 -w NODE
// runs 2 ranks there (a node named by -w is sized first) and 3 on the
// other, each node holding its ranks' CPUs, the ranks in blocks in the
// allocation's order; srun -m cyclic in it deals them over those CPUs.
func TestJobLayoutBusy(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	busy := c.Agents[1].Name
	work := t.TempDir()
	hold := batch(t, a, "--chdir", work, "-o", "/dev/null", "-w", busy, "-n", "14", "--wrap", "sleep 300")
	waitState(t, a, hold, "RUNNING", "")
	script := `echo "batch $SLURM_TASKS_PER_NODE $SLURM_JOB_CPUS_PER_NODE"
srun sh -c 'echo "plain $SLURM_PROCID $SLURMD_NODENAME"'
srun -m cyclic sh -c 'echo "cyclic $SLURM_PROCID $SLURMD_NODENAME"'
`
	id := batch(t, a, "--chdir", work, "-o", "busy-%j.out", "-n", "5", "-N", "2", "-w", busy, "--wrap", script)
	j, data := completedOutput(t, a, id, filepath.Join(work, fmt.Sprintf("busy-%d.out", id)))
	mustShoal(t, a, "cancel", fmt.Sprint(hold))
	got := strings.Split(strings.TrimSpace(data), "\n")
	for i, n := range j.Nodes {
		for k := range got {
			got[k] = strings.ReplaceAll(got[k], " "+n, fmt.Sprintf(" node%d", i))
		}
	}
	slices.Sort(got)
	// The busy node runs 2 ranks; which of the allocation's nodes it is
	// is placement's choice (Slurm's is the node order).
	want := []string{"batch 2,3 2,3",
		"plain 0 node0", "plain 1 node0", "plain 2 node1", "plain 3 node1", "plain 4 node1",
		"cyclic 0 node0", "cyclic 2 node0", "cyclic 1 node1", "cyclic 3 node1", "cyclic 4 node1"}
	if len(j.Nodes) == 2 && j.Nodes[1] == busy {
		want = []string{"batch 3,2 3,2",
			"plain 0 node0", "plain 1 node0", "plain 2 node0", "plain 3 node1", "plain 4 node1",
			"cyclic 0 node0", "cyclic 2 node0", "cyclic 4 node0", "cyclic 1 node1", "cyclic 3 node1"}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("job on %v (busy %s) printed %q; want %q", j.Nodes, busy, got, want)
	}
}

// TestTaskPID: every task's SLURM_TASK_PID is its own pid, as Slurm's,
// both where ranks start through the task namespace helper (a root
// agent's default on one machine, above) and where they start directly
// (--task-hostname=off: through the exec shim).
func TestTaskPID(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 1, ExtraArgs: []string{"--task-hostname=off"}})
	a := c.Agents[0]
	work := t.TempDir()
	id := batch(t, a, "--chdir", work, "-n", "2", "-o", "pid-%j.out", "--wrap",
		`echo "batch pid=$(test "$SLURM_TASK_PID" = $$ && echo ok || echo "$SLURM_TASK_PID/$$")"
srun sh -c 'echo "task $SLURM_PROCID pid=$(test "$SLURM_TASK_PID" = $$ && echo ok || echo "$SLURM_TASK_PID/$$")"'`)
	_, data := completedOutput(t, a, id, filepath.Join(work, fmt.Sprintf("pid-%d.out", id)))
	got := strings.Split(strings.TrimSpace(data), "\n")
	slices.Sort(got)
	want := []string{"batch pid=ok", "task 0 pid=ok", "task 1 pid=ok"}
	if !slices.Equal(got, want) {
		t.Errorf("output %q; want %q", got, want)
	}
}

// TestSbatchAsUser: root's sbatch --uid/--gid submits the job as that
// user and group, as Slurm's root may; squeue shows the user.
func TestSbatchAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("needs root: sbatch --uid is root's")
	}
	c := startCluster(t, localcluster.Options{Nodes: 1})
	a := c.Agents[0]
	// A directory the job's user may write in.
	work := sharedTempDir(t, "shoal-asuser-", 0o777)
	sh := newSlurmShims(t, a)
	jid := sh.sbatch("--uid=nobody", "--gid=nogroup", "--chdir", work, "-o", "as-%j.out", "--wrap", `echo "$(id -un) $(id -gn) $SLURM_JOB_USER"`)
	if j := waitJob(t, a, jid, 60*time.Second); j.State != "COMPLETED" || j.User != "nobody" {
		t.Fatalf("job %d = %s as %q; want COMPLETED as nobody", jid, j.State, j.User)
	}
	data, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("as-%d.out", jid)))
	if got := strings.TrimSpace(string(data)); got != "nobody nogroup nobody" {
		t.Errorf("the job says %q; want nobody nogroup nobody", got)
	}
}

// TestMultiProg: srun --multi-prog runs each task's program from the
// configuration file, with %t and %o, as Slurm's srun.
func TestMultiProg(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	work := t.TempDir()
	conf := filepath.Join(work, "multi.conf")
	if err := os.WriteFile(conf, []byte("0 echo first %t\n1-2 sh -c 'echo \"range $0\"' %o\n* echo rest %t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := batch(t, a, "--chdir", work, "-N", "2", "-o", "mp-%j.out", "--wrap", "srun -n 4 --multi-prog "+conf)
	_, data := completedOutput(t, a, id, filepath.Join(work, fmt.Sprintf("mp-%d.out", id)))
	got := strings.Split(strings.TrimSpace(data), "\n")
	slices.Sort(got)
	if want := []string{"first 0", "range 0", "range 1", "rest 3"}; !slices.Equal(got, want) {
		t.Errorf("tasks said %q; want %q", got, want)
	}
}

// completedOutput waits for batch job id to end, which must be COMPLETED,
// and returns it and its output file at path.
func completedOutput(t *testing.T, a *localcluster.Agent, id uint64, path string) (api.Job, string) {
	t.Helper()
	j := waitJob(t, a, id, 60*time.Second)
	data, _ := os.ReadFile(path)
	if j.State != "COMPLETED" {
		t.Fatalf("job %d %s:\n%s", id, j.State, data)
	}
	return j, string(data)
}
