package placement

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Factors are a job's priority factors, each in [0,1], or the same
// factors multiplied by the policy's weights.
type Factors struct {
	Age       float64 `json:"age"`
	FairShare float64 `json:"fair_share"`
	JobSize   float64 `json:"job_size"`
	QoS       float64 `json:"qos"`
	Partition float64 `json:"partition"`
}

// Priority is one pending job's multifactor priority, every factor
// visible (what `shoal priority` and sprio show).
type Priority struct {
	Job     cluster.JobID
	User    string
	Account string
	QoS     string
	// Partition is the job's partition, "" for none.
	Partition string
	// Admin says Priority is an administrator's (scontrol update
	// Priority=), not the factors' sum.
	Admin bool
	// Priority is the sum of Weighted, truncated to an integer, less Nice
	// (Slurm's multifactor formula).
	Priority int64
	Factors  Factors
	Weighted Factors
	Nice     int
}

// Priorities returns the multifactor priority of every pending job of
// jobs, in the order the scheduler takes them: descending Priority, ties
// by ascending ID. jobs are all the jobs the cluster knows, pending or
// not: fair-share usage comes from their allocations, so it is computed
// purely from job records, with no usage kept anywhere else. gpus is the
// cluster's GPU count (for the job-size factor); now is the time of the
// pass. The factors, as Slurm's priority/multifactor:
//
//   - Age: time since submit over Policy.MaxAge, capped at 1 (1 for every
//     job when MaxAge is zero).
//   - JobSize: the GPUs the job asks for over the cluster's, capped at 1.
//     Larger jobs rank higher (Slurm's default, PriorityFavorSmall=NO):
//     a big gang needs many GPUs free at once and would otherwise starve
//     behind small jobs that take GPUs as they free, while EASY backfill
//     still lets small jobs run in the gaps the big one leaves.
//   - FairShare: Slurm's classic F = 2^(-U/S). S is the (account, user)
//     association's normalised share: the account's shares over all
//     accounts' times the user's shares over the account's users. An
//     account or user the policy does not list has 1 share; the sums run
//     over the listed ones and those the jobs name. U is the
//     association's decayed usage over everyone's: a job that held g GPUs
//     over [s,e] (e is now while it runs) has used, at now,
//     g·h/ln2·(2^(-(now-e)/h) − 2^(-(now-s)/h)) GPU-seconds for half-life
//     h, or g·(e−s) when h is zero. F is 1 while nobody has used
//     anything, and 0 for an association with no share.
//   - QoS: the job's QoS level's priority over the highest level's; 0
//     for a QoS the policy does not name.
//   - Partition: the job's partition's priority over the highest
//     partition's (Slurm's PriorityJobFactor); 0 outside partitions.
//
// Only a job's current incarnation counts towards usage (a requeue
// clears the allocation). Priorities is pure and its order deterministic.
func Priorities(p cluster.Policy, jobs []*cluster.Job, gpus int, now time.Time) []Priority {
	return priorities(p, nil, jobs, gpus, now)
}

// PrioritiesWith is Priorities(p, append(archive, live...), gpus, now)
// for h, the History of archive: the same priorities, bit for bit,
// without reading archive's records again (see History). It is pure.
func PrioritiesWith(p cluster.Policy, h *History, live []*cluster.Job, gpus int, now time.Time) []Priority {
	return priorities(p, h, live, gpus, now)
}

