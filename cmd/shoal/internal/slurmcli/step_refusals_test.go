package slurmcli

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/slurm"
)

// TestStepRefusalsGolden holds srun's step options to what Debian's
// Slurm runs inside an allocation, as make_step_refusals.sh recorded it:
// a step option Slurm accepts is accepted (taken, or a hint with a
// warning). What the options do is tested where they are taken
// (TestExcludeNodes, TestPlanNodeFail, test/TestStepOptions).
func TestStepRefusalsGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "step_refusals_golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases, accepted := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) < 2 {
			t.Fatalf("golden line %q: want ARGS<TAB>accept|refuse", line)
		}
		cases++
		if fields[1] != "accept" {
			continue
		}
		accepted++
		opts, rest, err := slurm.ParseArgs(slurm.Srun, append(strings.Fields(fields[0]), "true"))
		if err == nil {
			_, err = stepSpec(opts, rest)
		}
		if err != nil {
			t.Errorf("srun %s in an allocation: Slurm runs it, Shoal refuses (%v)", fields[0], err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases == 0 || accepted == 0 {
		t.Fatalf("the golden file has %d cases, %d accepted; want some of each", cases, accepted)
	}
}
