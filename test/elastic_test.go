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

// elasticTrain is an elastic PyTorch training run (gloo on CPU) under
// torchrun --nnodes=MIN:MAX with c10d rendezvous. It trains elasticTotal
// steps; rank 0 records the step count in a checkpoint in the shared
// directory after each, so the group torchrun re-forms after a resize
// goes on from there, and logs "step S world W" lines. To let the test
// resize it at known points, the group holds (all-reducing, so that a
// lost peer fails it) at step 5 while it has 2 nodes and has never had
// 3, and at step 15 while it has 3; a resize restarts the workers, which
// re-read the checkpoint. Every all-reduce sums ones, so each must give
// the world size.
const elasticTrain = `import datetime, os, sys, time
import torch
import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
ckpt, log, seen3 = "ckpt", "steps.log", "seen3"
total = int(sys.argv[1])

def read_step():
    try:
        with open(ckpt) as f:
            return int(f.read())
    except FileNotFoundError:
        return 0

def allreduce():
    t = torch.ones(1)
    dist.all_reduce(t)
    if int(t.item()) != world:
        print("bad allreduce %s in world %d" % (t.item(), world), flush=True)
        sys.exit(4)

# Every rank reads the checkpoint after the rendezvous and before any
# step: rank 0 writes it only after a barrier.
step = read_step()
dist.barrier()
if rank == 0 and world == 3:
    open(seen3, "w").close()
had3 = world == 3 or os.path.exists(seen3)
with open(log, "a") as f:
    if rank == 0:
        f.write("start step %d world %d\n" % (step, world))
while step < total:
    if (world == 2 and not had3 and step >= 5) or (world == 3 and step >= 15):
        if rank == 0:
            with open(log, "a") as f:
                f.write("hold step %d world %d\n" % (step, world))
        while True:  # until torchrun restarts the group
            allreduce()
            time.sleep(0.5)
    allreduce()
    step += 1
    dist.barrier()
    if rank == 0:
        with open(ckpt + ".tmp", "w") as f:
            f.write(str(step))
        os.replace(ckpt + ".tmp", ckpt)
        with open(log, "a") as f:
            f.write("step %d world %d\n" % (step, world))
    time.sleep(0.2)
dist.barrier()
if rank == 0:
    with open(log, "a") as f:
        f.write("done step %d world %d\n" % (step, world))
dist.destroy_process_group()
`

const elasticTotal = 25

