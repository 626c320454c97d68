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

// chaosDuration is ciDuration, or $SHOAL_CHAOS_DURATION.
func chaosDuration(t *testing.T) time.Duration {
	t.Helper()
	s := os.Getenv("SHOAL_CHAOS_DURATION")
	if s == "" {
		return ciDuration
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("SHOAL_CHAOS_DURATION %q: %v", s, err)
	}
	return d
}

// testLog is a logger, of level and above, that writes to the test log.
func testLog(t *testing.T, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

// checkRun fails t when the run could not be made (with what it has),
// logs each fault and its recovery, and reports each violation; if t has
// failed by its end, it says where the run's files are kept.
func checkRun(t *testing.T, res chaos.Result, err error) {
	t.Helper()
	if err != nil {
		out, _ := json.MarshalIndent(res, "", "  ")
		t.Fatalf("%v\n%s", err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("data dirs, agent logs and records kept in %s", res.Dir)
		}
	})
	for _, ev := range res.Events {
		t.Logf("  %s  %s  recovered in %.1fs %s", ev.Start.Format("15:04:05.000"), ev.Fault, ev.RecoverS, ev.Err)
	}
	for _, v := range res.Violations {
		t.Errorf("%s", v)
	}
}

// TestChaosSchedule runs 5 agents in network namespaces through each CI
// seed's fault schedule (every kind of fault) under a workload, and fails
// on any violation of DESIGN's five invariants, or any check that could
// not be made.
func TestChaosSchedule(t *testing.T) {
	requireNetNS(t)
	dur := chaosDuration(t)
	log := testLog(t, slog.LevelInfo)
	for _, seed := range seeds(t) {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), dur+4*time.Minute)
			defer cancel()
			res, err := chaos.RunSeed(ctx, chaos.Config{
				Binary: shoalBin, Nodes: 5, Duration: dur, Kinds: chaos.AllKinds,
				Net: chaos.NetNamespaces, Log: log,
			}, seed)
			checkRun(t, res, err)
			t.Logf("seed %d: %d faults, %d submitted, %d acknowledged, %d completed, jobs %v, max recovery %.1fs",
				seed, res.Faults, res.Submitted, res.Acknowledged, res.Completed, res.Jobs, res.MaxRecoverS)
			if res.Faults == 0 || res.Acknowledged == 0 || res.Completed == 0 {
				t.Errorf("seed %d ran %d faults, %d acknowledged submits, %d completed jobs: want some of each", seed, res.Faults, res.Acknowledged, res.Completed)
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

// TestChaosStretchedLease runs 5 agents whose leases stretch (a bound of
// one renewal a second at the leader: each renews every 5 s and is
// granted 15 s, five times the 3 s --lease-ttl) through kills, pauses,
// isolations and partitions held past the stretched lease, under a
// workload whose ranks outlive them, and fails on any violation of
// DESIGN's invariants: a node cut off must fence its ranks before the
// leader, this one or a new one, gives their GPUs away (invariant 1) or
// requeues their job (invariant 3). $SHOAL_CHAOS_SEEDS replaces the seed
// (1) and $SHOAL_CHAOS_DURATION the 30 s of faults. It is a check that
// stretched leases break nothing under faults, not a sharp detector: a
// build whose leader judged nodes by --lease-ttl alone passed seeds 1
// and 2 here (the window in which that bug shows is a few seconds, and
// a new leader's failover wait hides it early in a run);
// test.TestStretchedLeaseFencedBySupervisor fails on it.
func TestChaosStretchedLease(t *testing.T) {
	requireNetNS(t)
	dur := chaosDuration(t)
	seedList := []uint64{1}
	if os.Getenv("SHOAL_CHAOS_SEEDS") != "" {
		seedList = seeds(t)
	}
	log := testLog(t, slog.LevelInfo)
	for _, seed := range seedList {
		t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), dur+5*time.Minute)
			defer cancel()
			res, err := chaos.RunSeed(ctx, chaos.Config{
				Binary: shoalBin, Nodes: 5, Duration: dur, Net: chaos.NetNamespaces, Log: log,
				Kinds:     []chaos.Kind{chaos.Kill, chaos.Pause, chaos.Isolate, chaos.Partition},
				AgentArgs: []string{"--lease-renewals-per-second", "1"},
				// Faults held past the 15 s lease + 2 s kill grace + 2 s,
				// ranks of 12-20 s, every job requeued, as the planted
				// no-fence run that this must not look like.
				MinFault: 20 * time.Second, RankTicks: [2]int{60, 100},
				SubmitGap: [2]time.Duration{6 * time.Second, 10 * time.Second}, Requeue: 1,
				TerminalBound: 2 * time.Minute,
			}, seed)
			checkRun(t, res, err)
			t.Logf("seed %d: %d faults, %d submitted, %d acknowledged, %d completed, jobs %v, max recovery %.1fs",
				seed, res.Faults, res.Submitted, res.Acknowledged, res.Completed, res.Jobs, res.MaxRecoverS)
			if res.Faults == 0 || res.Acknowledged == 0 {
				t.Errorf("seed %d ran %d faults, %d acknowledged submits: want some of each", seed, res.Faults, res.Acknowledged)
			}
		})
	}
}
