package fsm

import (
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Gates decides what, besides free resources, keeps pending jobs from
// starting: a hold, a time limit above its partition's, a --dependency
// that does not hold yet, or the array's %N throttle. The leader asks before offering jobs to placement, and the
// FSM asks again for every Allocate decision, so no job starts early
// whatever the leader believed.
//
// A Gates reads one set of job records at one instant and is used by one
// goroutine; the answers for array throttles count the elements admitted
// so far, so ask in ascending job ID order.
type Gates struct {
	jobs   []*cluster.Job  // ascending ID
	policy *cluster.Policy // nil: none set
	now    time.Time

	// singles maps a (user, name) to the lowest ID among its pending jobs
	// and whether one of its jobs runs; built on the first singleton.
	singles map[singleKey]singleInfo
	// admitted counts, per array, the elements running or admitted now.
	admitted map[cluster.JobID]int
	// qosGPUs counts, per (user, QoS), the GPUs held or admitted now;
	// built on the first job of a capped QoS.
	qosGPUs map[singleKey]int64
}

type singleKey struct{ user, name string }

type singleInfo struct {
	lowestPending cluster.JobID
	running       bool
}

// Gates returns a Gates over the view's jobs at now.
func (v *View) Gates(now time.Time) *Gates { return newGates(v.jobs, v.policy, now) }

func newGates(jobs []*cluster.Job, policy *cluster.Policy, now time.Time) *Gates {
	return &Gates{jobs: jobs, policy: policy, now: now}
}

// Admit returns "" when pending job j may be offered to placement now, and
// counts it against its array's throttle; otherwise the reason it waits
// (JobHeldUser, JobHeldAdmin, PartitionTimeLimit, BeginTime, Dependency,
// QOSMaxGpuPerUser, JobArrayTaskLimit), or for a job that never can
// start DependencyNeverSatisfied (the leader cancels those) or DeadLine
// (it could no longer end by its --deadline: the leader ends it DEADLINE).
func (g *Gates) Admit(j *cluster.Job) string {
	switch j.Hold {
	case cluster.HoldUser:
		return cluster.ReasonHeldUser
	case cluster.HoldAdmin:
		return cluster.ReasonHeldAdmin
	}
	if pt, ok := g.policy.Partition(j.Spec.Request.Partition); ok && pt.OverLimit(j.Spec.Request.TimeLimit) {
		// A job asking for more than its partition allows waits, as
		// Slurm's does, until an administrator raises the limit.
		return cluster.ReasonPartitionLimit
	}
	if b := j.Spec.Begin; !b.IsZero() && g.now.Before(b) {
		return cluster.ReasonBeginTime
	}
	if d := j.Spec.Dependency; d != nil {
		switch g.dependency(j, d) {
		case depNever:
			return cluster.ReasonDependencyNever
		case depWaiting:
			return cluster.ReasonDependency
		}
	}
	// Asked of eligible jobs only, as Slurm's scheduler asks deadline_ok
	// of the jobs in its queue: held, waiting for --begin or a dependency,
	// a job ends DEADLINE once it is eligible.
	if j.Spec.MissesDeadline(g.now) {
		return cluster.ReasonDeadline
	}
	var capped *cluster.QoSLevel
	if q, ok := g.policy.QoSLevel(j.Spec.QoS); ok && q.MaxGPUsPerUser > 0 {
		capped = q
		if g.qosGPUs == nil {
			g.countQoSGPUs()
		}
		if g.qosGPUs[singleKey{j.Spec.User, q.Name}]+jobGPUs(j) > q.MaxGPUsPerUser {
			return cluster.ReasonQOSMaxGPUPerUser
		}
	}
	if a := j.Array; a != nil && a.Throttle > 0 {
		if g.admitted == nil {
			g.admitted = map[cluster.JobID]int{}
		}
		n, ok := g.admitted[a.JobID]
		if !ok {
			n = g.activeElements(a.JobID)
		}
		if n >= a.Throttle {
			g.admitted[a.JobID] = n
			return cluster.ReasonArrayTaskLimit
		}
		g.admitted[a.JobID] = n + 1
	}
	if capped != nil {
		g.qosGPUs[singleKey{j.Spec.User, capped.Name}] += jobGPUs(j)
	}
	return ""
}

// countQoSGPUs fills qosGPUs from the jobs holding resources.
func (g *Gates) countQoSGPUs() {
	g.qosGPUs = map[singleKey]int64{}
	for _, j := range g.jobs {
		if j.Spec.QoS == "" || j.Alloc == nil || !j.HoldsResources() {
			continue
		}
		var n int64
		for _, na := range j.Alloc.Nodes {
			if !na.Released {
				n += int64(len(na.GPUs))
			}
		}
		g.qosGPUs[singleKey{j.Spec.User, j.Spec.QoS}] += n
	}
}

// jobGPUs is what a pending job asks for in all.
func jobGPUs(j *cluster.Job) int64 {
	return int64(j.Spec.Request.Nodes) * int64(j.Spec.Request.GPUsPerNode)
}

// NeverSatisfied reports whether j's dependency can never hold.
func (g *Gates) NeverSatisfied(j *cluster.Job) bool {
	return j.Spec.Dependency != nil && g.dependency(j, j.Spec.Dependency) == depNever
}

type depState int

const (
	depWaiting depState = iota
	depMet
	depNever
)

// dependency combines d's conditions: all must hold (or with Any, one).
func (g *Gates) dependency(self *cluster.Job, d *cluster.Dependency) depState {
	met, never := 0, 0
	for _, c := range d.Conditions {
		switch g.condition(self, c) {
		case depMet:
			met++
		case depNever:
			never++
		}
	}
	n := len(d.Conditions)
	if d.Any {
		switch {
		case met > 0:
			return depMet
		case never == n:
			return depNever
		}
		return depWaiting
	}
	switch {
	case never > 0:
		return depNever
	case met == n:
		return depMet
	}
	return depWaiting
}

// condition evaluates one TYPE:ID[:ID...] item: every named job must meet
// it.
func (g *Gates) condition(self *cluster.Job, c cluster.DepCondition) depState {
	if c.Type == cluster.DepSingleton {
		return g.singleton(self)
	}
	all := depMet
	for _, dj := range c.Jobs {
		var st depState
		if c.Type == cluster.DepAfterCorr {
			st = g.corresponding(self, dj.ID)
		} else {
			st = g.targets(dj, func(t *cluster.Job) depState { return g.after(c.Type, t, dj.Delay) })
		}
		switch st {
		case depNever:
			return depNever
		case depWaiting:
			all = depWaiting
		}
	}
	return all
}

// targets applies f to the job dj names: one job, one array element, or
// every element of an array. A job the FSM no longer knows is taken as
// ended well, as Slurm takes a job purged from its memory.
func (g *Gates) targets(dj cluster.DepJob, f func(*cluster.Job) depState) depState {
	i, ok := findJob(g.jobs, dj.ID)
	if !ok {
		return depMet
	}
	t := g.jobs[i]
	if t.Array == nil || t.Array.JobID != dj.ID {
		return f(t) // a plain job, or an element named by its own id
	}
	all := depMet
	for k := i; k < len(g.jobs) && g.jobs[k].Array != nil && g.jobs[k].Array.JobID == dj.ID; k++ {
		e := g.jobs[k]
		if dj.Task >= 0 && e.Array.TaskID != dj.Task {
			continue
		}
		switch f(e) {
		case depNever:
			return depNever
		case depWaiting:
			all = depWaiting
		}
		if dj.Task >= 0 {
			return all
		}
	}
	if dj.Task >= 0 {
		return depMet // no such element (refused at submit): nothing to wait on
	}
	return all
}

// corresponding is aftercorr: self's element of the same index in array
// id must have ended well; with no such element there is nothing to wait
// on.
func (g *Gates) corresponding(self *cluster.Job, id cluster.JobID) depState {
	if self.Array == nil {
		return depMet
	}
	return g.targets(cluster.DepJob{ID: id, Task: self.Array.TaskID},
		func(t *cluster.Job) depState { return g.after(cluster.DepAfterOK, t, 0) })
}

// after evaluates one dependency type against one job.
func (g *Gates) after(typ string, t *cluster.Job, delay time.Duration) depState {
	ended := t.State.Terminal()
	switch typ {
	case cluster.DepAfter:
		if ended {
			return depMet
		}
		if !t.StartTime.IsZero() && (t.State == cluster.JobRunning || t.State == cluster.JobRequeued) {
			if !g.now.Before(t.StartTime.Add(delay)) {
				return depMet
			}
		}
		return depWaiting
	case cluster.DepAfterAny, cluster.DepAfterBurstBuf:
		if ended {
			return depMet
		}
		return depWaiting
	case cluster.DepAfterOK, cluster.DepAfterNotOK:
		// Met once t ended as the type asks: succeeded, or did not.
		switch succeeded := t.State == cluster.JobCompleted && t.ExitCode == 0; {
		case !ended:
			return depWaiting
		case succeeded == (typ == cluster.DepAfterOK):
			return depMet
		}
		return depNever
	}
	return depNever // Validate admits no other type
}

// singleton holds when no other job of self's user and name runs and none
// submitted earlier still pends: one such job at a time, in submit order.
func (g *Gates) singleton(self *cluster.Job) depState {
	if g.singles == nil {
		g.singles = map[singleKey]singleInfo{}
		for _, j := range g.jobs {
			if j.State.Terminal() {
				continue
			}
			k := singleKey{j.Spec.User, j.Spec.Name}
			info := g.singles[k]
			if j.State == cluster.JobPending {
				if info.lowestPending == 0 {
					info.lowestPending = j.ID
				}
			} else {
				info.running = true
			}
			g.singles[k] = info
		}
	}
	info := g.singles[singleKey{self.Spec.User, self.Spec.Name}]
	if info.running || (info.lowestPending != 0 && info.lowestPending < self.ID) {
		return depWaiting
	}
	return depMet
}

// activeElements counts array id's elements that hold or may hold
// resources: running, or requeued and not yet released.
func (g *Gates) activeElements(id cluster.JobID) int {
	i, ok := findJob(g.jobs, id)
	if !ok {
		return 0
	}
	n := 0
	for k := i; k < len(g.jobs) && g.jobs[k].Array != nil && g.jobs[k].Array.JobID == id; k++ {
		if e := g.jobs[k]; e.State == cluster.JobRunning || e.State == cluster.JobRequeued || e.HoldsResources() {
			n++
		}
	}
	return n
}
