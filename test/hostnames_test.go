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

// masterScript is the Slurm idiom end to end: MASTER_ADDR is the first
// node's name from scontrol, expanded by the batch shell into srun's
// command line (as in srun torchrun --master_addr $MASTER_ADDR: a step's
// own MASTER_ADDR is Shoal's contract, an address), and rank 0 listens
// there while rank 1, on the other node, dials it by that name. %d is the
// port.
const masterScript = `#!/bin/bash
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --output=names-%%j.out
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
export OTHER=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | tail -n1)
export PORT=%d
echo "batch host=$(hostname) master=$MASTER_ADDR other=$(getent hosts "$OTHER" | tr -s ' \t' ' ')"
srun bash -c '
master=$1
peer=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | grep -vx "$(hostname)")
echo "task $SLURM_PROCID host=$(hostname) node=$SLURMD_NODENAME peer=$(getent hosts "$peer" | tr -s " \t" " ")"
if [ "$SLURM_PROCID" = 0 ]; then
	MASTER=$master exec /usr/bin/python3 -c "
import os, socket
s = socket.create_server((os.environ[\"MASTER\"], int(os.environ[\"PORT\"])))
s.settimeout(60)
c, _ = s.accept()
print(\"rank 0 on\", socket.gethostname(), \"got:\", c.makefile().readline().strip(), flush=True)
"
fi
for i in $(seq 300); do
	if (echo "hello from $(hostname)" >"/dev/tcp/$master/$PORT") 2>/dev/null; then
		echo "rank 1 sent"
		exit 0
	fi
	sleep 0.2
done
echo "rank 1 could not reach $master:$PORT"
exit 1
' task "$MASTER_ADDR"
echo "srun exit $?"
`

// TestNodeNamesInJobs: on agents that share one machine, a root agent
// runs each task with its node's name as hostname and an /etc/hosts that
// names the cluster's nodes, so a batch script's MASTER_ADDR from
// `scontrol show hostnames` is a name every rank resolves and reaches.
func TestNodeNamesInJobs(t *testing.T) {
	requireRootForNamespaces(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Fatalf("the listener needs /usr/bin/python3 (.ci/run installs it): %v", err)
	}
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	if data, err := os.ReadFile(a.LogPath()); err != nil || !strings.Contains(string(data), "tasks run with the node's name as hostname") {
		t.Errorf("agent log does not say tasks get the node's name (err %v)", err)
	}
	ports, err := localcluster.FreePorts("127.0.0.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	script := filepath.Join(work, "names.sh")
	if err := os.WriteFile(script, fmt.Appendf(nil, masterScript, ports[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	id := batch(t, a, "--chdir", work, script)
	j := waitJob(t, a, id, 90*time.Second)
	data, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("names-%d.out", id)))
	if err != nil {
		t.Fatalf("the script's output file: %v (job %s)", err, j.State)
	}
	got := string(data)
	if j.State != "COMPLETED" || len(j.Nodes) != 2 {
		t.Fatalf("job %d = %s on %v; want COMPLETED on 2 nodes; output:\n%s", id, j.State, j.Nodes, got)
	}
	first, second := j.Nodes[0], j.Nodes[1]
	for _, want := range []string{
		fmt.Sprintf("batch host=%s master=%s other=127.0.0.1 %s\n", first, first, second),
		fmt.Sprintf("task 0 host=%s node=%s peer=127.0.0.1 %s\n", first, first, second),
		fmt.Sprintf("task 1 host=%s node=%s peer=127.0.0.1 %s\n", second, second, first),
		fmt.Sprintf("rank 0 on %s got: hello from %s\n", first, second),
		"rank 1 sent\n",
		"srun exit 0\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if h, _ := os.Hostname(); h == first || h == second {
		t.Errorf("the test's own hostname is %q: the agents renamed the machine", h)
	}
}

// requireRootForNamespaces skips a test that needs root for namespaces,
// except in CI (CI=true), where a missing facility must fail the run.
func requireRootForNamespaces(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("needs root for the tasks' UTS and mount namespaces, and CI runs as root: run the suite as root")
	}
	t.Skip("needs root for the tasks' UTS and mount namespaces")
}
