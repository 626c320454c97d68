package worker

import (
	"slices"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
)

func TestTimeLimits(t *testing.T) {
	job := func(id cluster.JobID, inc uint64, state cluster.JobState, limit time.Duration) *cluster.Job {
		j := &cluster.Job{ID: id, Incarnation: inc, State: state}
		j.Spec.Request.TimeLimit = limit
		return j
	}
	k := func(id cluster.JobID, inc uint64, step int) task.Key {
		return task.Key{Job: id, Incarnation: inc, Step: step}
	}
	jobs := []*cluster.Job{
		job(1, 1, cluster.JobRunning, time.Hour),
		job(2, 1, cluster.JobRunning, 2*time.Hour),
		job(3, 1, cluster.JobCancelled, time.Hour),
		job(4, 2, cluster.JobRunning, time.Hour),
	}
	lookup := func(id cluster.JobID) (*cluster.Job, bool) {
		i := slices.IndexFunc(jobs, func(j *cluster.Job) bool { return j.ID == id })
		if i < 0 {
			return nil, false
		}
		return jobs[i], true
	}
	tests := []struct {
		name    string
		running []task.Key
		given   map[task.Key]time.Duration
		want    []LimitChange
	}{
		{"given already", []task.Key{k(1, 1, task.NoStep)}, map[task.Key]time.Duration{k(1, 1, task.NoStep): time.Hour}, nil},
		{"changed: the new limit, to the job's task and its step",
			[]task.Key{k(2, 1, task.NoStep), k(2, 1, 0)},
			map[task.Key]time.Duration{k(2, 1, task.NoStep): time.Hour, k(2, 1, 0): time.Hour},
			[]LimitChange{{k(2, 1, task.NoStep), 2 * time.Hour}, {k(2, 1, 0), 2 * time.Hour}}},
		{"never given: given once", []task.Key{k(1, 1, task.NoStep)}, nil, []LimitChange{{k(1, 1, task.NoStep), time.Hour}}},
		{"an ended job is Reconcile's", []task.Key{k(3, 1, task.NoStep)}, nil, nil},
		{"an old incarnation is Reconcile's", []task.Key{k(4, 1, task.NoStep)}, nil, nil},
		{"an unknown job", []task.Key{k(9, 1, task.NoStep)}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TimeLimits(lookup, tt.running, tt.given); !slices.Equal(got, tt.want) {
				t.Errorf("TimeLimits = %v; want %v", got, tt.want)
			}
		})
	}
}
