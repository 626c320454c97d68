package fsm

import (
	"errors"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

// TestJobLimits: MaxSubmitJobs bounds one user's live jobs (array elements
// each count), MaxJobCount the cluster's; finished jobs free their place;
// a restored replica counts the same.
func TestJobLimits(t *testing.T) {
	h := newHarness()
	h.must(t, CmdSetPolicy, SetPolicy{Policy: cluster.Policy{MaxSubmitJobs: 2, MaxJobCount: 3}, Time: t0})
	as := func(uid int) cluster.Spec {
		s := spec(1, 1)
		s.UID, s.User = uid, "u"
		return s
	}
	sub := func(s cluster.Spec) error { return h.apply(t, CmdSubmitJob, SubmitJob{Spec: s}).Err }
	if err := sub(as(1000)); err != nil {
		t.Fatal(err)
	}
	if err := sub(as(1000)); err != nil {
		t.Fatal(err)
	}
	err := sub(as(1000))
	if !errors.Is(err, ErrLimit) || !containsAll(err.Error(), "MaxSubmitJobs", "limit of 2") {
		t.Fatalf("third job of uid 1000 = %v; want MaxSubmitJobs", err)
	}
	arr := as(1001)
	arr.Array = &cluster.ArraySpec{Indices: []int{0, 1}}
	if err := sub(arr); !errors.Is(err, ErrLimit) || !containsAll(err.Error(), "MaxJobCount") {
		t.Fatalf("a 2-element array with 2 live jobs and MaxJobCount 3 = %v; want MaxJobCount", err)
	}
	if err := sub(as(1001)); err != nil {
		t.Fatalf("uid 1001's first job: %v", err)
	}
	h.must(t, CmdCancelJob, CancelJob{Job: 1})
	if err := sub(as(1000)); err != nil {
		t.Fatalf("after a cancel, uid 1000's job: %v", err)
	}
	r := restored(t, h.s)
	if r.live.total != 3 || r.live.byUID[1000] != 2 || r.live.byUID[1001] != 1 {
		t.Errorf("restored live counts %+v; want 3 in all, 2 of uid 1000, 1 of uid 1001", r.live)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
