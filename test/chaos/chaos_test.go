package chaos_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/chaos"
)

// ciSeeds are the seeds CI runs; $SHOAL_CHAOS_SEEDS (comma-separated)
// replaces them, to replay a seed that failed.
var ciSeeds = []uint64{1, 2, 3}

// ciDuration is how long each seed injects faults; $SHOAL_CHAOS_DURATION
// replaces it.
const ciDuration = 30 * time.Second

func seeds(t *testing.T) []uint64 {
	s := os.Getenv("SHOAL_CHAOS_SEEDS")
	if s == "" {
		return ciSeeds
	}
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(part), 10, 64)
		if err != nil {
			t.Fatalf("SHOAL_CHAOS_SEEDS %q: want comma-separated seeds", s)
		}
		out = append(out, v)
	}
	return out
}

// TestChaosSchedule runs 5 agents in network namespaces through each CI
// seed's fault schedule (every kind of fault) under a workload, and fails
// on any violation of DESIGN's five invariants, or any check that could
// not be made.
func TestChaosSchedule(t *testing.T) {
	requireNetNS(t)
	dur := ciDuration
	if s := os.Getenv("SHOAL_CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SHOAL_CHAOS_DURATION %q: %v", s, err)
		}
		dur = d
	}
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, seed := range seeds(t) {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), dur+4*time.Minute)
			defer cancel()
			res, err := chaos.RunSeed(ctx, chaos.Config{
				Binary: shoalBin, Nodes: 5, Duration: dur, Kinds: chaos.AllKinds,
				Net: chaos.NetNamespaces, Log: log,
			}, seed)
			out, _ := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatalf("seed %d: %v\n%s", seed, err, out)
			}
			t.Logf("seed %d: %d faults, %d submitted, %d acknowledged, %d completed, jobs %v, max recovery %.1fs",
				seed, res.Faults, res.Submitted, res.Acknowledged, res.Completed, res.Jobs, res.MaxRecoverS)
			for _, ev := range res.Events {
				t.Logf("  %s  %s  recovered in %.1fs %s", ev.Start.Format("15:04:05.000"), ev.Fault, ev.RecoverS, ev.Err)
			}
			for _, v := range res.Violations {
				t.Errorf("%s", v)
			}
			if res.Faults == 0 || res.Acknowledged == 0 || res.Completed == 0 {
				t.Errorf("seed %d ran %d faults, %d acknowledged submits, %d completed jobs: want some of each", seed, res.Faults, res.Acknowledged, res.Completed)
			}
			if t.Failed() {
				t.Logf("data dirs, agent logs and records kept in %s", res.Dir)
			}
		})
	}
}

// testWriter sends the harness's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
