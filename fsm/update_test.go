package fsm

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// TestPlanJobUpdate: who may change what, in which state, with Slurm's
// refusals.
func TestPlanJobUpdate(t *testing.T) {
	hour := time.Hour
	dur := func(d time.Duration) *time.Duration { return &d }
	num := func(n int) *int { return &n }
	str := func(s string) *string { return &s }
	pol := &cluster.Policy{Partitions: []cluster.Partition{
		{Name: "gpu", Default: true},
		{Name: "short", MaxTime: 2 * time.Hour},
	}}
	job := func(state cluster.JobState, limit time.Duration) *cluster.Job {
		sp := spec(1, 1)
		sp.Request.TimeLimit, sp.Request.Partition = limit, "gpu"
		return &cluster.Job{ID: 7, Spec: sp, State: state}
	}
	noDeps := func(cluster.Spec) error { return nil }
	const owner, other = 1000, 1001
	tests := []struct {
		name    string
		job     *cluster.Job
		uid     int
		admin   bool
		set     JobUpdate
		wantErr error
		check   func(cluster.Spec) bool
	}{
		{"owner lowers a running job's limit", job(cluster.JobRunning, 2*hour), owner, false,
			JobUpdate{TimeLimit: dur(hour)}, nil, func(s cluster.Spec) bool { return s.Request.TimeLimit == hour }},
		{"owner may not raise it", job(cluster.JobRunning, hour), owner, false,
			JobUpdate{TimeLimit: dur(2 * hour)}, ErrUpdateAccessDenied, nil},
		{"owner may not make it unlimited", job(cluster.JobPending, hour), owner, false,
			JobUpdate{TimeLimit: dur(0)}, ErrUpdateAccessDenied, nil},
		{"owner of an unlimited job sets one", job(cluster.JobPending, 0), owner, false,
			JobUpdate{TimeLimit: dur(hour)}, nil, func(s cluster.Spec) bool { return s.Request.TimeLimit == hour }},
		{"root raises a running job's limit", job(cluster.JobRunning, hour), 0, true,
			JobUpdate{TimeLimit: dur(3 * hour)}, nil, func(s cluster.Spec) bool { return s.Request.TimeLimit == 3*hour }},
		{"owner takes 30 minutes off", job(cluster.JobRunning, 2*hour), owner, false,
			JobUpdate{TimeLimitAdd: dur(-30 * time.Minute)}, nil, func(s cluster.Spec) bool { return s.Request.TimeLimit == 90*time.Minute }},
		{"owner may not add", job(cluster.JobRunning, 2*hour), owner, false,
			JobUpdate{TimeLimitAdd: dur(time.Minute)}, ErrUpdateAccessDenied, nil},
		{"root adds 30 minutes", job(cluster.JobRunning, 2*hour), 0, true,
			JobUpdate{TimeLimitAdd: dur(30 * time.Minute)}, nil, func(s cluster.Spec) bool { return s.Request.TimeLimit == 150*time.Minute }},
		{"below nothing", job(cluster.JobRunning, hour), 0, true,
			JobUpdate{TimeLimitAdd: dur(-hour)}, ErrUpdateTimeLimit, nil},
		{"relative on an unlimited job", job(cluster.JobRunning, 0), 0, true,
			JobUpdate{TimeLimitAdd: dur(hour)}, ErrUpdateTimeLimit, nil},
		{"negative limit", job(cluster.JobPending, hour), 0, true,
			JobUpdate{TimeLimit: dur(-time.Second)}, ErrUpdateTimeLimit, nil},
		{"another user's job", job(cluster.JobPending, hour), other, false,
			JobUpdate{Name: str("x")}, ErrUpdateAccessDenied, nil},
		{"an ended job", job(cluster.JobCompleted, hour), 0, true,
			JobUpdate{Name: str("x")}, ErrUpdateFinished, nil},
		{"name and comment while running", job(cluster.JobRunning, hour), owner, false,
			JobUpdate{Name: str("renamed"), Comment: str("note")}, nil,
			func(s cluster.Spec) bool { return s.Name == "renamed" && s.Comment == "note" }},
		{"comment too long", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Comment: str(strings.Repeat("x", cluster.MaxCommentBytes+1))}, ErrUpdateInvalid, nil},
		{"node count of a pending job", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Nodes: num(3)}, nil, func(s cluster.Spec) bool { return s.Request.Nodes == 3 }},
		{"node count of a running job", job(cluster.JobRunning, hour), 0, true,
			JobUpdate{Nodes: num(3)}, ErrUpdateNotSupported, nil},
		{"node count 0", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Nodes: num(0)}, ErrUpdateNodeCount, nil},
		{"partition of a pending job", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Partition: str("short")}, nil, func(s cluster.Spec) bool { return s.Request.Partition == "short" }},
		{"no such partition", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Partition: str("nope")}, ErrUpdatePartition, nil},
		{"a cluster without partitions", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Partition: str("gpu")}, ErrUpdatePartition, nil},
		{"partition of a running job", job(cluster.JobRunning, hour), 0, true,
			JobUpdate{Partition: str("short")}, ErrUpdateNotPending, nil},
		{"a user's limit above the partition's MaxTime", job(cluster.JobPending, 0), owner, false,
			JobUpdate{Partition: str("short"), TimeLimit: dur(3 * hour)}, ErrUpdateAccessDenied, nil},
		{"qos of a pending job", job(cluster.JobPending, hour), owner, false,
			JobUpdate{QoS: str("high")}, nil, func(s cluster.Spec) bool { return s.QoS == "high" }},
		{"qos of a running job", job(cluster.JobRunning, hour), owner, false,
			JobUpdate{QoS: str("high")}, ErrUpdateNotPending, nil},
		{"dependency set", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Dependency: &cluster.Dependency{Conditions: []cluster.DepCondition{{Type: cluster.DepAfterOK, Jobs: []cluster.DepJob{{ID: 3, Task: -1}}}}}},
			nil, func(s cluster.Spec) bool { return s.Dependency.String() == "afterok:3" }},
		{"dependency on itself", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Dependency: &cluster.Dependency{Conditions: []cluster.DepCondition{{Type: cluster.DepAfterOK, Jobs: []cluster.DepJob{{ID: 7, Task: -1}}}}}},
			ErrUpdateDependency, nil},
		{"dependency removed", job(cluster.JobPending, hour), owner, false,
			JobUpdate{NoDependency: true}, nil, func(s cluster.Spec) bool { return s.Dependency == nil }},
		{"dependency of a running job", job(cluster.JobRunning, hour), owner, false,
			JobUpdate{NoDependency: true}, ErrUpdateNotPending, nil},
		{"owner raises nice", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Nice: num(10)}, nil, func(s cluster.Spec) bool { return s.Nice == 10 }},
		{"owner may not lower nice", job(cluster.JobPending, hour), owner, false,
			JobUpdate{Nice: num(-10)}, ErrUpdateAccessDenied, nil},
		{"root lowers nice", job(cluster.JobPending, hour), 0, true,
			JobUpdate{Nice: num(-10)}, nil, func(s cluster.Spec) bool { return s.Nice == -10 }},
		{"all or none: a refused field keeps the others", job(cluster.JobRunning, hour), owner, false,
			JobUpdate{Name: str("x"), QoS: str("high")}, ErrUpdateNotPending, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.job.Spec.Name
			p := pol
			if strings.Contains(tt.name, "without partitions") {
				p = &cluster.Policy{}
			}
			got, err := PlanJobUpdate(tt.job, UpdateJob{Job: tt.job.ID, UID: tt.uid, Admin: tt.admin, Fields: tt.set}, p, noDeps)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), "for job 7") {
					t.Fatalf("PlanJobUpdate = %v; want %q for job 7", err, tt.wantErr)
				}
				if tt.job.Spec.Name != before {
					t.Fatalf("the job changed in place")
				}
				return
			}
			if err != nil || !tt.check(got) {
				t.Fatalf("PlanJobUpdate = %+v, %v; want the change", got.Request, err)
			}
		})
	}
}

// TestUpdateJobApplies runs UpdateJob through Apply: the job changes and
// its ModifyIndex moves; an unknown job is refused.
func TestUpdateJobApplies(t *testing.T) {
	h := newHarness()
	id := h.must(t, CmdSubmitJob, SubmitJob{Spec: spec(1, 1), Time: t0}).JobID
	name := "renamed"
	h.must(t, CmdUpdateJob, UpdateJob{Job: id, UID: 1000, Fields: JobUpdate{Name: &name}})
	if j, ok := h.s.View().Job(id); !ok || j.Spec.Name != name {
		t.Fatalf("job after update = %+v; want name %q", j, name)
	}
	if r := h.apply(t, CmdUpdateJob, UpdateJob{Job: 99, UID: 0, Admin: true, Fields: JobUpdate{Name: &name}}); !errors.Is(r.Err, ErrUnknownJob) {
		t.Fatalf("update of an unknown job: %v; want ErrUnknownJob", r.Err)
	}
}
