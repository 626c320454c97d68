package slurm

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refusalGaps are the options Shoal still refuses though Debian's Slurm
// accepts them (refusals_golden.txt), each with why ignoring it would not
// be honest: it would change what runs, where, when or with what. The
// list only shrinks: an option here that Shoal accepts, or that Slurm
// refuses too, fails the test until it is taken out.
var refusalGaps = map[string]string{}

// othersAccept are rows other work turns into implementations: the test
// takes either answer for them.
var othersAccept = map[string]bool{"pty": true, "jobid": true, "overlap": true}

// TestRefusalsGolden checks the option table's refusals against Debian's
// Slurm, as make_refusals.sh recorded it on the peer: where Slurm accepts
// an option, Shoal accepts it too (implemented, or a hint with a warning)
// unless refusalGaps says why it cannot; and every refusal of the table
// was asked of Slurm.
func TestRefusalsGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "refusals_golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	commands := map[string]Command{"sbatch": Sbatch, "srun": Srun, "salloc": Salloc}
	asked := map[string]bool{}
	stillGap := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 4 {
			t.Fatalf("golden line %q: want 4 tab-separated fields", line)
		}
		name, long, args, answer := fields[0], fields[1], strings.Fields(fields[2]), fields[3]
		cmd, ok := commands[name]
		if !ok {
			t.Fatalf("golden line %q: unknown command", line)
		}
		asked[name+" "+long] = true
		tail := []string{"true"}
		if cmd == Sbatch {
			tail = []string{"--wrap", "true"}
		}
		_, _, err := ParseArgs(cmd, append(args, tail...))
		if hr := (*HelpRequest)(nil); errors.As(err, &hr) {
			err = nil // answered, as Slurm answers it
		}
		slurmAccepts := answer == "accept"
		switch {
		case othersAccept[long]:
		case slurmAccepts && err != nil && refusalGaps[long] == "":
			t.Errorf("%s %s: Slurm accepts it, Shoal refuses (%v): accept it (implemented, or a hint with a warning) or list it in refusalGaps with why", name, strings.Join(args, " "), err)
		case slurmAccepts && err != nil:
			stillGap[long] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for long, why := range refusalGaps {
		if !stillGap[long] {
			t.Errorf("refusalGaps[%q] (%s): Shoal accepts it now, or Slurm refuses it too: take it out", long, why)
		}
	}
	for _, d := range optionTable {
		if d.reject == "" || othersAccept[d.long] {
			continue
		}
		for name, cmd := range commands {
			if d.cmds&cmd.set() != 0 && !asked[name+" "+d.long] {
				t.Errorf("%s --%s: refused by the table but not asked of Slurm: run slurm/testdata/make_refusals.sh against the peer", name, d.long)
			}
		}
	}
}
