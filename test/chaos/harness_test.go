package chaos_test

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/chaos"
)

// requireNetNS fails (in CI) or skips (elsewhere) when this host cannot
// give the harness network namespaces, saying what is missing.
func requireNetNS(t *testing.T) {
	t.Helper()
	if missing := chaos.NetNSMissing(); missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chaos tests need network namespaces in CI; missing: %s", missing)
		}
		t.Skipf("no network namespaces (missing: %s); CI=true makes this a failure", missing)
	}
}

// shortDir is a data dir short enough for Unix socket paths.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "shc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept %s for inspection", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// startHarness starts a chaos harness that is stopped when the test ends.
func startHarness(t *testing.T, opts chaos.Options) *chaos.Harness {
	t.Helper()
	h, err := chaos.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	return h
}

// TestHarnessNetNS: agents in namespaces form a cluster; isolating the
// leader's link elects another; Stop removes every namespace and link.
func TestHarnessNetNS(t *testing.T) {
	requireNetNS(t)
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := startHarness(t, chaos.Options{Binary: shoalBin, Nodes: 3, Dir: shortDir(t), Net: chaos.NetNamespaces, Log: log})
	l := h.Leader(ctx)
	if l < 0 {
		t.Fatal("no leader")
	}
	if err := h.SetLink(ctx, l, false); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := h.Agents[(l+1)%3].Client().Status(ctx)
		if err == nil && st.Leader != "" && st.Leader != h.Agents[l].Name {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader 20s after isolating %s: %+v %v", h.Agents[l].Name, st, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err := h.Heal(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	waitHealthy(t, wctx, h, "after heal")
}

// waitHealthy waits for h to be healthy; when it is not, it logs the last
// lines each agent logged above debug (CI keeps no data dir) and fails.
func waitHealthy(t *testing.T, ctx context.Context, h *chaos.Harness, when string) {
	t.Helper()
	_, err := h.WaitHealthy(ctx)
	if err == nil {
		return
	}
	t.Errorf("not healthy %s: %v", when, err)
	const tail = 25
	for _, a := range h.Agents {
		b, err := os.ReadFile(a.LogPath())
		if err != nil {
			t.Logf("%s: %v", a.Name, err)
			continue
		}
		var lines []string
		for l := range strings.Lines(string(b)) {
			if !strings.Contains(l, "level=DEBUG") {
				lines = append(lines, strings.TrimSpace(l))
			}
		}
		t.Logf("%s: last %d lines above debug:\n%s", a.Name, min(tail, len(lines)), strings.Join(lines[max(0, len(lines)-tail):], "\n"))
	}
	t.FailNow()
}
