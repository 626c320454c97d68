//lint:file-ignore ST1005 the update refusals are Slurm's words, capitals included: scontrol prints them and scripts match them

package fsm

import (
	"errors"
	"fmt"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// UpdateJob is `scontrol update JobId=N Field=Value ...`: it changes the
// fields Fields sets, all or none. Admin says the caller is root; UID is
// the caller's.
//
// RequestID (protocol 6) deduplicates client retries as SubmitJob's does:
// a second UpdateJob with a RequestID already seen is answered as the
// first was (Duplicate) and does not add a relative time limit again.
type UpdateJob struct {
	Job       cluster.JobID `msgpack:"job"`
	UID       int           `msgpack:"uid"`
	Admin     bool          `msgpack:"admin"`
	Fields    JobUpdate     `msgpack:"fields"`
	Time      time.Time     `msgpack:"time"`
	RequestID string        `msgpack:"request_id,omitempty"`
}

// JobUpdate holds the fields an update sets; nil ones stay as they are.
type JobUpdate struct {
	TimeLimit *time.Duration `msgpack:"time_limit,omitempty" json:"time_limit,omitempty"`
	// TimeLimitAdd changes the time limit by this much (TimeLimit=+M or
	// -M); TimeLimit, when also set, applies first.
	TimeLimitAdd *time.Duration `msgpack:"time_limit_add,omitempty" json:"time_limit_add,omitempty"`
	// Nodes is NumNodes: the node count (-N), one number.
	Nodes     *int    `msgpack:"nodes,omitempty" json:"nodes,omitempty"`
	Partition *string `msgpack:"partition,omitempty" json:"partition,omitempty"`
	QoS       *string `msgpack:"qos,omitempty" json:"qos,omitempty"`
	// Dependency replaces the job's dependency (the agent parses Slurm's
	// syntax); NoDependency removes it.
	Dependency   *cluster.Dependency `msgpack:"dependency,omitempty" json:"dependency,omitempty"`
	NoDependency bool                `msgpack:"no_dependency,omitempty" json:"no_dependency,omitempty"`
	Name         *string             `msgpack:"name,omitempty" json:"name,omitempty"`
	Comment      *string             `msgpack:"comment,omitempty" json:"comment,omitempty"`
	Nice         *int                `msgpack:"nice,omitempty" json:"nice,omitempty"`
}

// The refusals of an update, in Slurm's words (scontrol prints them, and
// scripts match them).
var (
	ErrUpdateAccessDenied = errors.New("Access/permission denied")
	ErrUpdateNotPending   = errors.New("Job is no longer pending execution")
	ErrUpdateNotSupported = errors.New("Requested operation not supported on this system")
	ErrUpdateFinished     = errors.New("Job/step already completing or completed")
	ErrUpdatePartition    = errors.New("Invalid partition name specified")
	ErrUpdateNodeCount    = errors.New("Node count specification invalid")
	ErrUpdateDependency   = errors.New("Job dependency problem")
	ErrUpdateTimeLimit    = errors.New("Invalid time limit specified")
	ErrUpdateInvalid      = errors.New("Invalid argument")
)

// PlanJobUpdate decides an update of job j under policy pol: the job's
// new spec, or the refusal, as Slurm 22.05's slurmctld decides it. A user
// may update only their own jobs; only root may raise a time limit (a
// user may lower theirs, running or not) or lower a nice value. The node
// count, partition, QoS and dependency change only while the job pends
// (but a running elastic job's node count may shrink it: ShrinkTo); the
// name, comment, nice and time limit while it has not ended.
// depends checks a new dependency's jobs (State.checkDependency).
func PlanJobUpdate(j *cluster.Job, c UpdateJob, pol *cluster.Policy, depends func(cluster.Spec) error) (cluster.Spec, error) {
	f := c.Fields
	spec := j.Spec
	spec.Env = append([]string(nil), j.Spec.Env...)
	refuse := func(err error, detail string) (cluster.Spec, error) {
		if detail != "" {
			return j.Spec, fmt.Errorf("%w for job %d: %s", err, j.ID, detail)
		}
		return j.Spec, fmt.Errorf("%w for job %d", err, j.ID)
	}
	switch {
	case !c.Admin && c.UID != j.Spec.UID:
		return refuse(ErrUpdateAccessDenied, "not your job")
	case j.State.Terminal():
		return refuse(ErrUpdateFinished, "")
	}
	pending := j.State == cluster.JobPending
	if f.Nodes != nil && j.State == cluster.JobRunning && j.Alloc != nil && j.Alloc.Elastic {
		// A running elastic job shrinks to the count (ShrinkTo) and grows
		// no more past it: its MAX becomes the count.
		if _, err := ShrinkTo(j, *f.Nodes); err != nil {
			return j.Spec, err
		}
		spec.Request.NodesMax = *f.Nodes
		if *f.Nodes == spec.Request.Nodes {
			spec.Request.NodesMax = 0
		}
	} else if f.Nodes != nil {
		switch {
		case !pending:
			return refuse(ErrUpdateNotSupported, "NumNodes changes only while the job pends, or for a running elastic job (-N MIN-MAX), which it shrinks")
		case *f.Nodes < 1 || *f.Nodes > cluster.MaxNodesPerJob:
			return refuse(ErrUpdateNodeCount, fmt.Sprintf("NumNodes=%d: want 1 to %d", *f.Nodes, cluster.MaxNodesPerJob))
		}
		spec.Request.Nodes, spec.Request.NodesMax = *f.Nodes, 0
	}
	if f.Partition != nil {
		if !pending {
			return refuse(ErrUpdateNotPending, "")
		}
		if pol == nil || len(pol.Partitions) == 0 {
			return refuse(ErrUpdatePartition, "the cluster has no partitions")
		}
		spec.Request.Partition = *f.Partition
		resolved, _, err := pol.ResolvePartition(spec)
		if err != nil || (*f.Partition != "" && resolved.Request.Partition != *f.Partition) {
			return refuse(ErrUpdatePartition, fmt.Sprint(err))
		}
		// The new partition's limits and defaults apply, as at submit,
		// but the time limit stays the job's unless it had none.
		limit := spec.Request.TimeLimit
		spec = resolved
		if limit != 0 {
			spec.Request.TimeLimit = limit
		}
	}
	if f.QoS != nil {
		if !pending {
			return refuse(ErrUpdateNotPending, "")
		}
		spec.QoS = *f.QoS
	}
	if f.Dependency != nil || f.NoDependency {
		if !pending {
			return refuse(ErrUpdateNotPending, "")
		}
		spec.Dependency = f.Dependency.Clone()
		if d := spec.Dependency; d != nil {
			if err := d.Validate(); err != nil {
				return refuse(ErrUpdateDependency, err.Error())
			}
			for _, cond := range d.Conditions {
				for _, dj := range cond.Jobs {
					if dj.ID == j.ID {
						return refuse(ErrUpdateDependency, "a job cannot depend on itself")
					}
				}
			}
			if err := depends(spec); err != nil {
				return refuse(ErrUpdateDependency, err.Error())
			}
		}
	}
	if f.Name != nil {
		spec.Name = *f.Name
	}
	if f.Comment != nil {
		spec.Comment = *f.Comment
	}
	if f.Nice != nil {
		if *f.Nice < spec.Nice && !c.Admin {
			return refuse(ErrUpdateAccessDenied, fmt.Sprintf("Nice=%d: only root may lower a job's nice value", *f.Nice))
		}
		spec.Nice = *f.Nice
	}
	if f.TimeLimit != nil || f.TimeLimitAdd != nil {
		limit, old := spec.Request.TimeLimit, j.Spec.Request.TimeLimit
		if f.TimeLimit != nil {
			limit = *f.TimeLimit
		}
		if add := f.TimeLimitAdd; add != nil {
			if limit == 0 {
				return refuse(ErrUpdateTimeLimit, "a job with no time limit has none to change by "+add.String())
			}
			if limit += *add; limit <= 0 {
				return refuse(ErrUpdateTimeLimit, fmt.Sprintf("the limit would be %s", limit))
			}
		}
		switch {
		case limit < 0:
			return refuse(ErrUpdateTimeLimit, "")
		case !c.Admin && (old != 0 && (limit == 0 || limit > old)):
			return refuse(ErrUpdateAccessDenied, fmt.Sprintf("TimeLimit: only root may raise a time limit (%s now)", old))
		}
		if pt, ok := pol.Partition(spec.Request.Partition); ok && !c.Admin && pt.MaxTime > 0 && (limit == 0 || limit > pt.MaxTime) {
			return refuse(ErrUpdateAccessDenied, fmt.Sprintf("TimeLimit: partition %s allows at most %s", pt.Name, pt.MaxTime))
		}
		spec.Request.TimeLimit = limit
	}
	if err := spec.Validate(); err != nil {
		return refuse(ErrUpdateInvalid, err.Error())
	}
	return spec, nil
}

func (s *State) updateJob(index uint64, c UpdateJob) Result {
	if p, ok, err := s.seenRequest("update", ridUpdate, c.Job, c.RequestID); err != nil || ok {
		return Result{JobID: p.Job, Duplicate: ok, Err: err}
	}
	pos, old := s.job(c.Job)
	if old == nil {
		return Result{Err: fmt.Errorf("update job %d: %w", c.Job, ErrUnknownJob)}
	}
	spec, err := PlanJobUpdate(old, c, s.policy, s.checkDependency)
	if err != nil {
		return Result{Err: err}
	}
	j := old.Clone()
	j.Spec = spec
	if f := c.Fields.Nodes; f != nil && j.State == cluster.JobRunning && j.Alloc != nil && j.Alloc.Elastic {
		give, _ := ShrinkTo(old, *f) // PlanJobUpdate checked it
		for _, i := range give {
			j.Alloc.Nodes[i].Removed = true
			resized(j, cluster.ResizeShrink, j.Alloc.Nodes[i].Node, c.Time)
		}
	}
	j.ModifyIndex = index
	s.storeJob(pos, j)
	if c.RequestID != "" {
		s.rids.add(ridPair{RequestID: c.RequestID, Job: c.Job, Kind: ridUpdate})
	}
	return Result{}
}
