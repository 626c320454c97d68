package request

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/slurm"
)

func TestRequestFromOptionsNodeSet(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "hosts")
	if err := os.WriteFile(file, []byte("gpu[1-2]\ngpu7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args              []string
		nodes             int
		nodelist, exclude []string
		constraint        string
		exclusive         bool
		wantErr           string
	}{
		{args: []string{"-w", "n[1-2]", "-x", "n3", "-C", "ib&(a100|h100)", "--exclusive"}, nodes: 2,
			nodelist: []string{"n1", "n2"}, exclude: []string{"n3"}, constraint: "ib&(a100|h100)", exclusive: true},
		{args: []string{"-N", "3", "--nodelist=n1"}, nodes: 3, nodelist: []string{"n1"}},
		{args: []string{"-w", file}, nodes: 3, nodelist: []string{"gpu1", "gpu2", "gpu7"}},
		{args: []string{"-C", "a*2"}, wantErr: "feature counts"},
		{args: []string{"-C", "[a|b]"}, wantErr: "brackets"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, req, ok := sbatchRequest(t, tt.args, tt.wantErr)
			if !ok {
				return
			}
			if req.Nodes != tt.nodes || !slices.Equal(req.NodeList, tt.nodelist) || !slices.Equal(req.Exclude, tt.exclude) ||
				req.Constraint != tt.constraint || req.Exclusive != tt.exclusive {
				t.Errorf("FromOptions(%v) = nodes %d, -w %v, -x %v, -C %q, exclusive %v; want %d, %v, %v, %q, %v",
					tt.args, req.Nodes, req.NodeList, req.Exclude, req.Constraint, req.Exclusive,
					tt.nodes, tt.nodelist, tt.exclude, tt.constraint, tt.exclusive)
			}
		})
	}
}

// TestRequestFromOptionsQueue: the queue-side options reach the submit:
// --array, --dependency, --hold, -p and --switches.
func TestRequestFromOptionsQueue(t *testing.T) {
	opts, _, err := slurm.ParseArgs(slurm.Sbatch, []string{"--array=1-3%2", "-d", "afterok:7:8", "-H",
		"-p", "debug", "--switches=1@2:00", "--wrap", "true"})
	if err != nil {
		t.Fatal(err)
	}
	req, _, err := FromOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case req.Array == nil || !slices.Equal(req.Array.Indices, []int{1, 2, 3}) || req.Array.Throttle != 2:
		t.Errorf("array %+v; want 1-3%%2", req.Array)
	case req.Dependency.String() != "afterok:7:8":
		t.Errorf("dependency %q; want afterok:7:8", req.Dependency.String())
	case !req.Hold || req.Partition != "debug":
		t.Errorf("hold %v, partition %q; want held, debug", req.Hold, req.Partition)
	case req.Switches != 1 || req.SwitchesWaitS != 120:
		t.Errorf("switches %d@%ds; want 1@120s", req.Switches, req.SwitchesWaitS)
	}
}

// TestLimitNodeList holds -w longer than -N's maximum to what Debian's
// Slurm 22.05 did on the peer: `srun -N2 -w n[1-3] hostname` ran on n1
// and n2 after "srun: error: Required nodelist includes more nodes than
// permitted by max-node count (3 > 2). Eliminating nodes from the
// nodelist."; `sbatch -N2 -w n[1-3]` and `salloc -N2 -w n[1-3]` said
// "invalid number of nodes (-N 3-2)" and refused.
func TestLimitNodeList(t *testing.T) {
	for _, tc := range []struct {
		cmd      slurm.Command
		args     []string
		wantList []string
		wantLine string
		wantErr  string
	}{
		{slurm.Srun, []string{"-N2", "-w", "n[1-3]"}, []string{"n1", "n2"},
			"Required nodelist includes more nodes than permitted by max-node count (3 > 2). Eliminating nodes from the nodelist.", ""},
		{slurm.Sbatch, []string{"-N2", "-w", "n[1-3]"}, nil, "", "invalid number of nodes (-N 3-2)"},
		{slurm.Salloc, []string{"-N2", "-w", "n[1-3]"}, nil, "", "invalid number of nodes (-N 3-2)"},
		// Within -N's range, or without -N: the list raises the count.
		{slurm.Sbatch, []string{"-N2-4", "-w", "n[1-3]"}, []string{"n1", "n2", "n3"}, "", ""},
		{slurm.Srun, []string{"-w", "n[1-3]"}, []string{"n1", "n2", "n3"}, "", ""},
		{slurm.Srun, []string{"-N3", "-w", "n[1-3]"}, []string{"n1", "n2", "n3"}, "", ""},
	} {
		t.Run(string(tc.cmd)+" "+strings.Join(tc.args, " "), func(t *testing.T) {
			opts, _, err := slurm.ParseArgs(tc.cmd, append(tc.args, "true"))
			if err != nil {
				t.Fatal(err)
			}
			got, line, err := LimitNodeList(tc.cmd, opts)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("LimitNodeList = %v; want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || line != tc.wantLine || !slices.Equal(got.NodeList, tc.wantList) {
				t.Errorf("LimitNodeList = %v, %q, %v; want %v, %q", got.NodeList, line, err, tc.wantList, tc.wantLine)
			}
		})
	}
}