func priorities(p cluster.Policy, h *History, jobs []*cluster.Job, gpus int, now time.Time) []Priority {
	fs := fairShares(&p, h, jobs, now)
	var maxQoS, maxPart int64
	for _, q := range p.QoS {
		maxQoS = max(maxQoS, q.Priority)
	}
	for _, pt := range p.Partitions {
		maxPart = max(maxPart, pt.Priority)
	}
	w := p.Weights
	queue := jobs
	if h != nil && len(h.pending) > 0 {
		queue = append(slices.Clone(h.pending), jobs...)
	}
	n := 0
	for _, j := range queue {
		if j != nil && j.State == cluster.JobPending {
			n++
		}
	}
	var out []Priority // nil without pending jobs, as ever
	if n > 0 {
		out = make([]Priority, 0, n)
	}
	for _, j := range queue {
		if j == nil || j.State != cluster.JobPending {
			continue
		}
		pr := Priority{Job: j.ID, User: j.Spec.User, Account: j.Spec.Account, QoS: j.Spec.QoS, Nice: j.Spec.Nice,
			Partition: j.Spec.Request.Partition}
		f := &pr.Factors
		switch age := now.Sub(j.SubmitTime); {
		case p.MaxAge <= 0 || age >= p.MaxAge:
			f.Age = 1
		case age > 0:
			f.Age = float64(age) / float64(p.MaxAge)
		}
		if want := int64(j.Spec.Request.Nodes) * int64(j.Spec.Request.GPUsPerNode); gpus > 0 && want > 0 {
			f.JobSize = min(float64(want)/float64(gpus), 1)
		}
		f.FairShare = fs.factor(j.Spec.Account, j.Spec.User)
		if i, ok := findQoS(p.QoS, j.Spec.QoS); ok && maxQoS > 0 {
			f.QoS = float64(p.QoS[i].Priority) / float64(maxQoS)
		}
		if pt, ok := p.Partition(j.Spec.Request.Partition); ok && maxPart > 0 {
			f.Partition = float64(pt.Priority) / float64(maxPart)
		}
		pr.Weighted = Factors{
			Age:       f.Age * float64(w.Age),
			FairShare: f.FairShare * float64(w.FairShare),
			JobSize:   f.JobSize * float64(w.JobSize),
			QoS:       f.QoS * float64(w.QoS),
			Partition: f.Partition * float64(w.Partition),
		}
		// Summed in a fixed order, so every replica gets the same bits.
		sum := pr.Weighted.Age + pr.Weighted.FairShare + pr.Weighted.JobSize + pr.Weighted.QoS + pr.Weighted.Partition
		pr.Priority = int64(sum) - int64(j.Spec.Nice)
		if j.AdminPriority > 0 {
			// An administrator's priority replaces the multifactor one.
			pr.Priority, pr.Admin = j.AdminPriority, true
		}
		out = append(out, pr)
	}
	slices.SortFunc(out, func(a, b Priority) int {
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.Job, b.Job))
	})
	return out
}

// PriorityOrder returns the jobs of ps in order, for Options.Order.
func PriorityOrder(ps []Priority) []cluster.JobID {
	ids := make([]cluster.JobID, len(ps))
	for i, p := range ps {
		ids[i] = p.Job
	}
	return ids
}

// DecayedUsage is the usage, at now, of one GPU held over [start, end]
// with usage halving every halfLife: the integral of 2^(-(now-t)/h) dt
// over the interval, in GPU-seconds. A zero halfLife means no decay. An
// interval reaching past now is cut at now; an empty one is 0.
func DecayedUsage(start, end, now time.Time, halfLife time.Duration) float64 {
	if end.After(now) {
		end = now
	}
	if !end.After(start) {
		return 0
	}
	if halfLife <= 0 {
		return end.Sub(start).Seconds()
	}
	h := halfLife.Seconds()
	return h / math.Ln2 * (math.Exp2(-now.Sub(end).Seconds()/h) - math.Exp2(-now.Sub(start).Seconds()/h))
}

func findQoS(levels []cluster.QoSLevel, name string) (int, bool) {
	if name == "" {
		return 0, false
	}
	return slices.BinarySearchFunc(levels, name, func(q cluster.QoSLevel, n string) int { return cmp.Compare(q.Name, n) })
}

// shareTable is the fair-share standing of every association.
type shareTable struct {
	// accounts maps account name to user name to association.
	accounts map[string]map[string]*association
	// total is everyone's usage; sumAccounts the accounts' shares.
	total, sumAccounts float64
}

type association struct {
	usage  float64
	share  float64 // S, normalised
	factor float64 // F
}

