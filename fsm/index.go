package fsm

import (
	"cmp"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Master ports are chosen from [minMasterPort, maxMasterPort).
const (
	minMasterPort = 29500
	maxMasterPort = 30500
)

// resources indexes what unreleased allocations hold, so Allocate and
// NodeDown never scan every job. It is derived state: Restore rebuilds it
// from the jobs, and it is not part of the snapshot.
type resources struct {
	// held maps node -> GPU index -> the job holding it. The inner maps are
	// shared with views and so are copy-on-write: one may be changed in
	// place only while owned says no view has seen it.
	held  map[string]map[int]cluster.JobID
	owned map[string]bool
	// live maps node -> jobs with an unreleased NodeAlloc on it (GPU-less
	// jobs included). State-only, never shared.
	live map[string]map[cluster.JobID]struct{}
	// ports maps a first node -> master port -> the job using it, for jobs
	// that still hold resources. State-only.
	ports map[string]map[int]cluster.JobID
	// cpus maps node -> CPU position -> the job holding it, and mem node
	// -> the memory (MiB) unreleased allocations hold there. State-only.
	cpus map[string]map[int]cluster.JobID
	mem  map[string]uint64
}

func newResources() resources {
	return resources{
		held:  map[string]map[int]cluster.JobID{},
		owned: map[string]bool{},
		live:  map[string]map[cluster.JobID]struct{}{},
		ports: map[string]map[int]cluster.JobID{},
		cpus:  map[string]map[int]cluster.JobID{},
		mem:   map[string]uint64{},
	}
}

// cpuHolder returns the job holding CPU position cpu of node, if any.
func (r *resources) cpuHolder(node string, cpu int) (cluster.JobID, bool) {
	if plantedDoubleBook {
		return 0, false
	}
	id, ok := r.cpus[node][cpu]
	return id, ok
}

// share returns the held table for a view. From now on no inner map may be
// changed in place.
func (r *resources) share() map[string]map[int]cluster.JobID {
	clear(r.owned)
	return maps.Clone(r.held)
}

// heldFor returns node's GPU table ready to be written.
func (r *resources) heldFor(node string) map[int]cluster.JobID {
	m := r.held[node]
	switch {
	case m == nil:
		m = map[int]cluster.JobID{}
	case !r.owned[node]:
		m = maps.Clone(m)
	default:
		return m
	}
	r.held[node] = m
	r.owned[node] = true
	return m
}

// holder returns the job holding GPU gpu of node, if any.
func (r *resources) holder(node string, gpu int) (cluster.JobID, bool) {
	if plantedDoubleBook { // a planted bug, test builds only: see planted_doublebook_off.go
		return 0, false
	}
	id, ok := r.held[node][gpu]
	return id, ok
}

// freePort returns the lowest master port no job holding resources with
// the same first node uses.
func (r *resources) freePort(first string) (int, bool) {
	used := r.ports[first]
	for p := minMasterPort; p < maxMasterPort; p++ {
		if _, ok := used[p]; !ok {
			return p, true
		}
	}
	return 0, false
}

// hold records every unreleased NodeAlloc of j. It refuses, changing
// nothing, if a GPU or the master port is already taken by another job:
// Allocate checks this before, so only a corrupt snapshot gets here.
func (r *resources) hold(j *cluster.Job) error {
	if j.Alloc == nil || !j.HoldsResources() {
		return nil
	}
	for _, na := range j.Alloc.Nodes {
		if na.Released {
			continue
		}
		if err := r.checkFree(j.ID, na); err != nil {
			return err
		}
	}
	first, port := j.Alloc.Nodes[0].Node, j.Alloc.MasterPort
	if other, ok := r.ports[first][port]; ok && other != j.ID {
		return fmt.Errorf("job %d: master port %d on node %q already used by job %d", j.ID, port, first, other)
	}
	for _, na := range j.Alloc.Nodes {
		if !na.Released {
			r.holdNode(j.ID, na)
		}
	}
	if r.ports[first] == nil {
		r.ports[first] = map[int]cluster.JobID{}
	}
	r.ports[first][port] = j.ID
	return nil
}

// checkFree refuses na's GPUs and CPUs if a job other than id holds one.
func (r *resources) checkFree(id cluster.JobID, na cluster.NodeAlloc) error {
	for _, g := range na.GPUs {
		if other, ok := r.holder(na.Node, g); ok && other != id {
			return fmt.Errorf("job %d: gpu %d of node %q already held by job %d", id, g, na.Node, other)
		}
	}
	for _, c := range na.CPUs {
		if other, ok := r.cpuHolder(na.Node, c); ok && other != id {
			return fmt.Errorf("job %d: cpu %d of node %q already held by job %d", id, c, na.Node, other)
		}
	}
	return nil
}

// holdAdded records NodeAllocs from on of j, added to its allocation
// (GrowJob). Like hold it refuses, changing nothing, a GPU or CPU another
// job holds.
func (r *resources) holdAdded(j *cluster.Job, from int) error {
	added := j.Alloc.Nodes[from:]
	for _, na := range added {
		if err := r.checkFree(j.ID, na); err != nil {
			return err
		}
	}
	for _, na := range added {
		r.holdNode(j.ID, na)
	}
	return nil
}

// holdNode records what na, one unreleased NodeAlloc of job id, holds.
func (r *resources) holdNode(id cluster.JobID, na cluster.NodeAlloc) {
	if len(na.GPUs) > 0 {
		m := r.heldFor(na.Node)
		for _, g := range na.GPUs {
			m[g] = id
		}
	}
	if len(na.CPUs) > 0 {
		m := r.cpus[na.Node]
		if m == nil {
			m = map[int]cluster.JobID{}
			r.cpus[na.Node] = m
		}
		for _, c := range na.CPUs {
			m[c] = id
		}
	}
	if na.MemMiB > 0 {
		r.mem[na.Node] += na.MemMiB
	}
	if r.live[na.Node] == nil {
		r.live[na.Node] = map[cluster.JobID]struct{}{}
	}
	r.live[na.Node][id] = struct{}{}
}

// release forgets what NodeAlloc i of j held. j is the updated record, with
// that NodeAlloc already Released.
func (r *resources) release(j *cluster.Job, i int) {
	na := j.Alloc.Nodes[i]
	if len(na.GPUs) > 0 && r.held[na.Node] != nil {
		m := r.heldFor(na.Node)
		for _, g := range na.GPUs {
			if m[g] == j.ID {
				delete(m, g)
			}
		}
		if len(m) == 0 {
			delete(r.held, na.Node)
			delete(r.owned, na.Node)
		}
	}
	if m := r.cpus[na.Node]; m != nil {
		for _, c := range na.CPUs {
			if m[c] == j.ID {
				delete(m, c)
			}
		}
		if len(m) == 0 {
			delete(r.cpus, na.Node)
		}
	}
	if na.MemMiB > 0 {
		if r.mem[na.Node] -= min(r.mem[na.Node], na.MemMiB); r.mem[na.Node] == 0 {
			delete(r.mem, na.Node)
		}
	}
	if jobs := r.live[na.Node]; jobs != nil {
		delete(jobs, j.ID)
		if len(jobs) == 0 {
			delete(r.live, na.Node)
		}
	}
	if !j.HoldsResources() {
		first := j.Alloc.Nodes[0].Node
		if ports := r.ports[first]; ports != nil && ports[j.Alloc.MasterPort] == j.ID {
			delete(ports, j.Alloc.MasterPort)
			if len(ports) == 0 {
				delete(r.ports, first)
			}
		}
	}
}

// liveJobs returns the jobs with an unreleased NodeAlloc on node, in
// ascending ID order (map order must never reach the state).
func (r *resources) liveJobs(node string) []cluster.JobID {
	ids := slices.Collect(maps.Keys(r.live[node]))
	slices.Sort(ids)
	return ids
}

// ridTableTail bounds the request IDs kept outside the shared base map;
// past it the base is rebuilt, so a lookup scans at most this many.
const ridTableTail = 1024

// ridPair is what one client request id did: a SubmitJob's job (Kind
// empty) or, from protocol 6, the step a StartStep started in
// incarnation Incarnation of Job (ridStep), a SignalJob's request to Job
// (ridSignal), a RequeueJob's (ridRequeue) or an UpdateJob's (ridUpdate).
// The HTTP API scopes the kinds of ids apart.
type ridPair struct {
	RequestID   string        `msgpack:"request_id"`
	Job         cluster.JobID `msgpack:"job"`
	Kind        string        `msgpack:"kind,omitempty"`
	Step        int           `msgpack:"step,omitempty"`
	Incarnation uint64        `msgpack:"incarnation,omitempty"`
	// At is when ArchiveJobs with ForgetRequests first saw the id
	// (protocol 7); it is forgotten cluster.RequestIDRetention later.
	At time.Time `msgpack:"at,omitempty"`
}

// Kinds of ridPair.
const (
	ridSubmit  = ""
	ridStep    = "step"
	ridSignal  = "signal"
	ridRequeue = "requeue"
	ridUpdate  = "update"
)

// validRIDKind reports whether k is a kind this build records.
func validRIDKind(k string) bool {
	return k == ridSubmit || k == ridStep || k == ridSignal || k == ridRequeue || k == ridUpdate
}

// seenRequest looks request id rid of a command of kind on job (0: any)
// up, for what (the refusal's prefix): the pair a first copy recorded, or
// an error where rid is too long or another request (another kind, or
// the same kind on another job) used it.
func (s *State) seenRequest(what, kind string, job cluster.JobID, rid string) (ridPair, bool, error) {
	if len(rid) > cluster.MaxRequestIDBytes {
		return ridPair{}, false, fmt.Errorf("%s: %w: request_id: %d bytes, want at most %d", what, ErrInvalid, len(rid), cluster.MaxRequestIDBytes)
	}
	if rid == "" {
		return ridPair{}, false, nil
	}
	p, ok := s.rids.get(rid)
	if !ok {
		return ridPair{}, false, nil
	}
	if p.Kind != kind || (job != 0 && p.Job != job) {
		return ridPair{}, false, fmt.Errorf("%s: %w: request_id %.64q: already used by another request", what, ErrInvalid, rid)
	}
	return p, true, nil
}

// ridTable maps request IDs to what they made. Views share it without
// copying: base is immutable once built and tail is append-only, so a
// view keeps the base pointer and a prefix of tail.
type ridTable struct {
	base    map[string]ridPair
	tail    []ridPair
	tailMap map[string]ridPair // the state's own index of tail
}

func newRIDTable(pairs []ridPair) ridTable {
	base := make(map[string]ridPair, len(pairs))
	for _, p := range pairs {
		base[p.RequestID] = p
	}
	return ridTable{base: base, tailMap: map[string]ridPair{}}
}

func (t *ridTable) get(rid string) (ridPair, bool) {
	if p, ok := t.tailMap[rid]; ok {
		return p, true
	}
	p, ok := t.base[rid]
	return p, ok
}

func (t *ridTable) add(p ridPair) {
	if len(t.tail) >= ridTableTail {
		base := maps.Clone(t.base)
		if base == nil {
			base = map[string]ridPair{}
		}
		for _, q := range t.tail {
			base[q.RequestID] = q
		}
		// Fresh tail and base: views keep the old ones untouched.
		t.base, t.tail, t.tailMap = base, nil, map[string]ridPair{}
	}
	t.tail = append(t.tail, p)
	t.tailMap[p.RequestID] = p
}

// freeze returns a read-only copy sharing storage with t.
func (t *ridTable) freeze() ridView {
	return ridView{base: t.base, tail: t.tail[:len(t.tail):len(t.tail)]}
}

type ridView struct {
	base map[string]ridPair
	tail []ridPair
}

func (v ridView) get(rid string) (ridPair, bool) {
	for _, p := range v.tail {
		if p.RequestID == rid {
			return p, true
		}
	}
	p, ok := v.base[rid]
	return p, ok
}

// all yields every pair, in no order.
func (v ridView) all() iter.Seq[ridPair] {
	return func(yield func(ridPair) bool) {
		for _, p := range v.base {
			if !yield(p) {
				return
			}
		}
		for _, p := range v.tail {
			if !yield(p) {
				return
			}
		}
	}
}

// sorted returns every pair in ascending request ID order.
func (v ridView) sorted() []ridPair {
	out := slices.AppendSeq(make([]ridPair, 0, len(v.base)+len(v.tail)), v.all())
	slices.SortFunc(out, func(a, b ridPair) int { return cmp.Compare(a.RequestID, b.RequestID) })
	return out
}

// ridAging is what ArchiveJobs with ForgetRequests at now does to p: stamp
// it (not seen before) or forget it (stamped more than
// cluster.RequestIDRetention before now and, for a submit's, its job no
// longer live: live says which are); neither, it stays as it is. A
// submit's id may be the user's own (shoal submit --request-id), which a
// workflow tool can send again long after the first, so it names its job
// for as long as the job is in the live state.
func ridAging(p ridPair, now time.Time, live func(cluster.JobID) bool) (stamp, forget bool) {
	if p.At.IsZero() {
		return true, false
	}
	return false, p.At.Before(now.Add(-cluster.RequestIDRetention)) && (p.Kind != ridSubmit || !live(p.Job))
}

// RequestIDsDue reports whether ArchiveJobs with ForgetRequests at now
// would change the request id table: an id to stamp or one to forget.
func (v *View) RequestIDsDue(now time.Time) bool {
	return v.rids.agingDue(now, func(id cluster.JobID) bool { _, ok := v.Job(id); return ok })
}

// agingDue reports whether an id of the table is to be stamped or
// forgotten at now (ridAging, with live).
func (v ridView) agingDue(now time.Time, live func(cluster.JobID) bool) bool {
	for p := range v.all() {
		if stamp, forget := ridAging(p, now, live); stamp || forget {
			return true
		}
	}
	return false
}
