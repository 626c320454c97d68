package test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestStepsHoldGPUs: the most common way to run many small tasks in one
// allocation, as under Slurm 20.11+: in a -N1 --gpus-per-node=4 -n4 job,
// eight `srun -n1 --gpus=1 --exact task &` steps run at most four at a
// time, each on a GPU of its own that no step running beside it has;
// the others wait with Slurm's lines and start as steps end; all eight
// complete. Then six --overlap steps run all at once, each seeing the
// job's four GPUs, as today; a step asking more GPUs than the job holds
// is refused at once, and srun -I while another step holds every GPU
// gives up at once, with Slurm's words.
//
// No timing: each of the first four tasks waits (at most 120 s) until
// four have started and the four other sruns have each been told the
// nodes are busy, so the waiting is certain; the tasks log their start
// and end (before they exit, so before their GPU is free again) to one
// file, which is replayed.
func TestStepsHoldGPUs(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 1, GPUsPerNode: 8})
	work := t.TempDir()
	out := filepath.Join(work, "out")
	task := `echo "start $0 $CUDA_VISIBLE_DEVICES $SLURM_STEP_GPUS $GPU_DEVICE_ORDINAL" >> log; touch started-$0
i=0
while [ $i -lt 600 ]; do
	n=$(ls started-* | wc -l); b=$(grep -c "step creation temporarily disabled" out)
	if [ "$n" -ge 8 ] || { [ "$n" -ge 4 ] && [ "$b" -ge 4 ]; }; then break; fi
	sleep 0.2; i=$((i+1))
done
[ $i -lt 600 ] || echo "timeout $0" >> log
echo "end $0 $CUDA_VISIBLE_DEVICES" >> log`
	overlap := `echo "overlap $0 $CUDA_VISIBLE_DEVICES" >> log; touch ov-$0
i=0
while [ $(ls ov-* | wc -l) -lt 6 ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done
[ $i -lt 600 ] || echo "timeout overlap $0" >> log`
	id := sh.sbatch("-N1", "--gpus-per-node=4", "-n4", "--chdir", work, "-o", out, "--wrap", `
for i in 0 1 2 3 4 5 6 7; do srun -n1 --gpus=1 --exact sh -c '`+task+`' $i & done; wait
for i in 0 1 2 3 4 5; do srun -n1 --gpus=1 --overlap sh -c '`+overlap+`' $i & done; wait
srun -n1 --gpus=5 true; echo "gpus=5 rc=$?"
srun -n1 --gpus=4 --exact sh -c 'touch held; i=0; while [ ! -e release ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done' &
i=0; while [ ! -e held ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done
srun -I -n1 --gpus=1 true; echo "immediate rc=$?"
touch release; wait
echo script done`)
	j := waitJob(t, a, id, 240*time.Second)
	outData, _ := os.ReadFile(out)
	logData, _ := os.ReadFile(filepath.Join(work, "log"))
	if j.State != "COMPLETED" || !strings.Contains(string(outData), "script done") {
		t.Fatalf("job %d = %s; want COMPLETED\nout:\n%s\nlog:\n%s", id, j.State, outData, logData)
	}
	jobGPUs := map[string]bool{}
	for _, tk := range j.Tasks {
		for _, g := range tk.GPUs {
			jobGPUs[fmt.Sprint(g)] = true
		}
	}
	if len(jobGPUs) != 4 {
		t.Fatalf("job %d holds GPUs %v; want 4", id, jobGPUs)
	}

	running := map[string]string{} // task -> its GPU
	most, ended, overlapped := 0, 0, 0
	sc := bufio.NewScanner(strings.NewReader(string(logData)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 5 && f[0] == "start":
			gpu := f[2]
			if !jobGPUs[gpu] || f[3] != gpu || f[4] != gpu {
				t.Errorf("task %s: CUDA_VISIBLE_DEVICES %q SLURM_STEP_GPUS %q GPU_DEVICE_ORDINAL %q; want one of the job's GPUs %v in each", f[1], f[2], f[3], f[4], jobGPUs)
			}
			for other, g := range running {
				if g == gpu {
					t.Errorf("task %s started on GPU %s, which task %s still runs on", f[1], gpu, other)
				}
			}
			running[f[1]] = gpu
			most = max(most, len(running))
		case len(f) == 3 && f[0] == "end":
			delete(running, f[1])
			ended++
		case len(f) >= 2 && f[0] == "overlap":
			overlapped++
			if got := strings.Split(f[2], ","); len(got) != 4 {
				t.Errorf("--overlap task %s: CUDA_VISIBLE_DEVICES %q; want the job's 4 GPUs", f[1], f[2])
			}
		default:
			t.Errorf("log line %q: a task waited 120 s for the others (steps did not wait, or did not run together)", sc.Text())
		}
	}
	if most > 4 || ended != 8 || overlapped != 6 {
		t.Errorf("at most %d steps ran at once (want 4 or fewer), %d of 8 ended, %d of 6 --overlap steps ran\nlog:\n%s", most, ended, overlapped, logData)
	}
	// The job's record says what each step held: steps 0-7 a GPU and a
	// CPU each, the --overlap steps 8-13 nothing.
	if len(j.Steps) != 15 {
		t.Fatalf("job %d has %d steps; want 15 (8 holding, 6 --overlap, the one -I waited for)", id, len(j.Steps))
	}
	for _, st := range j.Steps[:14] {
		nt := st.NodeTasks[0]
		want := 0
		if st.ID < 8 {
			want = 1
		}
		if len(nt.GPUs) != want || (want == 1) != (nt.CPUs != "" && !strings.ContainsAny(nt.CPUs, ",-")) {
			t.Errorf("step %d.%d held GPUs %v CPUs %q; want %d of each", id, st.ID, nt.GPUs, nt.CPUs, want)
		}
	}

	// Slurm's refusals: more GPUs than the job holds, at once; and
	// --immediate while another step holds every GPU.
	for _, want := range []string{
		fmt.Sprintf("srun: error: Unable to create step for job %d: Invalid generic resource (gres) specification\ngpus=5 rc=1\n", id),
		fmt.Sprintf("srun: error: Unable to create step for job %d: Requested nodes are busy\nimmediate rc=1\n", id),
	} {
		if !strings.Contains(string(outData), want) {
			t.Errorf("output lacks %q:\n%s", want, outData)
		}
	}
	if n := strings.Count(string(outData), fmt.Sprintf("srun: Job %d step creation temporarily disabled, retrying (Requested nodes are busy)\n", id)); n < 4 {
		t.Errorf("%d sruns said they wait; want 4 or more\nout:\n%s", n, outData)
	}
	if n := strings.Count(string(outData), fmt.Sprintf("srun: Step created for job %d\n", id)); n < 4 {
		t.Errorf("%d sruns said their step was created after a wait; want 4 or more\nout:\n%s", n, outData)
	}
}