// fairShares computes every association's usage, share and factor from
// the records of h's archive, then jobs: the same as from every record
// in that order, h only saving the look-ups (see History).
func fairShares(p *cluster.Policy, h *History, jobs []*cluster.Job, now time.Time) shareTable {
	t := shareTable{accounts: make(map[string]map[string]*association)}
	// Every association the policy lists, with or without jobs (sshare
	// shows them; the sums below count them either way).
	for _, a := range p.Accounts {
		users := make(map[string]*association, len(a.Users))
		for _, u := range a.Users {
			users[u.Name] = &association{}
		}
		t.accounts[a.Name] = users
	}
	assoc := func(account, user string) *association {
		users := t.accounts[account]
		if users == nil {
			users = make(map[string]*association)
			t.accounts[account] = users
		}
		as := users[user]
		if as == nil {
			as = &association{}
			users[user] = as
		}
		return as
	}
	var total float64
	if h != nil {
		// Each association's usage and the total, summed record by record
		// in the archive's order as below.
		var usage []float64
		if f := h.undecayed; p.HalfLife <= 0 && f != nil && !now.Before(f.latest) {
			usage, total = f.usage, f.total // the same sums, made once
		} else {
			usage = make([]float64, len(h.assocs))
			for _, tm := range h.terms {
				if tm.gpus == 0 {
					continue
				}
				end := tm.end
				if end.IsZero() {
					end = now
				}
				u := float64(tm.gpus) * DecayedUsage(tm.start, end, now, p.HalfLife)
				usage[tm.assoc] += u
				total += u
			}
		}
		for slot, s := range h.assocs {
			if s.refs > 0 {
				assoc(s.key.account, s.key.user).usage = usage[slot]
			}
		}
	}
	for _, j := range jobs {
		if j == nil {
			continue
		}
		as := assoc(j.Spec.Account, j.Spec.User)
		if j.Alloc == nil || j.StartTime.IsZero() {
			continue
		}
		g := 0
		for _, n := range j.Alloc.Nodes {
			g += len(n.GPUs)
		}
		if g == 0 {
			continue
		}
		end := j.EndTime
		if end.IsZero() {
			end = now
		}
		u := float64(g) * DecayedUsage(j.StartTime, end, now, p.HalfLife)
		as.usage += u
		total += u
	}
	// Account shares: the listed ones, and 1 for each account the jobs
	// name that the policy does not list.
	var sumAccounts float64
	for _, a := range p.Accounts {
		sumAccounts += float64(a.Shares)
	}
	for name := range t.accounts {
		if _, ok := findAccount(p.Accounts, name); !ok {
			sumAccounts++
		}
	}
	for name, users := range t.accounts {
		var acct *cluster.AccountShare
		accountShares := 1.0
		if i, ok := findAccount(p.Accounts, name); ok {
			acct = &p.Accounts[i]
			accountShares = float64(acct.Shares)
		}
		var sumUsers float64
		if acct != nil {
			for _, u := range acct.Users {
				sumUsers += float64(u.Shares)
			}
		}
		for user := range users {
			if acct == nil || !hasUser(acct.Users, user) {
				sumUsers++
			}
		}
		for user, as := range users {
			userShares := 1.0
			if acct != nil {
				if k, ok := findUser(acct.Users, user); ok {
					userShares = float64(acct.Users[k].Shares)
				}
			}
			if sumAccounts > 0 && sumUsers > 0 {
				as.share = accountShares / sumAccounts * userShares / sumUsers
			}
			as.factor = shareFactor(as.usage, total, as.share)
		}
	}
	t.total, t.sumAccounts = total, sumAccounts
	return t
}

// shareFactor is F = 2^(-U/S) with U = usage/total.
func shareFactor(usage, total, share float64) float64 {
	if share <= 0 {
		return 0
	}
	if total <= 0 {
		return 1
	}
	return math.Exp2(-(usage / total) / share)
}

func (t shareTable) factor(account, user string) float64 {
	if as := t.accounts[account][user]; as != nil {
		return as.factor
	}
	return 0
}

func findAccount(accts []cluster.AccountShare, name string) (int, bool) {
	return slices.BinarySearchFunc(accts, name, func(a cluster.AccountShare, n string) int { return cmp.Compare(a.Name, n) })
}

func findUser(users []cluster.UserShare, name string) (int, bool) {
	return slices.BinarySearchFunc(users, name, func(u cluster.UserShare, n string) int { return cmp.Compare(u.Name, n) })
}

func hasUser(users []cluster.UserShare, name string) bool {
	_, ok := findUser(users, name)
	return ok
}
