package placement

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/shoal-sched/shoal/cluster"
	"pgregory.net/rapid"
)

// genRecord draws one job record as a pass may see it, live or archived:
// any state, a user and account from a few (some empty), a start and an
// end (each possibly missing, the end possibly before the start or after
// now), a time limit or none, GPUs on one or two nodes or no allocation.
func genRecord(t *rapid.T, id cluster.JobID) *cluster.Job {
	states := []cluster.JobState{cluster.JobPending, cluster.JobRunning, cluster.JobCompleted, cluster.JobFailed,
		cluster.JobCancelled, cluster.JobTimeout}
	j := &cluster.Job{ID: id, State: rapid.SampledFrom(states).Draw(t, "state")}
	j.Spec.User = rapid.SampledFrom([]string{"", "ann", "bob", "cy", "dee"}).Draw(t, "user")
	j.Spec.Account = rapid.SampledFrom([]string{"", "bio", "phys", "chem"}).Draw(t, "account")
	j.Spec.Request = cluster.Request{Nodes: rapid.IntRange(1, 3).Draw(t, "nodes"), GPUsPerNode: rapid.IntRange(0, 4).Draw(t, "gpn"),
		TimeLimit: time.Duration(rapid.IntRange(0, 8).Draw(t, "limit")) * 30 * time.Minute}
	j.SubmitTime = now.Add(-time.Duration(rapid.IntRange(0, 5000).Draw(t, "submit")) * time.Minute)
	if rapid.IntRange(0, 5).Draw(t, "started") > 0 {
		j.StartTime = now.Add(time.Duration(rapid.IntRange(-3000, 60).Draw(t, "start")) * time.Minute)
		if rapid.IntRange(0, 5).Draw(t, "ended") > 0 {
			j.EndTime = j.StartTime.Add(time.Duration(rapid.IntRange(-30, 600).Draw(t, "ran")) * time.Minute)
		}
	}
	if rapid.IntRange(0, 4).Draw(t, "alloc") > 0 {
		j.Alloc = &cluster.Allocation{}
		for n := range rapid.IntRange(0, 2).Draw(t, "allocNodes") {
			j.Alloc.Nodes = append(j.Alloc.Nodes, cluster.NodeAlloc{Node: fmt.Sprint("n", n), GPUs: seq(0, rapid.IntRange(-1, 3).Draw(t, "gpus"))})
		}
	}
	return j
}

// genPolicy draws a queue policy: a half-life (none, short, long), some
// listed accounts and users with shares, weights.
func genPolicy(t *rapid.T) cluster.Policy {
	p := cluster.DefaultPolicy()
	p.HalfLife = rapid.SampledFrom([]time.Duration{0, time.Hour, 24 * time.Hour, 7 * 24 * time.Hour}).Draw(t, "halfLife")
	p.Weights.FairShare = int64(rapid.IntRange(0, 100000).Draw(t, "wFairShare"))
	p.Weights.Age = int64(rapid.IntRange(0, 1000).Draw(t, "wAge"))
	p.Weights.JobSize = int64(rapid.IntRange(0, 1000).Draw(t, "wSize"))
	for _, name := range []string{"bio", "phys"} {
		if rapid.Bool().Draw(t, "list "+name) {
			a := cluster.AccountShare{Name: name, Shares: int64(rapid.IntRange(0, 5).Draw(t, "shares"))}
			for _, u := range []string{"ann", "bob"} {
				if rapid.Bool().Draw(t, "list user") {
					a.Users = append(a.Users, cluster.UserShare{Name: u, Shares: int64(rapid.IntRange(0, 5).Draw(t, "userShares"))})
				}
			}
			p.Accounts = append(p.Accounts, a)
		}
	}
	return p
}

