package chaos_test

import (
	"context"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/chaos"
)

// upgradeFromCommit is the release a rolling upgrade starts from: the last
// commit before protocol versions, whose agents announce none. Fixed, so
// the test always upgrades across the same change.
const upgradeFromCommit = "46cbaee3dcf48fb25318d3c4fccb94c650d5c1ac"

// oldBinary builds shoal at upgradeFromCommit (from `git archive`, so the
// repository's worktrees are left alone), or takes $SHOAL_UPGRADE_FROM_BIN.
// A clone without that commit (a shallow one) fails in CI and skips
// elsewhere, saying so.
func oldBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("SHOAL_UPGRADE_FROM_BIN"); bin != "" {
		return bin
	}
	root, err := osexec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): set SHOAL_UPGRADE_FROM_BIN to an older shoal", err)
	}
	repo := strings.TrimSpace(string(root))
	have := func() error {
		return osexec.Command("git", "-C", repo, "cat-file", "-e", upgradeFromCommit+"^{commit}").Run()
	}
	if have() != nil {
		// A shallow clone of a repository on this machine may still reach
		// the commit through its origin. Only a local path: the tests send
		// nothing off this machine.
		origin, _ := osexec.Command("git", "-C", repo, "remote", "get-url", "origin").Output()
		if o := strings.TrimSpace(string(origin)); strings.HasPrefix(o, "/") || strings.HasPrefix(o, "file://") {
			fetch := osexec.Command("timeout", "60", "git", "-C", repo, "fetch", "--quiet", "origin", upgradeFromCommit)
			if out, err := fetch.CombinedOutput(); err != nil {
				t.Logf("fetch %s from %s: %v %s", upgradeFromCommit, o, err, out)
			}
		}
	}
	if err := have(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("commit %s is not in this clone (shallow?): the upgrade test needs it", upgradeFromCommit)
		}
		t.Skipf("commit %s is not in this clone (shallow?); CI=true makes this a failure", upgradeFromCommit)
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := osexec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", repo, upgradeFromCommit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("extract %s: %v\n%s", upgradeFromCommit, err, out)
	}
	bin := filepath.Join(dir, "shoal-old")
	build := osexec.Command("go", "build", "-o", bin, "./cmd/shoal")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build shoal at %s: %v\n%s", upgradeFromCommit, err, out)
	}
	return bin
}

// TestRollingUpgrade: a 3-node cluster of the release before protocol
// versions is upgraded to this build one agent at a time (kill -9,
// restart on the same data dir) under the chaos workload; the checker
// finds no violation of DESIGN's invariants in the mixed cluster — in
// particular every replica, old or new, reaches the same state hash at
// the same index (invariant 5), so the new build replays the old one's
// log and snapshots exactly.
func TestRollingUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an older shoal and runs a cluster for 30s")
	}
	old := oldBinary(t)
	log := testLog(t, slog.LevelInfo)
	const dur = 30 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), dur+4*time.Minute)
	defer cancel()
	// A workload the 3 nodes keep up with: the default one (about 3.5
	// submits/s of gangs with no time limit, so no backfill) queues faster
	// than 3 nodes drain it, and the queue left when faults stop then takes
	// about the whole liveness bound (60 s) to run, even on an idle box.
	// What this test checks is the upgrade, not a drain under saturation
	// (TestChaosSchedule keeps the heavy workload).
	res, err := chaos.RunSeed(ctx, chaos.Config{
		Binary: shoalBin, UpgradeFrom: old, Nodes: 3, Duration: dur, Log: log,
		RankTicks: [2]int{2, 8}, SubmitGap: [2]time.Duration{time.Second, 2500 * time.Millisecond},
	}, 1)
	checkRun(t, res, err)
	t.Logf("%s mode: %d submitted, %d acknowledged, %d completed, jobs %v", res.Mode, res.Submitted, res.Acknowledged, res.Completed, res.Jobs)
	upgraded := 0
	for _, ev := range res.Events {
		if ev.Err == "" {
			upgraded++
		}
	}
	if upgraded != 3 || res.Acknowledged == 0 || res.Completed == 0 {
		t.Errorf("%d of 3 agents upgraded, %d acknowledged submits, %d completed jobs: want all, some and some", upgraded, res.Acknowledged, res.Completed)
	}
}
