package placement

import (
	"math"
	"testing"
)

// TestFairShareTree: sshare's tree is the fair-share the priorities use:
// every listed association (bob, who ran nothing) and every one jobs name
// (carol, unlisted in bio), accounts before their users, and each user's
// FairShare the factor its pending jobs get.
func TestFairShareTree(t *testing.T) {
	p, jobs := physicsAndBio()
	got := FairShareTree(p, jobs, now)
	want := []ShareAssoc{
		{Account: "bio", RawShares: 40, NormShares: 0.4, RawUsage: 300, EffectvUsage: 0.75, FairShare: math.Exp2(-0.75 / 0.4)},
		{Account: "bio", User: "carol", RawShares: 1, NormShares: 0.4, RawUsage: 300, EffectvUsage: 0.75, FairShare: math.Exp2(-0.75 / 0.4)},
		{Account: "physics", RawShares: 60, NormShares: 0.6, RawUsage: 100, EffectvUsage: 0.25, FairShare: math.Exp2(-0.25 / 0.6)},
		{Account: "physics", User: "alice", RawShares: 2, NormShares: 0.4, RawUsage: 100, EffectvUsage: 0.25, FairShare: math.Exp2(-0.25 / 0.4)},
		{Account: "physics", User: "bob", RawShares: 1, NormShares: 0.2, RawUsage: 0, EffectvUsage: 0, FairShare: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("tree = %+v; want %+v", got, want)
	}
	for i, w := range want {
		g := got[i]
		if g.Account != w.Account || g.User != w.User || g.RawShares != w.RawShares || !near(g.NormShares, w.NormShares) ||
			!near(g.RawUsage, w.RawUsage) || !near(g.EffectvUsage, w.EffectvUsage) || !near(g.FairShare, w.FairShare) {
			t.Errorf("row %d = %+v; want %+v", i, g, w)
		}
	}
	ps := Priorities(p, jobs, 8, now)
	for _, a := range got {
		for _, pr := range ps {
			if pr.User == a.User && pr.Account == a.Account && pr.Factors.FairShare != a.FairShare {
				t.Errorf("job %d of %s/%s: factor %v; sshare's %v", pr.Job, a.Account, a.User, pr.Factors.FairShare, a.FairShare)
			}
		}
	}
	// No usage yet: every factor 1.
	for _, a := range FairShareTree(p, nil, now) {
		if a.FairShare != 1 || a.RawUsage != 0 {
			t.Errorf("without jobs: %+v; want FairShare 1, no usage", a)
		}
	}
}