// TestHistoryIdentity: over random histories, with the archive growing
// (records archived in any ID order, the oldest dropped at the limit),
// restored (every record new), replaced or out of order between passes,
// and a new policy and now at each pass, the pass's cached inputs
// (PrioritiesWith, PredictorWith, and the QSSF order they give) are
// exactly what the records give uncached (Priorities, PredictorFrom), the
// History being carried from pass to pass as the leader does. DESIGN:
// decisions are pure functions of the replicated state.
func TestHistoryIdentity(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var live, archive []*cluster.Job
		nextID := cluster.JobID(1)
		var h *History
		for pass := range rapid.IntRange(1, 8).Draw(t, "passes") {
			for range rapid.IntRange(0, 12).Draw(t, "submitted") {
				live = append(live, genRecord(t, nextID))
				nextID++
			}
			switch op := rapid.IntRange(0, 6).Draw(t, "op"); op {
			case 0, 1, 2: // archive some live jobs, as fsm.ArchiveJobs
				var keep []*cluster.Job
				next := slices.Clone(archive)
				for _, j := range live {
					if j.State.Terminal() && rapid.Bool().Draw(t, "archive") {
						next = append(next, j)
					} else {
						keep = append(keep, j)
					}
				}
				slices.SortFunc(next, func(a, b *cluster.Job) int { return int(a.ID) - int(b.ID) })
				if limit := rapid.IntRange(1, 40).Draw(t, "archiveLimit"); len(next) > limit {
					next = next[len(next)-limit:]
				}
				archive, live = next, keep
			case 3: // restored from a snapshot: the same records, new pointers
				next := make([]*cluster.Job, len(archive))
				for i, j := range archive {
					next[i] = j.Clone()
				}
				archive = next
			case 4: // one record replaced by another with the same ID
				if len(archive) > 0 {
					next := slices.Clone(archive)
					i := rapid.IntRange(0, len(next)-1).Draw(t, "replace")
					next[i] = genRecord(t, next[i].ID)
					archive = next
				}
			case 5: // out of ID order (not what the FSM keeps; digested afresh)
				if len(archive) > 1 {
					next := slices.Clone(archive)
					i := rapid.IntRange(1, len(next)-1).Draw(t, "swap")
					next[0], next[i] = next[i], next[0]
					archive = next
				}
			}
			pol := genPolicy(t)
			at := now.Add(time.Duration(rapid.IntRange(-600, 6000).Draw(t, "now")) * time.Minute)
			gpus := rapid.IntRange(0, 64).Draw(t, "clusterGPUs")

			h = NewHistory(h, archive)
			records := append(slices.Clone(archive), live...)
			checkIdentity(t, fmt.Sprintf("pass %d", pass), pol, h, live, records, gpus, at)
			if fresh := NewHistory(nil, archive); pass%2 == 1 {
				checkIdentity(t, fmt.Sprintf("pass %d, fresh", pass), pol, fresh, live, records, gpus, at)
			}
		}
	})
}

func checkIdentity(t *rapid.T, what string, pol cluster.Policy, h *History, live, records []*cluster.Job, gpus int, at time.Time) {
	want := Priorities(pol, records, gpus, at)
	got := PrioritiesWith(pol, h, live, gpus, at)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: PrioritiesWith != Priorities over every record (-want +got):\n%s", what, gocmp.Diff(want, got))
	}
	wantPred, gotPred := PredictorFrom(records), PredictorWith(h, live)
	if !reflect.DeepEqual(gotPred, wantPred) {
		t.Fatalf("%s: PredictorWith != PredictorFrom over every record (-want +got):\n%s", what,
			gocmp.Diff(wantPred, gotPred, gocmp.AllowUnexported(Predictor{}, recentRuns{})))
	}
	var pending []*cluster.Job
	for _, j := range records {
		if j.State == cluster.JobPending {
			pending = append(pending, j)
		}
	}
	order := func(ps []Priority, pred *Predictor) []cluster.JobID {
		opts := Options{Policy: PolicyQSSF, Order: PriorityOrder(ps), FairShare: map[cluster.JobID]float64{},
			Estimates: map[cluster.JobID]time.Duration{}}
		for _, pr := range ps {
			opts.FairShare[pr.Job] = pr.Factors.FairShare
		}
		for _, j := range pending {
			if est := pred.Predict(j.Spec.User, j.Spec.Request); est > 0 {
				opts.Estimates[j.ID] = est
			}
		}
		return QSSFOrder(pending, at, opts)
	}
	if got, want := order(got, gotPred), order(want, wantPred); !slices.Equal(got, want) {
		t.Fatalf("%s: QSSF order from the History = %v; want %v", what, got, want)
	}
}

// TestNewHistoryUnchanged: the same archive gives back the same History,
// and a History is never changed by the next one built from it.
func TestNewHistoryUnchanged(t *testing.T) {
	a := []*cluster.Job{finished(1, "ann", time.Hour), finished(2, "bob", 2*time.Hour)}
	h := NewHistory(nil, a)
	if NewHistory(h, slices.Clone(a)) != h {
		t.Errorf("NewHistory(h, same records) built a new History; want h")
	}
	before := PredictorWith(h, nil)
	h2 := NewHistory(h, append(slices.Clone(a[1:]), finished(3, "ann", 3*time.Hour)))
	if !reflect.DeepEqual(PredictorWith(h, nil), before) {
		t.Errorf("NewHistory changed the History it was given")
	}
	if got, want := PredictorWith(h2, nil).Predict("ann", cluster.Request{Nodes: 1, GPUsPerNode: 1, TimeLimit: 6 * time.Hour}), 3*time.Hour; got != want {
		t.Errorf("after archiving: Predict(ann, 6h) = %s; want %s", got, want)
	}
}

// finished is a completed job of user that ran for ran out of a 6 h limit,
// on one GPU, ending at its ID in hours.
func finished(id cluster.JobID, user string, ran time.Duration) *cluster.Job {
	end := now.Add(time.Duration(id) * time.Hour)
	return &cluster.Job{ID: id, State: cluster.JobCompleted,
		Spec:      cluster.Spec{User: user, Account: "a", Request: cluster.Request{Nodes: 1, GPUsPerNode: 1, TimeLimit: 6 * time.Hour}},
		StartTime: end.Add(-ran), EndTime: end,
		Alloc: &cluster.Allocation{Nodes: []cluster.NodeAlloc{{Node: "n0", GPUs: []int{0}, Released: true}}}}
}
