package leader

import (
	"fmt"
	"slices"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/placement"
)

// Reads of one job for a caller: which job a reference names, live or
// archived, and whether the caller may see or act on it.

// ShowJob is the job ref names as c may see it (`shoal job`, `scontrol
// show job`): live or archived, an array element by N_TASK; refused when
// the policy keeps jobs private and the job is another user's (MaySee).
// For a job pending on resources, shortage says what it lacks
// (placement.Shortage). It is pure.
func ShowJob(v *fsm.View, ref cluster.JobRef, c Caller) (j *cluster.Job, shortage string, err error) {
	j, ok := v.Job(cluster.JobID(ref.ID))
	if !ok {
		j, ok = v.ArchivedJob(cluster.JobID(ref.ID))
	}
	if !ok {
		return nil, "", notFound(fmt.Errorf("job %s: no such job", ref.Raw))
	}
	if !MaySee(v.Policy(), j, c) {
		return nil, "", forbidden(fmt.Errorf("job %s: %w: it belongs to another user, and the policy keeps jobs private", ref.Raw, cluster.ErrForbidden))
	}
	if ref.Tasks != nil {
		js, err := Resolve(v, ref)
		if err != nil {
			return nil, "", err
		}
		j = js[0]
	}
	if j.State == cluster.JobPending && j.Reason == cluster.ReasonResources {
		var parts []cluster.Partition
		if p := v.Policy(); p != nil {
			parts = p.Partitions
		}
		shortage = placement.Shortage(placement.NewView(v.Nodes(), v.Jobs()).WithPartitions(parts).WithSwitchLinks(v.SwitchLinks()), j)
	}
	return j, shortage, nil
}

// JobToTouch is job id, live or archived, once c may verb it (MayTouch:
// its owner, root or an operator). It is pure.
func JobToTouch(v *fsm.View, id cluster.JobID, verb string, c Caller) (*cluster.Job, error) {
	j, ok := v.Job(id)
	if !ok {
		j, ok = v.ArchivedJob(id)
	}
	if !ok {
		return nil, notFound(fmt.Errorf("job %d: no such job", id))
	}
	if err := MayTouch(v.Policy(), verb, j, c); err != nil {
		return nil, err
	}
	return j, nil
}

// ListJobs are the jobs c may see (MaySee): the live ones, or with all
// every job the view holds, archived ones first (sacct reads finished
// jobs past MinJobAge from the archive). It is pure.
func ListJobs(v *fsm.View, all bool, c Caller) []*cluster.Job {
	jobs := v.Jobs()
	if all {
		jobs = append(slices.Clone(v.Archived()), jobs...)
	}
	out := []*cluster.Job{}
	for _, j := range jobs {
		if !MaySee(v.Policy(), j, c) {
			continue // the policy keeps jobs private
		}
		if all || !j.State.Terminal() {
			out = append(out, j)
		}
	}
	return out
}
