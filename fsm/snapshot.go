package fsm

import (
	"crypto/sha256"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/wire"
)

// snapshotVersion is the first byte of every snapshot (every snapshot
// ever written has it, so it needs no envelope to be told apart). Bump it
// when the body's meaning changes, together with ProtocolVersion; Restore
// refuses versions it does not know. Format 1 is protocol 1's. A leader
// sends its snapshot to followers, so a new format must only be written
// once every server announces the protocol that reads it, as for a new
// command type.
const snapshotVersion byte = 1

// snapshotBody is the canonical snapshot: no Go maps, records in ascending
// order, fields encoded in declaration order.
type snapshotBody struct {
	Index      uint64          `msgpack:"index"`
	Hash       []byte          `msgpack:"hash"`
	LastJobID  cluster.JobID   `msgpack:"last_job_id"`
	Jobs       []*cluster.Job  `msgpack:"jobs"`
	Nodes      []*cluster.Node `msgpack:"nodes"`
	RequestIDs []ridPair       `msgpack:"request_ids"`
	// Policy is the queue policy, absent when none was set.
	Policy *cluster.Policy `msgpack:"policy,omitempty"`
	// Security is the CA, gossip key, join tokens and revocations, absent
	// until the first leader recorded its CA.
	Security *cluster.Security `msgpack:"security,omitempty"`
	// Archive is the accounting archive (ArchiveJobs), ascending ID.
	Archive []*cluster.Job `msgpack:"archive,omitempty"`
	// Switches are the switches' own LLDP reports (ReportSwitch, protocol
	// 5), ascending by switch.
	Switches []*cluster.SwitchReport `msgpack:"switches,omitempty"`
}

// Snapshot returns the canonical bytes of the state: a version byte, then
// msgpack. Identical states give identical bytes. It encodes a view, so
// Apply is not held up while it runs.
func (s *State) Snapshot() ([]byte, error) {
	return s.View().encode()
}

// Digest returns the applied index and the sha256 of the snapshot bytes at
// that index: what the chaos checker compares across replicas.
func (s *State) Digest() (index uint64, sum [32]byte, err error) {
	v := s.View()
	b, err := v.encode()
	if err != nil {
		return 0, sum, err
	}
	return v.Index, sha256.Sum256(b), nil
}

func (v *View) encode() ([]byte, error) {
	body := snapshotBody{
		Index:      v.Index,
		Hash:       v.hash[:],
		LastJobID:  v.lastJob,
		Jobs:       v.jobs,
		Nodes:      v.nodes,
		RequestIDs: v.rids.sorted(),
		Policy:     v.policy,
		Security:   v.security,
		Archive:    v.archive,
		Switches:   v.switches,
	}
	b, err := msgpack.Marshal(&body)
	if err != nil {
		return nil, fmt.Errorf("encode snapshot at %d: %w", v.Index, err)
	}
	return append([]byte{snapshotVersion}, b...), nil
}

