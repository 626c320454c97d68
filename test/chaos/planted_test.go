package chaos_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/chaos"
)

// plantedBug is a bug built into shoal only under its build tag (see
// fsm/planted_*.go and node/planted_*.go), the faults and workload that
// expose it, and the invariants the checker must report for it.
type plantedBug struct {
	tag  string
	want []int // the checker must report one of these invariants
	// cfg is the run's shape; Binary, Nodes, Net and Log are filled in.
	cfg chaos.Config
}

var plantedBugs = []plantedBug{
	{
		// The FSM accepts a GPU already held and placement sees the newest
		// allocation's GPUs as free: two jobs' ranks on one GPU, no fault
		// needed (kill only keeps the run a chaos run).
		tag: "planted_doublebook", want: []int{1},
		cfg: chaos.Config{Duration: 20 * time.Second, Kinds: []chaos.Kind{chaos.Kill}},
	},
	{
		// The leader answers a submit before it is committed: the answer
		// names a job another request made, or one never committed when the
		// leader is killed or cut off first.
		tag: "planted_earlyack", want: []int{2},
		cfg: chaos.Config{Duration: 20 * time.Second, Kinds: []chaos.Kind{chaos.Kill, chaos.Isolate, chaos.RestartAll}},
	},
	{
		// A node cut off past its lease keeps its ranks: they must outlive
		// the leader's down bound (lease 3s + kill grace 2s + 2s), and the
		// partition must too, so the majority requeues the job elsewhere
		// while its old ranks run (invariant 3) or gives their GPUs to
		// another job once the node is back (invariant 1). Every job
		// requeues; ranks of 12-20s need a slower stream of submits for the
		// backlog to drain within the terminal bound.
		tag: "planted_nofence", want: []int{1, 3},
		cfg: chaos.Config{Duration: 25 * time.Second, Kinds: []chaos.Kind{chaos.Partition},
			RankTicks: [2]int{60, 100}, SubmitGap: [2]time.Duration{6 * time.Second, 10 * time.Second},
			MinFault: 10 * time.Second, Requeue: 1},
	},
}

// plantedSeeds are the seeds tried, in order, until one catches the bug.
// When this test was written each of them caught each bug on its own
// (seeds 1, 2 and 3 each: doublebook ~4.5s into the run, earlyack ~4s,
// nofence ~13s, in its first partition), and the same runs with a binary
// built without the tags found no violation at all.
var plantedSeeds = []uint64{1, 2, 3}

// TestPlantedBugsAreCaught tests the checker: for each planted bug it
// builds shoal with the bug's tag and runs seeds until the checker reports
// the invariant the bug breaks; none of plantedSeeds doing so fails. A
// checker that has never failed proves nothing.
func TestPlantedBugsAreCaught(t *testing.T) {
	requireNetNS(t)
	binDir := t.TempDir()
	log := testLog(t, slog.LevelWarn)
	for _, bug := range plantedBugs {
		t.Run(bug.tag, func(t *testing.T) {
			bin := filepath.Join(binDir, "shoal-"+bug.tag)
			build := osexec.Command("go", "build", "-tags", bug.tag, "-o", bin, "../../cmd/shoal")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build -tags %s: %v\n%s", bug.tag, err, out)
			}
			cfg := bug.cfg
			cfg.Binary, cfg.Nodes, cfg.Net, cfg.Log = bin, 5, chaos.NetNamespaces, log
			for _, seed := range plantedSeeds {
				caught, dir := runPlanted(t, bug, cfg, seed)
				t.Cleanup(func() {
					if dir == "" {
						return
					}
					if t.Failed() {
						t.Logf("seed %d: data dirs, agent logs and records kept in %s", seed, dir)
						return
					}
					os.RemoveAll(dir)
				})
				if caught {
					return
				}
			}
			t.Errorf("%s: no seed of %v made the checker report invariant %v", bug.tag, plantedSeeds, bug.want)
		})
	}
}

// runPlanted runs one seed against a planted bug and reports whether the
// checker caught it: a conclusive violation of an expected invariant. The
// run must otherwise be conclusive — made (faults injected, submits
// acknowledged, jobs completed) and every check made — or the seed fails
// the test. Violations of other invariants (the bug's knock-on effects)
// are logged. It returns the seed's directory, kept for inspection.
func runPlanted(t *testing.T, bug plantedBug, cfg chaos.Config, seed uint64) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Duration+4*time.Minute)
	defer cancel()
	start := time.Now()
	res, err := chaos.RunSeed(ctx, cfg, seed)
	took := time.Since(start).Round(time.Second)
	if err != nil {
		t.Fatalf("%s seed %d: the run could not be made: %v", bug.tag, seed, err)
	}
	var found []chaos.Violation
	var other []string
	for _, v := range res.Violations {
		switch {
		case v.Inconclusive:
			t.Errorf("%s seed %d: a check could not be made: %s", bug.tag, seed, v)
		case slices.Contains(bug.want, v.Invariant):
			found = append(found, v)
		default:
			other = append(other, v.String())
		}
	}
	made := res.Faults > 0 && res.Acknowledged > 0 && res.Completed > 0
	t.Logf("%s seed %d (%s): %d faults, %d acknowledged, %d completed, jobs %v: %d violations of invariant %v, %d others",
		bug.tag, seed, took, res.Faults, res.Acknowledged, res.Completed, res.Jobs, len(found), bug.want, len(other))
	if !made {
		t.Errorf("%s seed %d ran %d faults, %d acknowledged submits, %d completed jobs: want some of each (data in %s)",
			bug.tag, seed, res.Faults, res.Acknowledged, res.Completed, res.Dir)
		return true, res.Dir
	}
	if len(other) > 0 {
		t.Logf("%s seed %d: other violations: %s", bug.tag, seed, strings.Join(other, "; "))
	}
	if t.Failed() {
		return true, res.Dir // inconclusive: another seed would not tell more
	}
	if len(found) == 0 {
		t.Logf("%s seed %d: not caught", bug.tag, seed)
		return false, res.Dir
	}
	first := found[0]
	for _, v := range found {
		if !v.From.IsZero() && (first.From.IsZero() || v.From.Before(first.From)) {
			first = v
		}
	}
	at := "-"
	if !first.From.IsZero() {
		at = fmt.Sprint(first.From.Sub(start).Round(100 * time.Millisecond))
	}
	t.Logf("%s caught by seed %d, first violation %s into the run: %s", bug.tag, seed, at, first)
	return true, res.Dir
}
