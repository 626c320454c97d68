package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// torchrunScript is a typical multi-node torchrun sbatch script, as users
// run it under Slurm: MASTER_ADDR from scontrol, one torchrun per node
// through srun, torchrun's node rank from the task's SLURM_NODEID.
const torchrunScript = `#!/bin/bash
#SBATCH --job-name=ddp
#SBATCH -N 2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-node=2
#SBATCH --time=10:00
#SBATCH --output=%x-%j.out
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
export MASTER_PORT=29400
srun bash -c 'torchrun --nnodes $SLURM_NNODES --node_rank $SLURM_NODEID --nproc_per_node 2 \
	--master_addr '"$MASTER_ADDR"' --master_port $MASTER_PORT train.py --lr 3e-4'
echo "srun exit $?"
`

// standInTorchrun checks its arguments against the environment Shoal gave
// the task, as torchrun itself would rely on it, and reports.
const standInTorchrun = `#!/bin/bash
set -u
while [ $# -gt 0 ]; do
	case "$1" in
	--nnodes) nnodes=$2; shift 2;;
	--node_rank) rank=$2; shift 2;;
	--nproc_per_node) nproc=$2; shift 2;;
	--master_addr) addr=$2; shift 2;;
	--master_port) port=$2; shift 2;;
	*) rest="${rest:-} $1"; shift;;
	esac
done
first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)
gpus=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
bad=""
[ "$nnodes" = "$SLURM_NNODES" ] || bad="$bad nnodes=$nnodes/SLURM_NNODES=$SLURM_NNODES"
[ "$rank" = "$SLURM_NODEID" ] || bad="$bad node_rank=$rank/SLURM_NODEID=$SLURM_NODEID"
[ "$addr" = "$first" ] || bad="$bad master_addr=$addr/first=$first"
[ "$port" = 29400 ] || bad="$bad master_port=$port"
[ "$gpus" = "$nproc" ] || bad="$bad gpus=$CUDA_VISIBLE_DEVICES/nproc=$nproc"
[ "$rest" = " train.py --lr 3e-4" ] || bad="$bad args=$rest"
[ "$SLURM_PROCID" = "$rank" ] || bad="$bad procid=$SLURM_PROCID"
if [ -n "$bad" ]; then echo "torchrun BAD node_rank=$rank:$bad"; exit 3; fi
echo "torchrun ok node_rank=$rank of $nnodes on $SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES"
`

// TestTorchrunScript: a typical torchrun sbatch script runs unchanged; a
// stand-in torchrun on every node checks its arguments (node count, node
// rank, master address from scontrol, port, the script's own arguments)
// against the task's environment and GPUs. The real torchrun is run by
// TestPyTorchDDP; this stand-in stays for what a CPU-only torch cannot
// show: that --nproc_per_node matches the GPUs in CUDA_VISIBLE_DEVICES.
func TestTorchrunScript(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 3, GPUsPerNode: 2})
	a := c.Agents[0]
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "torchrun"), []byte(standInTorchrun), 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(work, "ddp.sh")
	if err := os.WriteFile(script, []byte(torchrunScript), 0o644); err != nil {
		t.Fatal(err)
	}
	out := mustShoal(t, a, "batch", "--chdir", work, "--export=ALL,PATH="+bin+":/usr/bin:/bin", script)
	var id uint64
	if _, err := fmt.Sscanf(out, "Submitted batch job %d", &id); err != nil {
		t.Fatalf("shoal batch printed %q", out)
	}
	j := waitJob(t, a, id, 60*time.Second)
	data, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("ddp-%d.out", id)))
	if j.State != "COMPLETED" || !strings.Contains(string(data), "srun exit 0") {
		t.Fatalf("job %s (exit %d):\n%s", j.State, j.ExitCode, data)
	}
	var ok []string
	for line := range strings.Lines(string(data)) {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "torchrun" && f[1] == "ok" {
			ok = append(ok, f[2]+" "+f[6])
		}
	}
	slices.Sort(ok)
	want := []string{"node_rank=0 " + j.Nodes[0], "node_rank=1 " + j.Nodes[1]}
	if !slices.Equal(ok, want) {
		t.Errorf("torchrun reports %q; want %q\n%s", ok, want, data)
	}
}

// TestUnevenStep: srun -n 3 on 2 nodes runs 2 tasks on the first and 1
// on the second, as Slurm's block distribution, with the step's layout in
// SLURM_STEP_TASKS_PER_NODE.
func TestUnevenStep(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 2})
	a := c.Agents[0]
	work := t.TempDir()
	out := mustShoal(t, a, "batch", "--chdir", work, "-N", "2", "-o", "uneven-%j.out", "--wrap",
		`srun -n 3 sh -c 'echo "t $SLURM_PROCID $SLURM_NODEID $SLURM_NTASKS $SLURM_STEP_TASKS_PER_NODE"'`)
	var id uint64
	if _, err := fmt.Sscanf(out, "Submitted batch job %d", &id); err != nil {
		t.Fatalf("shoal batch printed %q", out)
	}
	j := waitJob(t, a, id, 60*time.Second)
	data, _ := os.ReadFile(filepath.Join(work, fmt.Sprintf("uneven-%d.out", id)))
	if j.State != "COMPLETED" {
		t.Fatalf("job %s:\n%s", j.State, data)
	}
	var got []string
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(line, "t ") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	slices.Sort(got)
	want := []string{"t 0 0 3 2,1", "t 1 0 3 2,1", "t 2 1 3 2,1"}
	if !slices.Equal(got, want) {
		t.Errorf("tasks said %q; want %q", got, want)
	}
}
