package leader

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
)

// TestShowJobAndJobToTouch: a job is found live or archived, an array
// element by N_TASK; with private jobs another user's is hidden from a
// user but not from root or an operator; acting on a job needs its owner
// or an operator (DESIGN "The flow of a job": reads never show what a
// caller may not see).
func TestShowJobAndJobToTouch(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	h := &harness{s: fsm.New(), now: t0}
	spec := func(user string, uid int) cluster.Spec {
		return cluster.Spec{Name: "x", Command: []string{"true"}, User: user, UID: uid, GID: uid,
			Request: cluster.Request{Nodes: 1}.WithDefaults()}
	}
	h.must(t, fsm.CmdSetPolicy, fsm.SetPolicy{Policy: cluster.Policy{PrivateJobs: true, Operators: []string{"op"}}, Time: t0})
	h.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: spec("ada", 1000), Time: t0}) // 1: ended and archived
	h.must(t, fsm.CmdCancelJob, fsm.CancelJob{Job: 1, Time: t0})
	h.must(t, fsm.CmdArchiveJobs, fsm.ArchiveJobs{Before: t0.Add(time.Second), Time: t0.Add(time.Second)})
	h.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: spec("bob", 1001), Time: t0}) // 2: bob's, pending
	arr := spec("ada", 1000)
	arr.Array = &cluster.ArraySpec{Indices: []int{0, 1}}
	h.must(t, fsm.CmdSubmitJob, fsm.SubmitJob{Spec: arr, Time: t0}) // 3: an array of ada's
	v := h.s.View()
	if _, ok := v.ArchivedJob(1); !ok {
		t.Fatal("job 1 was not archived")
	}
	c := func(user string, uid int) Caller {
		return Caller{Identity: cluster.Identity{User: user, UID: uid, Proven: true}}
	}
	ada, bob, op, root := c("ada", 1000), c("bob", 1001), c("op", 1002), c("root", 0)
	ref := func(s string) cluster.JobRef {
		r, err := cluster.ParseJobRef(s)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tt := range []struct {
		ref  string
		c    Caller
		id   cluster.JobID // 0: refused with kind
		kind error
	}{
		{"1", ada, 1, nil},
		{"2", bob, 2, nil},
		{"2", ada, 0, cluster.ErrForbidden},
		{"2", root, 2, nil},
		{"2", op, 2, nil},
		{"9", ada, 0, cluster.ErrNotFound},
		{"3_1", ada, 0, nil}, // an element: checked by its own id below
		{"3_7", ada, 0, cluster.ErrNotFound},
	} {
		j, _, err := ShowJob(v, ref(tt.ref), tt.c)
		switch {
		case tt.kind != nil:
			if !errors.Is(err, tt.kind) {
				t.Errorf("ShowJob(%s) as %s = %v; want %v", tt.ref, tt.c.User, err, tt.kind)
			}
		case err != nil:
			t.Errorf("ShowJob(%s) as %s: %v", tt.ref, tt.c.User, err)
		case tt.id != 0 && j.ID != tt.id:
			t.Errorf("ShowJob(%s) = job %d; want %d", tt.ref, j.ID, tt.id)
		case tt.id == 0 && (j.Array == nil || j.Array.TaskID != 1):
			t.Errorf("ShowJob(%s) = job %d %+v; want array element 1", tt.ref, j.ID, j.Array)
		}
	}
	for _, tt := range []struct {
		id   cluster.JobID
		c    Caller
		kind error
	}{
		{1, ada, nil}, // archived
		{2, bob, nil},
		{2, ada, cluster.ErrForbidden},
		{2, op, nil},
		{9, root, cluster.ErrNotFound},
	} {
		j, err := JobToTouch(v, tt.id, "read the output of", tt.c)
		if tt.kind != nil {
			if !errors.Is(err, tt.kind) {
				t.Errorf("JobToTouch(%d) as %s = %v; want %v", tt.id, tt.c.User, err, tt.kind)
			}
			continue
		}
		if err != nil || j.ID != tt.id {
			t.Errorf("JobToTouch(%d) as %s = %v, %v; want the job", tt.id, tt.c.User, j, err)
		}
	}
	ids := func(js []*cluster.Job) []cluster.JobID {
		var out []cluster.JobID
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	for _, tt := range []struct {
		c    Caller
		all  bool
		want []cluster.JobID
	}{
		{ada, false, []cluster.JobID{3, 4}},
		{ada, true, []cluster.JobID{1, 3, 4}},
		{bob, false, []cluster.JobID{2}},
		{root, true, []cluster.JobID{1, 2, 3, 4}},
		{op, false, []cluster.JobID{2, 3, 4}},
	} {
		if got := ids(ListJobs(v, tt.all, tt.c)); !slices.Equal(got, tt.want) {
			t.Errorf("ListJobs(all %v) as %s = %v; want %v", tt.all, tt.c.User, got, tt.want)
		}
	}
}
