package chaos_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/chaos"
)

// TestDivergedReplicaDoesNotLead: a replica whose state machine stopped
// applying the log must not schedule from it (DESIGN invariant 5). The
// leader's replica diverges (a fault built in with -tags
// failpoint_diverge): it hands leadership over. Then the new leader is
// killed, so the diverged replica and one healthy one elect: whichever
// raft picks, the healthy one ends up leading, and stays so.
func TestDivergedReplicaDoesNotLead(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "shoal-failpoint-diverge")
	build := osexec.Command("go", "build", "-tags", "failpoint_diverge", "-o", bin, "../../cmd/shoal")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags failpoint_diverge: %v\n%s", err, out)
	}
	ctx := context.Background()
	log := testLog(t, slog.LevelWarn)
	h := startHarness(t, chaos.Options{Binary: bin, Nodes: 3, Dir: shortDir(t), Net: chaos.NetLoopback, Log: log})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	waitHealthy(t, wctx, h, "at start")
	bad := h.Leader(ctx)
	if bad < 0 {
		t.Fatal("no leader")
	}
	if err := os.WriteFile(filepath.Join(h.Agents[bad].DataDir, "failpoint-diverge"), nil, 0o600); err != nil {
		t.Fatal(err)
	}

	// leaderOtherThan waits until every running agent names one leader
	// that is not the diverged one, and returns its index.
	leaderOtherThan := func(what string, skip ...int) int {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		var last string
		for time.Now().Before(deadline) {
			l, why := agreedLeader(ctx, h, skip...)
			switch {
			case l < 0:
				last = why
			case l == bad:
				last = h.Agents[bad].Name + " (diverged) leads"
			case contains(skip, l):
				last = h.Agents[l].Name + " (killed) is still named leader"
			default:
				return l
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%s: no healthy leader after 20s (last: %s)", what, last)
		return -1
	}
	next := leaderOtherThan("after the leader's replica diverged")
	st, err := h.Agents[bad].Client().Status(ctx)
	if err != nil || st.Diverged == "" {
		t.Fatalf("status of %s after the failpoint: %+v, %v; want it diverged", h.Agents[bad].Name, st, err)
	}

	if err := h.Kill(next); err != nil {
		t.Fatal(err)
	}
	healthy := leaderOtherThan("after the new leader was killed", next)
	// It stays so: the diverged replica never takes leadership back. A
	// moment without a leader is no violation (on a loaded box the healthy
	// leader may miss its 150 ms lease, step down and win again, the
	// diverged replica's vote being all it needs).
	for range 10 {
		time.Sleep(300 * time.Millisecond)
		if l, why := agreedLeader(ctx, h, next); l == bad {
			t.Fatalf("the diverged replica %s leads (%s)", h.Agents[bad].Name, why)
		} else if l >= 0 && l != healthy {
			t.Fatalf("leadership moved from %s to %d (%s)", h.Agents[healthy].Name, l, why)
		}
	}
	if l := leaderOtherThan("at the end", next); l != healthy {
		t.Fatalf("at the end %s leads, want %s", h.Agents[l].Name, h.Agents[healthy].Name)
	}
}

// agreedLeader is the index of the leader every running agent but skip
// names, or -1 and why not.
func agreedLeader(ctx context.Context, h *chaos.Harness, skip ...int) (int, string) {
	leader := ""
	for i, a := range h.Agents {
		if contains(skip, i) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := a.Client().Status(sctx)
		cancel()
		switch {
		case err != nil:
			return -1, fmt.Sprintf("%s: %v", a.Name, err)
		case st.Leader == "":
			return -1, a.Name + " knows no leader"
		case leader != "" && st.Leader != leader:
			return -1, fmt.Sprintf("%s names %s, another %s", a.Name, st.Leader, leader)
		}
		leader = st.Leader
	}
	for i, a := range h.Agents {
		if a.Name == leader {
			return i, ""
		}
	}
	return -1, "leader " + leader + " is no agent of the harness"
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}