// Restore replaces the whole state with the snapshot in data. A snapshot
// that does not decode or breaks an invariant is an error and the old
// state stays in place. A successful Restore clears Diverged and wakes
// the watchers of older views.
func (s *State) Restore(data []byte) error {
	n, err := decodeSnapshot(data)
	if err != nil {
		return fmt.Errorf("restore snapshot: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index, s.hash, s.lastJob = n.index, n.hash, n.lastJob
	s.jobs, s.nodes, s.rids, s.res = n.jobs, n.nodes, n.rids, n.res
	s.policy = n.policy
	s.security = n.security
	s.archive = n.archive
	s.switches = n.switches
	s.live = n.live
	s.diverged = nil
	s.moved()
	return nil
}

// decodeSnapshot decodes and validates a snapshot into a fresh State.
func decodeSnapshot(data []byte) (*State, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("empty, want a version byte and a body")
	}
	switch {
	case data[0] > snapshotVersion:
		// Written by a newer agent: misreading it would silently lose
		// state, so say what to do instead.
		return nil, fmt.Errorf("format version %d is newer than this agent reads (%d, protocol v%d): upgrade it",
			data[0], snapshotVersion, ProtocolVersion)
	case data[0] != snapshotVersion:
		return nil, fmt.Errorf("format version %d, want %d", data[0], snapshotVersion)
	}
	var body snapshotBody
	if err := wire.Decode(data[1:], &body); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	if len(body.Hash) != len([32]byte{}) {
		return nil, fmt.Errorf("hash: %d bytes, want 32", len(body.Hash))
	}
	s := New()
	s.index, s.lastJob = body.Index, body.LastJobID
	copy(s.hash[:], body.Hash)

	for i, j := range body.Jobs {
		if err := validateJob(j, body.LastJobID); err != nil {
			return nil, fmt.Errorf("jobs[%d]: %w", i, err)
		}
		if i > 0 && j.ID <= body.Jobs[i-1].ID {
			return nil, fmt.Errorf("jobs[%d]: id %d after %d, want ascending unique ids", i, j.ID, body.Jobs[i-1].ID)
		}
		canonJob(j)
		s.live.change(nil, j)
		if err := s.res.hold(j); err != nil {
			return nil, fmt.Errorf("jobs[%d]: %w", i, err)
		}
	}
	s.jobs = nilIfEmpty(body.Jobs)

	for i, n := range body.Nodes {
		if n == nil {
			return nil, fmt.Errorf("nodes[%d]: nil", i)
		}
		if err := validateNode(n); err != nil {
			return nil, fmt.Errorf("nodes[%d] %.64q: %w", i, n.Name, err)
		}
		if i > 0 && n.Name <= body.Nodes[i-1].Name {
			return nil, fmt.Errorf("nodes[%d]: name %.64q after %.64q, want ascending unique names", i, n.Name, body.Nodes[i-1].Name)
		}
		canonNode(n)
	}
	s.nodes = nilIfEmpty(body.Nodes)

	for i, p := range body.RequestIDs {
		switch {
		case p.RequestID == "" || len(p.RequestID) > cluster.MaxRequestIDBytes:
			return nil, fmt.Errorf("request_ids[%d]: %d bytes, want 1 to %d", i, len(p.RequestID), cluster.MaxRequestIDBytes)
		case p.Job == 0 || p.Job > body.LastJobID:
			return nil, fmt.Errorf("request_ids[%d]: job %d, want 1 to last job id %d", i, p.Job, body.LastJobID)
		case !validRIDKind(p.Kind):
			return nil, fmt.Errorf("request_ids[%d]: kind %.64q, want %q, %q, %q, %q or %q", i, p.Kind, ridSubmit, ridStep, ridSignal, ridRequeue, ridUpdate)
		case p.Kind == ridStep && (p.Step < 0 || p.Step >= cluster.MaxStepsPerJob || p.Incarnation == 0):
			return nil, fmt.Errorf("request_ids[%d]: step %d of incarnation %d, want 0 to %d of an incarnation from 1",
				i, p.Step, p.Incarnation, cluster.MaxStepsPerJob-1)
		case p.Kind != ridStep && (p.Step != 0 || p.Incarnation != 0):
			return nil, fmt.Errorf("request_ids[%d]: a %q request with step %d of incarnation %d, want none", i, p.Kind, p.Step, p.Incarnation)
		case i > 0 && p.RequestID <= body.RequestIDs[i-1].RequestID:
			return nil, fmt.Errorf("request_ids[%d]: %.64q not after %.64q, want ascending unique ids", i, p.RequestID, body.RequestIDs[i-1].RequestID)
		}
	}
	s.rids = newRIDTable(body.RequestIDs)
	if body.Policy != nil {
		if err := body.Policy.Validate(); err != nil {
			return nil, fmt.Errorf("policy: %w", err)
		}
		s.policy = canonPolicy(body.Policy)
	}
	if err := validateArchive(body.Archive, body.LastJobID); err != nil {
		return nil, fmt.Errorf("archive: %w", err)
	}
	s.archive = nilIfEmpty(body.Archive)
	if err := validateSwitches(body.Switches); err != nil {
		return nil, fmt.Errorf("switches: %w", err)
	}
	s.switches = nilIfEmpty(body.Switches)
	if body.Security != nil {
		if err := validateSecurity(body.Security); err != nil {
			return nil, fmt.Errorf("security: %w", err)
		}
		s.security = canonSecurity(body.Security)
	}
	return s, nil
}

// validateJob checks what the FSM's own transitions guarantee of a job, so
// a corrupt snapshot cannot smuggle in a state Apply would never make.
func validateJob(j *cluster.Job, lastJob cluster.JobID) error {
	if j == nil {
		return fmt.Errorf("nil")
	}
	if j.ID == 0 || j.ID > lastJob {
		return fmt.Errorf("id %d: want 1 to last job id %d", j.ID, lastJob)
	}
	switch j.State {
	case cluster.JobPending, cluster.JobRunning, cluster.JobCompleted, cluster.JobFailed,
		cluster.JobCancelled, cluster.JobTimeout, cluster.JobNodeFail, cluster.JobOutOfMemory, cluster.JobRequeued,
		cluster.JobDeadline:
	default:
		return fmt.Errorf("job %d: state %.32q: want a known job state", j.ID, j.State)
	}
	if err := j.Spec.Request.Validate(); err != nil {
		return fmt.Errorf("job %d: request: %w", j.ID, err)
	}
	if err := validateSignals(j); err != nil {
		return err
	}
	if err := validateQueueFields(j); err != nil {
		return fmt.Errorf("job %d: %w", j.ID, err)
	}
	if err := validatePreempt(j); err != nil {
		return err
	}
	if j.AdminPriority < 0 || j.AdminPriority > cluster.MaxAdminPriority {
		return fmt.Errorf("job %d: admin priority %d: want 0 to %d", j.ID, j.AdminPriority, int64(cluster.MaxAdminPriority))
	}
	if j.Alloc == nil {
		if j.State == cluster.JobRunning || j.State == cluster.JobRequeued {
			return fmt.Errorf("job %d: %s without an allocation", j.ID, j.State)
		}
		return validateSteps(j)
	}
	if j.State == cluster.JobRequeued && !j.HoldsResources() {
		// Apply returns such a job to PENDING at once.
		return fmt.Errorf("job %d: REQUEUED with every node released", j.ID)
	}
	if len(j.Alloc.Nodes) == 0 {
		return fmt.Errorf("job %d: allocation with no nodes", j.ID)
	}
	if j.State == cluster.JobPending && j.HoldsResources() {
		return fmt.Errorf("job %d: PENDING while holding resources", j.ID)
	}
	// A node appears once, but in an elastic allocation that took back a
	// node it lost (GrowJob.Rejoin): then each entry of it has the next
	// Join, and every one before the last is out of the allocation and
	// released.
	names := make(map[string]int, len(j.Alloc.Nodes))
	for i, na := range j.Alloc.Nodes {
		prev, dup := names[na.Node]
		switch {
		case !dup && na.Join != 0:
			return fmt.Errorf("job %d: alloc.nodes[%d]: node %.64q: join %d, its first entry", j.ID, i, na.Node, na.Join)
		case dup && (!j.Alloc.Elastic || na.Join != j.Alloc.Nodes[prev].Join+1):
			return fmt.Errorf("job %d: alloc.nodes[%d]: node %.64q named twice", j.ID, i, na.Node)
		case dup && (j.Alloc.Live(prev) || !j.Alloc.Nodes[prev].Released):
			return fmt.Errorf("job %d: alloc.nodes[%d]: node %.64q taken back while it still held alloc.nodes[%d]", j.ID, i, na.Node, prev)
		}
		names[na.Node] = i
		switch na.State {
		case cluster.TaskAssigned, cluster.TaskRunning:
			if na.Released {
				return fmt.Errorf("job %d: alloc.nodes[%d]: %s but released", j.ID, i, na.State)
			}
		case cluster.TaskExited, cluster.TaskLost:
			if !na.Released {
				return fmt.Errorf("job %d: alloc.nodes[%d]: %s but not released", j.ID, i, na.State)
			}
		default:
			return fmt.Errorf("job %d: alloc.nodes[%d]: task state %.32q: want a known task state", j.ID, i, na.State)
		}
		if len(na.GPUs) > cluster.MaxGPUsPerNode {
			return fmt.Errorf("job %d: alloc.nodes[%d]: %d gpus, want at most %d", j.ID, i, len(na.GPUs), cluster.MaxGPUsPerNode)
		}
		seen := make(map[int]struct{}, len(na.GPUs))
		for _, g := range na.GPUs {
			if _, dup := seen[g]; dup || g < 0 || g >= cluster.MaxGPUsPerNode {
				return fmt.Errorf("job %d: alloc.nodes[%d]: gpu %d repeated or out of range", j.ID, i, g)
			}
			seen[g] = struct{}{}
		}
	}
	return validateSteps(j)
}

// validateQueueFields checks a job's hold, dependency and array place.
func validateQueueFields(j *cluster.Job) error {
	switch j.Hold {
	case cluster.HoldNone:
	case cluster.HoldUser, cluster.HoldAdmin:
		if j.State != cluster.JobPending && j.State != cluster.JobRequeued {
			return fmt.Errorf("hold %s on a %s job, want PENDING or REQUEUED", j.Hold, j.State)
		}
	default:
		return fmt.Errorf("hold %.16q: want user, admin or none", j.Hold)
	}
	if d := j.Spec.Dependency; d != nil {
		if err := d.Validate(); err != nil {
			return err
		}
	}
	if j.Spec.Array != nil || j.Spec.Hold {
		return fmt.Errorf("spec: array or hold kept on a stored job, want them moved to the job")
	}
	if a := j.Array; a != nil {
		switch {
		case a.JobID == 0 || a.JobID > j.ID || uint64(j.ID-a.JobID) >= cluster.MaxArrayIndex:
			return fmt.Errorf("array job id %d: want its first element's id, at most %d before %d", a.JobID, cluster.MaxArrayIndex-1, j.ID)
		case a.Count < 1 || a.Count > cluster.MaxArrayIndex || uint64(j.ID-a.JobID) >= uint64(a.Count):
			return fmt.Errorf("array count %d: want 1 to %d, more than the element's position %d", a.Count, cluster.MaxArrayIndex, j.ID-a.JobID)
		case a.TaskID < a.Min || a.TaskID > a.Max || a.Min < 0 || a.Max >= cluster.MaxArrayIndex:
			return fmt.Errorf("array task %d: want %d to %d within 0 to %d", a.TaskID, a.Min, a.Max, cluster.MaxArrayIndex-1)
		case a.Throttle < 0 || a.Step < 0:
			return fmt.Errorf("array throttle %d or step %d: want 0 or more", a.Throttle, a.Step)
		}
	}
	return nil
}
