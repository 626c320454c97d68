package placement

import (
	"cmp"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// History is what a scheduling pass derives from the accounting archive
// (fsm.View.Archived: finished jobs no longer live) and can carry to the
// next pass instead of deriving it again from every record: for each
// archived job, the association and GPU-time its fair-share usage is
// computed from; for each user and each job shape, the archived jobs the
// run-time Predictor learns from, in order of end. None of it depends on the time of a pass
// or on the policy, so neither a new now nor a new half-life, weights or
// shares make it stale; only the archive's records do. The decayed usage
// itself depends on now (each job's share of it is 2^(-(now-t)/h) of
// its GPU-time, summed job by job in record order), so it is not kept:
// PrioritiesWith computes it again each pass from these terms, which
// gives the same bits as Priorities over every record and costs two
// exponentials per archived job instead of a map look-up, an allocation
// walk and two exponentials. (Carrying a decayed sum forward by
// 2^(-Δ/h) is exact in arithmetic but not in floating point, and the
// factors would then depend on when the sum was made.) Without decay
// (half-life 0) the usage of a finished job does not depend on now, and
// the History keeps the sums themselves.
//
// A History is immutable: NewHistory returns a new one and never changes
// the one it is given, so a pass may read one while the next is built.
// The leader's scheduling loop keeps the last one between passes
// (leader.Scheduler); nothing in placement keeps one.
type History struct {
	// archive is the record list the History digests, as given.
	archive []*cluster.Job
	// terms are archive's usage terms, one per record, in its order.
	terms []usageTerm
	// assocs are the associations the records name, by slot; index finds
	// a slot. A slot whose records all left the archive has refs 0 and
	// is not an association any more.
	assocs []assocSlot
	index  map[assocKey]int32
	dead   int // slots with refs 0
	// undecayed is the usage without decay (a zero half-life), summed as
	// fairShares sums it, valid at every now from its latest end on.
	undecayed *flatUsage
	// users are each user's archived finished jobs, shapes each shape's
	// (shapeOf), for the Predictor.
	users  map[string]*runHistory
	shapes map[shape]*runHistory
	// pending are archived records that are still pending (none in an
	// archive the FSM keeps), for Priorities' queue.
	pending []*cluster.Job
}

// usageTerm is what one record adds to its association's fair-share
// usage: gpus GPUs held from start to end (end zero: still running).
type usageTerm struct {
	assoc      int32
	gpus       int
	start, end time.Time
}

type assocKey struct{ account, user string }

// flatUsage is the archive's usage without decay: each association's
// and the total, summed term by term in the archive's order.
type flatUsage struct {
	usage []float64
	total float64
	// latest is the latest end: from it on, no term depends on now.
	latest time.Time
}

// flatten is terms' usage without decay, or nil when some term depends
// on now whatever it is: one still running (no end), or whose end has a
// monotonic clock reading (compared with now differently from the others).
// Without decay, DecayedUsage of a job that ended by now is its GPU-time
// whatever now is, so the sum is fairShares' at every now from the latest
// end on.
func flatten(terms []usageTerm, slots int) *flatUsage {
	f := &flatUsage{usage: make([]float64, slots)}
	for _, t := range terms {
		if t.gpus == 0 {
			continue
		}
		if t.end.IsZero() || t.end.Round(0) != t.end {
			return nil
		}
		if t.end.After(f.latest) {
			f.latest = t.end
		}
		u := float64(t.gpus) * DecayedUsage(t.start, t.end, t.end, 0)
		f.usage[t.assoc] += u
		f.total += u
	}
	return f
}

type assocSlot struct {
	key  assocKey
	refs int
}

// runHistory is one user's (one shape's) archived finished jobs (started
// and ended), in ascending (end, id) order, the order PredictorFrom
// observes them in; used are how many of them have a time limit.
type runHistory struct {
	runs []runEntry
	used int
	// tailRuns are the last PredictorWindow of runs, tailUsed the last
	// PredictorWindow of those with a limit, in the same order.
	tailRuns, tailUsed []runEntry
}

// runEntry is one finished job as the Predictor sees it.
type runEntry struct {
	end   time.Time
	id    cluster.JobID
	ran   time.Duration
	limit time.Duration
}

func compareRuns(a, b runEntry) int {
	return cmp.Or(a.end.Compare(b.end), cmp.Compare(a.id, b.id))
}

// NewHistory is the History of archive, a list of job records in
// ascending unique ID order (fsm.View.Archived), built from prev where
// it can: records of prev's archive that archive still holds (the same
// pointer at the same ID) are not looked at again, so after a pass the
// next one reads only the records archived since and those that left.
// Records are never modified in place (the FSM replaces a job, and its
// archive, to change them); a restored or another leader's archive has
// new records and is digested afresh. An archive out of ID order is
// digested afresh too. prev may be nil. NewHistory is pure and never
// modifies prev or archive.
func NewHistory(prev *History, archive []*cluster.Job) *History {
	if prev != nil && slices.Equal(prev.archive, archive) {
		return prev
	}
	if prev == nil || !ascendingIDs(archive) || !ascendingIDs(prev.archive) {
		return buildHistory(archive)
	}
	// Walk both archives by ID: kept records carry their terms over.
	h := &History{archive: archive, terms: make([]usageTerm, len(archive)),
		assocs: slices.Clone(prev.assocs), index: prev.index, dead: prev.dead}
	var added, removed []*cluster.Job
	kept := 0
	i := 0
	for k, j := range archive {
		for i < len(prev.archive) && prev.archive[i].ID < j.ID {
			removed = append(removed, prev.archive[i])
			i++
		}
		if i < len(prev.archive) && prev.archive[i] == j {
			h.terms[k] = prev.terms[i]
			kept++
			i++
			continue
		}
		if i < len(prev.archive) && prev.archive[i].ID == j.ID {
			removed = append(removed, prev.archive[i]) // replaced
			i++
		}
		added = append(added, j)
		h.terms[k].assoc = -1 // filled below
	}
	removed = append(removed, prev.archive[i:]...)
	if kept == 0 || len(added)+len(removed) > len(archive)/2 {
		return buildHistory(archive) // little to carry over
	}
	// Associations: drop the removed records' references, then slot the
	// added ones (copying the index before its first change).
	indexCopied := false
	for _, j := range removed { // never nil: both archives are in ID order
		s := &h.assocs[prev.index[assocKey{j.Spec.Account, j.Spec.User}]]
		if s.refs--; s.refs == 0 {
			h.dead++
		}
	}
	for k := range h.terms {
		if h.terms[k].assoc >= 0 {
			continue
		}
		j := archive[k]
		key := assocKey{j.Spec.Account, j.Spec.User}
		slot, ok := h.index[key]
		if !ok {
			if !indexCopied {
				h.index, indexCopied = cloneIndex(h.index), true
			}
			slot = int32(len(h.assocs))
			h.assocs = append(h.assocs, assocSlot{key: key})
			h.index[key] = slot
		} else if h.assocs[slot].refs == 0 {
			h.dead--
		}
		h.assocs[slot].refs++
		h.terms[k] = termOf(j, slot)
	}
	if h.dead > len(h.assocs)/2+64 {
		return buildHistory(archive) // too many associations gone: renumber
	}
	h.users = updateRuns(prev.users, added, removed, userKey)
	h.shapes = updateRuns(prev.shapes, added, removed, shapeKey)
	h.undecayed = flatten(h.terms, len(h.assocs))
	h.pending = slices.DeleteFunc(slices.Clone(prev.pending), func(j *cluster.Job) bool { return slices.Contains(removed, j) })
	for _, j := range added {
		if j != nil && j.State == cluster.JobPending {
			h.pending = append(h.pending, j)
		}
	}
	slices.SortFunc(h.pending, func(a, b *cluster.Job) int { return cmp.Compare(a.ID, b.ID) })
	return h
}

// buildHistory digests archive from scratch.
func buildHistory(archive []*cluster.Job) *History {
	h := &History{archive: archive, terms: make([]usageTerm, len(archive)), index: make(map[assocKey]int32)}
	for k, j := range archive {
		if j == nil {
			h.terms[k] = usageTerm{assoc: -1}
			continue
		}
		key := assocKey{j.Spec.Account, j.Spec.User}
		slot, ok := h.index[key]
		if !ok {
			slot = int32(len(h.assocs))
			h.assocs = append(h.assocs, assocSlot{key: key})
			h.index[key] = slot
		}
		h.assocs[slot].refs++
		h.terms[k] = termOf(j, slot)
		if j.State == cluster.JobPending {
			h.pending = append(h.pending, j)
		}
	}
	h.users = updateRuns(nil, archive, nil, userKey)
	h.shapes = updateRuns(nil, archive, nil, shapeKey)
	h.undecayed = flatten(h.terms, len(h.assocs))
	return h
}

// termOf is j's usage term in association slot, as fairShares reads a
// record: nothing without an allocation or a start.
func termOf(j *cluster.Job, slot int32) usageTerm {
	t := usageTerm{assoc: slot}
	if j.Alloc == nil || j.StartTime.IsZero() {
		return t
	}
	for _, n := range j.Alloc.Nodes {
		t.gpus += len(n.GPUs)
	}
	t.start, t.end = j.StartTime, j.EndTime
	return t
}

// runOf is j as the Predictor observes it, or false when PredictorFrom
// skips it (it did not both run and end).
func runOf(j *cluster.Job) (runEntry, bool) {
	if j == nil || !j.State.Terminal() || j.StartTime.IsZero() || j.EndTime.IsZero() {
		return runEntry{}, false
	}
	return runEntry{end: j.EndTime, id: j.ID, ran: j.EndTime.Sub(j.StartTime), limit: j.Spec.Request.TimeLimit}, true
}

// userKey and shapeKey are the keys the Predictor files a finished job
// under: its user, or when it names none its shape.
func userKey(j *cluster.Job) (string, bool) { return j.Spec.User, j.Spec.User != "" }
func shapeKey(j *cluster.Job) (shape, bool) { return shapeOf(j.Spec.Request), j.Spec.User == "" }

// updateRuns is users (never modified), the finished jobs by key, with
// added's in and removed's out: only the keys they name are copied.
func updateRuns[K comparable](users map[K]*runHistory, added, removed []*cluster.Job, key func(*cluster.Job) (K, bool)) map[K]*runHistory {
	type change struct{ add, del []runEntry }
	changes := map[K]*change{}
	at := func(k K) *change {
		c := changes[k]
		if c == nil {
			c = &change{}
			changes[k] = c
		}
		return c
	}
	for _, j := range added {
		if r, ok := runOf(j); ok {
			if k, ok := key(j); ok {
				c := at(k)
				c.add = append(c.add, r)
			}
		}
	}
	for _, j := range removed {
		if r, ok := runOf(j); ok {
			if k, ok := key(j); ok {
				c := at(k)
				c.del = append(c.del, r)
			}
		}
	}
	if len(changes) == 0 {
		return users
	}
	out := make(map[K]*runHistory, len(users)+len(changes))
	for u, uh := range users {
		if changes[u] == nil {
			out[u] = uh
		}
	}
	for u, c := range changes {
		var kept []runEntry
		if old := users[u]; old != nil {
			gone := make(map[cluster.JobID]bool, len(c.del))
			for _, d := range c.del {
				gone[d.id] = true
			}
			kept = make([]runEntry, 0, len(old.runs))
			for _, r := range old.runs {
				if !gone[r.id] {
					kept = append(kept, r)
				}
			}
		}
		if len(kept)+len(c.add) == 0 {
			continue
		}
		// Merge the added runs, sorted, into the kept ones (in order).
		slices.SortFunc(c.add, compareRuns)
		runs := c.add // a new user's, or all new: no merge
		if len(kept) > 0 {
			runs = make([]runEntry, 0, len(kept)+len(c.add))
			for len(kept) > 0 && len(c.add) > 0 {
				if compareRuns(kept[0], c.add[0]) <= 0 {
					runs, kept = append(runs, kept[0]), kept[1:]
				} else {
					runs, c.add = append(runs, c.add[0]), c.add[1:]
				}
			}
			runs = append(append(runs, kept...), c.add...)
		}
		uh := &runHistory{runs: runs, tailRuns: runs[max(len(runs)-PredictorWindow, 0):]}
		for k, r := range runs {
			if r.limit > 0 {
				uh.used++
			}
			if r := runs[len(runs)-1-k]; r.limit > 0 && len(uh.tailUsed) < PredictorWindow {
				uh.tailUsed = append(uh.tailUsed, r)
			}
		}
		slices.Reverse(uh.tailUsed)
		out[u] = uh
	}
	return out
}

func cloneIndex(m map[assocKey]int32) map[assocKey]int32 {
	c := make(map[assocKey]int32, len(m)+1)
	for k, v := range m {
		c[k] = v
	}
	return c
}

func ascendingIDs(jobs []*cluster.Job) bool {
	for i, j := range jobs {
		if j == nil || i > 0 && j.ID <= jobs[i-1].ID {
			return false
		}
	}
	return true
}

// PredictorWith is PredictorFrom(append(archive, live...)) for h, the
// History of archive: the same Predictor, from h's per-user and
// per-shape runs and the live records (few: finished jobs wait MinJobAge
// to be archived), in O(users + shapes + live) instead of sorting every
// record. It is pure.
func PredictorWith(h *History, live []*cluster.Job) *Predictor {
	if h == nil {
		return PredictorFrom(live)
	}
	return &Predictor{users: ringsWith(h.users, live, userKey), shapes: ringsWith(h.shapes, live, shapeKey)}
}

// ringsWith are the Predictor's rings by key from hist, the archived
// runs by key, and the live records; nil when no key has a run, as
// PredictorFrom leaves a map it never filled.
func ringsWith[K comparable](hist map[K]*runHistory, live []*cluster.Job, key func(*cluster.Job) (K, bool)) map[K]*recentRuns {
	fresh := map[K][]runEntry{}
	for _, j := range live {
		if r, ok := runOf(j); ok {
			if k, ok := key(j); ok {
				fresh[k] = append(fresh[k], r)
			}
		}
	}
	if len(hist)+len(fresh) == 0 {
		return nil
	}
	out := make(map[K]*recentRuns, len(hist)+len(fresh))
	for k, uh := range hist {
		out[k] = uh.ring(fresh[k])
	}
	for k, rs := range fresh {
		if hist[k] == nil {
			out[k] = (&runHistory{}).ring(rs)
		}
	}
	return out
}

// ring is the recentRuns Predictor.Observe leaves after the user's
// archived runs and fresh ones (in any order) observed in (end, id)
// order: the last PredictorWindow runs of the merged sequence, and the
// last PredictorWindow of those with a limit, are the last of uh's tails
// and fresh merged; the n-th observed (from 0) sits at n mod
// PredictorWindow, as Observe's rings leave it.
func (uh *runHistory) ring(fresh []runEntry) *recentRuns {
	slices.SortFunc(fresh, compareRuns)
	u := &recentRuns{nRuns: len(uh.runs) + len(fresh), nUsed: uh.used}
	var freshUsed []runEntry
	for _, r := range fresh {
		if r.limit > 0 {
			u.nUsed++
			freshUsed = append(freshUsed, r)
		}
	}
	for e, r := range lastMerged(uh.tailRuns, fresh) {
		u.runs[(u.nRuns-1-e)%PredictorWindow] = max(r.ran, 0)
	}
	for e, r := range lastMerged(uh.tailUsed, freshUsed) {
		u.used[(u.nUsed-1-e)%PredictorWindow] = min(float64(max(r.ran, 0))/float64(r.limit), 1)
	}
	return u
}

// lastMerged are the last PredictorWindow entries of a and b (each in
// ascending order) merged, the last first.
func lastMerged(a, b []runEntry) []runEntry {
	out := make([]runEntry, 0, PredictorWindow)
	i, k := len(a)-1, len(b)-1
	for len(out) < PredictorWindow && (i >= 0 || k >= 0) {
		if k < 0 || i >= 0 && compareRuns(a[i], b[k]) > 0 {
			out = append(out, a[i])
			i--
		} else {
			out = append(out, b[k])
			k--
		}
	}
	return out
}