// TestElasticPyTorch is issue 17's test of elastic gang jobs: a real
// elastic PyTorch run (torchrun --nnodes=2:3, c10d rendezvous, gloo on
// CPU) submitted with -N 2-3 starts on 2 nodes while the third runs
// another job, grows to 3 when that job ends (the new node starts the
// same command, torchrun re-forms the group), loses a node to a killed
// agent and goes on with 2, and finishes its steps: the checkpointed
// step count carries across both resizes.
func TestElasticPyTorch(t *testing.T) {
	requireRootForNamespaces(t)
	requireFile(t, "/usr/bin/torchrun", "python3-torch")
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "train.py"), []byte(elasticTrain), 0o644); err != nil {
		t.Fatal(err)
	}
	ports, err := localcluster.FreePorts("0.0.0.0", 1)
	if err != nil {
		t.Fatal(err)
	}
	// --max_restarts: each resize restarts the workers once. is_host: the
	// rendezvous store runs on the job's first node (MASTER_ADDR), which
	// the job never loses. torchrun decides that from the endpoint's
	// address, and here every node's address is on loopback, which it
	// takes for its own: without it each torchrun races to host the store,
	// and the one that wins may be on the node the test kills.
	launch := fmt.Sprintf(`exec /usr/bin/torchrun --nnodes=2:3 --nproc_per_node=1 --rdzv_backend=c10d \
		--rdzv_endpoint=$MASTER_ADDR:%d --rdzv_id=$SLURM_JOB_ID --rdzv_conf=is_host=$([ "$SLURM_NODEID" = 0 ] && echo 1 || echo 0) \
		--max_restarts=5 %s train.py %d`,
		ports[0], torchrunFlags, elasticTotal)
	log := filepath.Join(work, "steps.log")
	holds := func(world int) func() error {
		return func() error {
			data, _ := os.ReadFile(log)
			if !strings.Contains(string(data), fmt.Sprintf("world %d\n", world)) || !strings.Contains(string(data), "hold step") {
				return fmt.Errorf("no hold in world %d yet:\n%s", world, data)
			}
			for line := range strings.Lines(string(data)) {
				if strings.HasPrefix(line, "hold step") && strings.HasSuffix(line, fmt.Sprintf("world %d\n", world)) {
					return nil
				}
			}
			return fmt.Errorf("no hold in world %d yet:\n%s", world, data)
		}
	}
	// Three torch processes and their torchrun agents starting at once
	// load a small machine for a while: LAN raft timing and a longer lease
	// keep that from reading as lost nodes.
	agentArgs := []string{"--dev-timing=false", "--heartbeat", "1s", "--lease-ttl", "15s"}
	j := elasticScenario(t, work, agentArgs, []string{"/bin/bash", "-c", launch}, holds(2), holds(3), nil)
	data, _ := os.ReadFile(log)
	if j.State != "COMPLETED" {
		t.Fatalf("elastic job %s (exit %d):\n%s", j.State, j.ExitCode, data)
	}
	// The worlds the group trained in, in order, and its last step.
	var worlds []string
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) == 5 && f[0] == "start" {
			if w := f[4]; len(worlds) == 0 || worlds[len(worlds)-1] != w {
				worlds = append(worlds, w)
			}
		}
	}
	if want := []string{"2", "3", "2"}; !slices.Equal(worlds, want) {
		t.Errorf("the group trained in worlds %v; want %v\n%s", worlds, want, data)
	}
	if want := fmt.Sprintf("done step %d world 2\n", elasticTotal); !strings.Contains(string(data), want) {
		t.Errorf("log lacks %q:\n%s", want, data)
	}
	for s := 1; s <= elasticTotal; s++ {
		if n := strings.Count(string(data), fmt.Sprintf("\nstep %d world", s)); n != 1 {
			t.Errorf("step %d logged %d times; want once (the checkpoint carries the count)\n%s", s, n, data)
		}
	}
}

