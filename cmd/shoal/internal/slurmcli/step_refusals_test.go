package slurmcli

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/slurm"
)

// stepRefusalGaps are the options srun still refuses for a step though
// Debian's Slurm runs such a step (step_refusals_golden.txt), each with
// why ignoring it would not be honest. The list only shrinks.
var stepRefusalGaps = map[string]string{}

// TestStepRefusalsGolden holds srun's step options to what Debian's
// Slurm runs inside an allocation, as make_step_refusals.sh recorded it:
// a step option Slurm accepts is accepted (taken, or a hint with a
// warning) unless stepRefusalGaps says why not.
func TestStepRefusalsGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "step_refusals_golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stillGap := map[string]bool{}
	cases := 0
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
		opts, rest, err := slurm.ParseArgs(slurm.Srun, append(strings.Fields(fields[0]), "true"))
		if err == nil {
			_, err = stepSpec(opts, rest)
		}
		if fields[1] != "accept" || err == nil {
			continue
		}
		gap := ""
		for name := range opts.Set {
			if stepRefusalGaps[name] != "" {
				gap = name
			}
		}
		if gap == "" {
			t.Errorf("srun %s in an allocation: Slurm runs it, Shoal refuses (%v): accept it or list it in stepRefusalGaps with why", fields[0], err)
			continue
		}
		stillGap[gap] = true
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases == 0 {
		t.Fatal("no cases in the golden file")
	}
	for name, why := range stepRefusalGaps {
		if !stillGap[name] {
			t.Errorf("stepRefusalGaps[%q] (%s): Shoal accepts it now, or Slurm refuses it too: take it out", name, why)
		}
	}
}