// TestElasticJobNodes: the same scenario with a plain command that
// records, on every node that starts it, the node and the allocation it
// was started with: the node that joins sees 3 nodes, and the job ends
// COMPLETED on the 2 it kept.
func TestElasticJobNodes(t *testing.T) {
	work := t.TempDir()
	ran := filepath.Join(work, "ran")
	cmd := []string{"/bin/sh", "-c", `echo "$SLURMD_NODENAME $SLURM_JOB_NUM_NODES $SLURM_JOB_NODELIST $SLURM_NODEID" >> ran
i=0
while [ ! -e A.go ] && [ $i -lt 1500 ]; do sleep 0.2; i=$((i+1)); done`}
	j := elasticScenario(t, work, nil, cmd, startsIn(ran, 2), startsIn(ran, 3), func() {
		if err := os.WriteFile(filepath.Join(work, "A.go"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	})
	data, _ := os.ReadFile(ran)
	if j.State != "COMPLETED" {
		t.Fatalf("elastic job %s (exit %d):\n%s", j.State, j.ExitCode, data)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 3 {
		t.Fatalf("started %d times; want 3 (2 nodes, then the one that joined):\n%s", len(lines), data)
	}
	var starts []string
	for _, l := range lines[:2] {
		f := strings.Fields(l)
		if len(f) != 4 || f[1] != "2" {
			t.Errorf("first start %q: want 2 nodes", l)
		}
		starts = append(starts, f[0])
	}
	if f := strings.Fields(lines[2]); len(f) != 4 || f[1] != "3" || f[3] != "2" || slices.Contains(starts, f[0]) {
		t.Errorf("the node that joined started with %q; want a new node, 3 nodes, node id 2", lines[2])
	}
}

// elasticScenario runs issue 17's scenario on 3 nodes of 1 GPU: a job on
// one node, then an elastic job (-N 2-3 running cmd in work) that starts
// on the other 2; once atTwo holds, the first job ends and the elastic job
// must grow to 3; once atThree holds, a node of the elastic job (neither
// its first nor the leader) loses its agent (SIGKILL) and the job must go
// on with 2; then finish (may be nil) lets it end. agentArgs are added to
// the agents' test flags. It returns the ended
// elastic job, having checked its resize history and scontrol's view.
func elasticScenario(t *testing.T, work string, agentArgs, cmd []string, atTwo, atThree func() error, finish func()) api.Job {
	t.Helper()
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1, HostOf: ownLoopback, ExtraArgs: agentArgs})
	cli := c.Agents[0]
	bj := startBusy(t, cli, work, 1500)
	id := submit(t, cli, append([]string{"--name", "elastic", "--chdir", work, "--nodes", "2-3", "--gpus-per-node", "1", "--"}, cmd...)...)
	j := waitJobWhere(t, cli, id, 30*time.Second, "the elastic job running on 2 nodes", func(j api.Job) bool {
		return j.State == "RUNNING" && j.NumNodes == 2 && j.Elastic
	})
	if slices.Contains(j.Nodes, bj.Nodes[0]) {
		t.Fatalf("elastic job on %v shares the busy job's node %s", j.Nodes, bj.Nodes[0])
	}
	eventually(t, 3*time.Minute, "the job at work on 2 nodes", atTwo)

	// The busy job ends: its node joins the elastic job.
	if err := os.WriteFile(filepath.Join(work, "busy.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j = waitJobWhere(t, cli, id, 60*time.Second, "the elastic job grown to 3 nodes", func(j api.Job) bool {
		return j.State == "RUNNING" && j.NumNodes == 3 && slices.Contains(j.Nodes, bj.Nodes[0])
	})
	eventually(t, 3*time.Minute, "the job at work on 3 nodes", atThree)

	// Kill the agent of a node the job may lose.
	victim, cli := elasticVictim(t, c, j, cli)
	lost := c.Agents[victim].Name
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	j = waitJobWhere(t, cli, id, 3*time.Minute, "the elastic job shrunk to 2 nodes", func(j api.Job) bool {
		return j.NumNodes == 2 && !slices.Contains(j.Nodes, lost)
	})
	if j.State != "RUNNING" && j.State != "COMPLETED" {
		r := shoal(t, cli, "logs", "--stderr", fmt.Sprint(id)) // torchrun logs to stderr
		out := r.stdout + r.stderr
		if len(out) > 8000 {
			out = out[len(out)-8000:]
		}
		t.Fatalf("after losing %s: %s (%s); want it running on\njob output (tail):\n%s", lost, j.State, j.Reason, out)
	}
	show := newSlurmShims(t, cli).must("scontrol", "show", "job", fmt.Sprint(id))
	for _, want := range []string{"NumNodes=2 ", "ResizeTime="} {
		if !strings.Contains(show, want) {
			t.Errorf("scontrol show job lacks %q:\n%s", want, show)
		}
	}
	if finish != nil {
		finish()
	}
	j = waitJob(t, cli, id, 5*time.Minute)
	var hist []string
	for _, r := range j.Resizes {
		hist = append(hist, fmt.Sprintf("%s %s %d", r.Cause, r.Node, r.NumNodes))
	}
	if want := []string{"grow " + bj.Nodes[0] + " 3", "shrink " + lost + " 2"}; !slices.Equal(hist, want) {
		t.Errorf("resizes %q; want %q", hist, want)
	}
	if out := mustShoal(t, cli, "job", fmt.Sprint(id)); !strings.Contains(out, " shrink Node="+lost+" NumNodes=2\n") {
		t.Errorf("shoal job lacks the shrink of %s:\n%s", lost, out)
	}
	return j
}

// elasticVictim picks the agent of a node of elastic job j to lose:
// neither j's first node (rank 0 and the rendezvous run there) nor the
// leader (to keep the test about the job, not an election). It returns
// its index, and the agent to ask from then on: cli, or the leader where
// cli is the one lost.
func elasticVictim(t *testing.T, c *localcluster.Cluster, j api.Job, cli *localcluster.Agent) (int, *localcluster.Agent) {
	t.Helper()
	lead := leaderIndex(t, c, 0)
	for i, a := range c.Agents {
		if i != lead && a.Name != j.Nodes[0] && slices.Contains(j.Nodes, a.Name) {
			if a == cli {
				cli = c.Agents[lead]
			}
			return i, cli
		}
	}
	t.Fatalf("no node to kill among %v (leader %s)", j.Nodes, c.Agents[lead].Name)
	return -1, nil
}

// startBusy starts a job of one GPU in work that runs until busy.go is
// there (or loops of 0.2 s pass), and returns it once it runs.
func startBusy(t *testing.T, a *localcluster.Agent, work string, loops int) api.Job {
	t.Helper()
	busy := submit(t, a, "--name", "busy", "--chdir", work, "--gpus-per-node", "1", "--",
		"/bin/sh", "-c", fmt.Sprintf(`i=0; while [ ! -e busy.go ] && [ $i -lt %d ]; do sleep 0.2; i=$((i+1)); done`, loops))
	return waitJobWhere(t, a, busy, 30*time.Second, "the busy job running", func(j api.Job) bool { return j.State == "RUNNING" })
}

// startsIn is, for eventually, whether path has n lines: a command that
// writes one line each time a node starts it, started n times.
func startsIn(path string, n int) func() error {
	return func() error {
		data, _ := os.ReadFile(path)
		if got := strings.Count(string(data), "\n"); got != n {
			return fmt.Errorf("%d starts, want %d:\n%s", got, n, data)
		}
		return nil
	}
}

// startTrapping submits an elastic job (-N 1-3, a GPU a node, args
// added) in work whose every node writes "start NODE" to work/ran, and
// "term NODE" on SIGTERM, and runs until A.go is there; it returns the
// job once it started on 3 nodes.
func startTrapping(t *testing.T, a *localcluster.Agent, work string, args ...string) uint64 {
	t.Helper()
	ran := filepath.Join(work, "ran")
	id := submit(t, a, slices.Concat(args, []string{"--chdir", work, "--nodes", "1-3", "--gpus-per-node", "1", "--",
		"/bin/sh", "-c", `echo "start $SLURMD_NODENAME" >> ran
trap 'echo "term $SLURMD_NODENAME" >> ran; exit 0' TERM
i=0
while [ ! -e A.go ] && [ $i -lt 1500 ]; do sleep 0.2; i=$((i+1)); done`})...)
	eventually(t, 30*time.Second, "the elastic job started on 3 nodes", func() error {
		data, _ := os.ReadFile(ran)
		if n := strings.Count(string(data), "start "); n != 3 {
			return fmt.Errorf("%d starts:\n%s", n, data)
		}
		return nil
	})
	return id
}

// TestElasticShrinkForPreemption: a job of a QoS that may preempt, finding
// every node taken by an elastic job of a lower QoS that has more nodes
// than its minimum, makes room by shrinking it rather than stopping it:
// the node given up gets the job's SIGTERM, its tasks are stopped, the
// preemptor runs there, and the elastic job runs on; once the preemptor
// is done the job takes the node back, and completes.
func TestElasticShrinkForPreemption(t *testing.T) {
	a := startPreemptible(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1}, "60s")
	work := t.TempDir()
	ran := filepath.Join(work, "ran")
	elastic := startTrapping(t, a, work, "-q", "low")
	high := submit(t, a, "-q", "high", "--chdir", work, "--gpus-per-node", "1", "--",
		"/bin/sh", "-c", `echo "high $SLURMD_NODENAME" >> ran`)
	hj := waitJob(t, a, high, 60*time.Second)
	data, _ := os.ReadFile(ran)
	if hj.State != "COMPLETED" || len(hj.Nodes) != 1 {
		t.Fatalf("preemptor %s on %v; want COMPLETED on 1 node\n%s", hj.State, hj.Nodes, data)
	}
	if !strings.Contains(string(data), "term "+hj.Nodes[0]+"\n") || strings.Count(string(data), "term ") != 1 {
		t.Errorf("want SIGTERM on the given-up node %s only:\n%s", hj.Nodes[0], data)
	}
	// The preemptor done, its node is free again: the elastic job takes
	// it back (a new start there).
	var j api.Job
	eventually(t, 60*time.Second, "the elastic job grown back onto "+hj.Nodes[0], func() error {
		jsonOf(t, a, &j, "job", fmt.Sprint(elastic))
		data, _ := os.ReadFile(ran)
		if j.State != "RUNNING" || j.NumNodes != 3 || strings.Count(string(data), "start "+hj.Nodes[0]+"\n") != 2 {
			return fmt.Errorf("%s on %v:\n%s", j.State, j.Nodes, data)
		}
		return nil
	})
	if err := os.WriteFile(filepath.Join(work, "A.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, a, elastic, 60*time.Second)
	var hist []string
	for _, r := range j.Resizes {
		hist = append(hist, r.Cause+" "+r.Node)
	}
	if want := []string{"shrink " + hj.Nodes[0], "grow " + hj.Nodes[0]}; j.State != "COMPLETED" || j.RestartCount != 0 || !slices.Equal(hist, want) {
		t.Errorf("elastic job %s (restarts %d), resizes %q; want COMPLETED, never requeued, resizes %q", j.State, j.RestartCount, hist, want)
	}
}

// TestElasticScontrolShrink: `scontrol update JobId=N NumNodes=2` shrinks a
// running elastic job from 3 nodes to 2 (the node given up gets the job's
// SIGTERM; the job runs on and grows no more), growing it that way is
// refused with Slurm's words, and sacct -D shows the size history as
// Slurm's accounting records it (a RESIZING record per earlier size).
func TestElasticScontrolShrink(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1})
	work := t.TempDir()
	ran := filepath.Join(work, "ran")
	id := startTrapping(t, a, work)
	if r := sh.run("scontrol", "update", fmt.Sprintf("JobId=%d", id), "NumNodes=4"); r.code == 0 || !strings.Contains(r.stderr, "Requested operation not supported on this system") {
		t.Errorf("scontrol update NumNodes=4 (grow): exit %d, stderr %q; want Slurm's refusal", r.code, r.stderr)
	}
	sh.must("scontrol", "update", fmt.Sprintf("JobId=%d", id), "NumNodes=2")
	var j api.Job
	eventually(t, 60*time.Second, "the given-up node's tasks stopped", func() error {
		data, _ := os.ReadFile(ran)
		if strings.Count(string(data), "term ") != 1 {
			return fmt.Errorf("want one SIGTERM:\n%s", data)
		}
		return nil
	})
	jsonOf(t, a, &j, "job", fmt.Sprint(id))
	if j.State != "RUNNING" || j.NumNodes != 2 || len(j.Resizes) != 1 || j.Resizes[0].Cause != "shrink" {
		t.Fatalf("after NumNodes=2: %s on %v, resizes %+v; want RUNNING on 2 nodes, one shrink", j.State, j.Nodes, j.Resizes)
	}
	data, _ := os.ReadFile(ran)
	if gone := j.Resizes[0].Node; !strings.Contains(string(data), "term "+gone+"\n") || slices.Contains(j.Nodes, gone) {
		t.Errorf("node %s given up, job on %v; want SIGTERM there only:\n%s", gone, j.Nodes, data)
	}
	out := sh.must("sacct", "-j", fmt.Sprint(id), "-D", "-X", "-P", "-n", "--format", "JobID,State,NNodes")
	if want := fmt.Sprintf("%d|RESIZING|3\n%d|RUNNING|2", id, id); out != want {
		t.Errorf("sacct -D:\n%s\nwant:\n%s", out, want)
	}
	if err := os.WriteFile(filepath.Join(work, "A.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, a, id, 60*time.Second)
	if j.State != "COMPLETED" || j.NumNodes != 2 || len(j.Resizes) != 1 {
		t.Errorf("elastic job %s on %v, resizes %+v; want COMPLETED on 2, never grown back", j.State, j.Nodes, j.Resizes)
	}
}

// TestElasticRejoin: an elastic job takes back a node it lost in the same
// run. A -N 2-3 job runs on 3 nodes; one node's agent is killed (not the
// job's first node, not the leader), its ranks are fenced when its lease
// runs out and the job shrinks to 2; the agent is started again, the node
// comes back up and the job grows onto it again, as a new entry: the
// node starts the command a second time with 3 nodes and the place it
// had (DESIGN, node liveness: never while its old ranks could still
// run, which the FSM guarantees by taking it back only once that entry
// is released), and the job completes on 3 nodes.
func TestElasticRejoin(t *testing.T) {
	work := t.TempDir()
	ran := filepath.Join(work, "ran")
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 1, HostOf: ownLoopback})
	cli := c.Agents[0]
	cmd := []string{"/bin/sh", "-c", `echo "$SLURMD_NODENAME $SLURM_JOB_NUM_NODES $SLURM_JOB_NODELIST $SLURM_NODEID" >> ran
i=0
while [ ! -e A.go ] && [ $i -lt 1500 ]; do sleep 0.2; i=$((i+1)); done`}
	id := submit(t, cli, append([]string{"--name", "rejoin", "--chdir", work, "--nodes", "2-3", "--gpus-per-node", "1", "--"}, cmd...)...)
	j := waitJobWhere(t, cli, id, 60*time.Second, "the elastic job running on 3 nodes", func(j api.Job) bool {
		return j.State == "RUNNING" && j.NumNodes == 3 && j.Elastic
	})
	eventually(t, 60*time.Second, "the command started on 3 nodes", startsIn(ran, 3))

	victim, cli := elasticVictim(t, c, j, cli)
	lost := c.Agents[victim].Name
	before, _ := os.ReadFile(ran)
	var place string
	for l := range strings.Lines(string(before)) {
		if f := strings.Fields(l); len(f) == 4 && f[0] == lost {
			place = f[3]
		}
	}
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	waitJobWhere(t, cli, id, 3*time.Minute, "the elastic job shrunk to 2 nodes", func(j api.Job) bool {
		return j.State == "RUNNING" && j.NumNodes == 2 && !slices.Contains(j.Nodes, lost)
	})

	// The agent comes back: the node is up again and the job takes it.
	if err := c.Restart(victim); err != nil {
		t.Fatal(err)
	}
	waitJobWhere(t, cli, id, 3*time.Minute, "the elastic job grown back to 3 nodes", func(j api.Job) bool {
		return j.State == "RUNNING" && j.NumNodes == 3 && slices.Contains(j.Nodes, lost)
	})
	eventually(t, 60*time.Second, "the command started again on "+lost, startsIn(ran, 4))
	data, _ := os.ReadFile(ran)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if f := strings.Fields(lines[3]); len(f) != 4 || f[0] != lost || f[1] != "3" || f[3] != place {
		t.Errorf("the node taken back started with %q; want %s, 3 nodes, its place %s", lines[3], lost, place)
	}
	if err := os.WriteFile(filepath.Join(work, "A.go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	j = waitJob(t, cli, id, 3*time.Minute)
	if j.State != "COMPLETED" || j.NumNodes != 3 {
		t.Fatalf("elastic job %s on %v (exit %d); want COMPLETED on 3 nodes:\n%s", j.State, j.Nodes, j.ExitCode, data)
	}
	var hist []string
	for _, r := range j.Resizes {
		hist = append(hist, fmt.Sprintf("%s %s %d", r.Cause, r.Node, r.NumNodes))
	}
	if want := []string{"shrink " + lost + " 2", "grow " + lost + " 3"}; !slices.Equal(hist, want) {
		t.Errorf("resizes %q; want %q", hist, want)
	}
}
