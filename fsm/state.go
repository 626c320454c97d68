package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/shoal-sched/shoal/cluster"
)

// Result is what applying one entry decided. Every replica computes the
// same Result for the same entry.
type Result struct {
	// JobID is, for SubmitJob, the new job's ID, or the existing one for a
	// duplicate RequestID (for a duplicate of the others, its job's).
	JobID cluster.JobID
	// Duplicate is true for a SubmitJob, StartStep, SignalJob, RequeueJob
	// or UpdateJob whose RequestID was already seen: nothing changed.
	Duplicate bool
	// Err is set when the command was refused as a whole (unknown job,
	// invalid spec...); the state is unchanged. It wraps ErrDiverged when
	// the entry could not be decoded at all.
	Err error
	// Rejected lists, for Allocate, the decisions refused one by one; the
	// others in the batch still applied.
	Rejected []Rejection
	// StepID is, for an accepted StartStep, the new step's ID.
	StepID int
}

// Rejection is one Allocate decision the FSM refused.
type Rejection struct {
	Job    cluster.JobID
	Reason string
}

// State is the replicated state machine. It is safe for concurrent use:
// Apply and Restore are called from one goroutine (raft's); View, Index,
// Hash, Digest, Snapshot and Diverged from any.
type State struct {
	mu sync.Mutex

	index   uint64
	hash    [32]byte
	lastJob cluster.JobID
	// jobs is in ascending ID order and nodes in ascending name order. The
	// records they point to are never modified once stored: a change
	// clones the record and swaps the pointer (views share them).
	jobs  []*cluster.Job
	nodes []*cluster.Node
	rids  ridTable
	res   resources
	// policy is the queue policy last set (SetPolicy); nil: none.
	policy *cluster.Policy
	// archive holds finished jobs moved out of jobs (ArchiveJobs), in
	// ascending ID order, compacted; records are never modified.
	archive []*cluster.Job
	// switches are the switches' own LLDP reports (ReportSwitch), in
	// ascending switch order; records are never modified.
	switches []*cluster.SwitchReport
	// live counts the pending and running jobs, in all and by uid, for
	// the job-count limits. Derived: rebuilt on restore, not snapshotted.
	live liveJobs
	// security is the cluster's CA, gossip key, join tokens and revoked
	// nodes; nil until the first leader records its CA. Never modified
	// once stored (the commands clone it).
	security *cluster.Security

	diverged error

	// view caches the view of the current index; changed is the channel
	// handed to views of the current index, closed when the state moves.
	view    *View
	changed chan struct{}
}

// New returns an empty state at index 0.
func New() *State {
	return &State{rids: newRIDTable(nil), res: newResources()}
}

// Apply applies the committed entry data at index and returns what it
// decided. Indexes must strictly increase. Apply never panics on data: an
// entry it cannot decode marks the replica diverged (see Diverged).
func (s *State) Apply(index uint64, data []byte) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if index <= s.index {
		// The log never goes back; applying this would corrupt the hash.
		err := fmt.Errorf("%w: entry index %d is not after applied index %d", ErrDiverged, index, s.index)
		if s.diverged == nil {
			s.diverged = err
		}
		return Result{Err: err}
	}
	s.hash = chainHash(s.hash, index, data)
	s.index = index
	res := s.apply(index, data)
	s.moved()
	return res
}

// chainHash extends the running hash by one entry.
func chainHash(prev [32]byte, index uint64, data []byte) [32]byte {
	h := sha256.New()
	h.Write(prev[:])
	var ib [8]byte
	binary.BigEndian.PutUint64(ib[:], index)
	h.Write(ib[:])
	h.Write(data)
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// moved drops the cached view and wakes watchers of the old one.
func (s *State) moved() {
	s.view = nil
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

var errEmptyCommand = errors.New("empty entry, want a type byte and a body")

func (s *State) apply(index uint64, data []byte) Result {
	if len(data) == 0 {
		return s.diverge(index, errEmptyCommand)
	}
	t, body := CmdType(data[0]), data[1:]
	c, ok := lookup(t)
	if !ok {
		return s.diverge(index, unknownCommand(t, index))
	}
	res, err := c.apply(s, index, body)
	if err != nil {
		return s.diverge(index, fmt.Errorf("decode %s: %w", t, err))
	}
	return res
}

// unknownCommand is why a replica cannot apply a type byte it does not
// know: the log was written by a newer agent (the leader's version gate
// should have prevented it; this replica was down or downgraded), so the
// cure is to upgrade this agent, never to skip the entry.
func unknownCommand(t CmdType, index uint64) error {
	return fmt.Errorf("%w %d at index %d: this agent (protocol v%d) is older than the cluster; upgrade it",
		ErrUnknownCommand, uint8(t), index, ProtocolVersion)
}

// diverge marks the replica diverged (the first cause is kept) and returns
// the refusal.
func (s *State) diverge(index uint64, cause error) Result {
	err := fmt.Errorf("%w at index %d: %w", ErrDiverged, index, cause)
	if s.diverged == nil {
		s.diverged = err
	}
	return Result{Err: err}
}

// Diverged returns nil, or the first reason an entry could not be applied.
// A diverged replica must stop serving reads and give up leadership; only
// Restore of a valid snapshot clears it.
func (s *State) Diverged() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.diverged
}

// Index returns the last applied index.
func (s *State) Index() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index
}

// Hash returns the last applied index and the running hash over every
// entry applied up to it (carried across snapshots).
func (s *State) Hash() (index uint64, sum [32]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index, s.hash
}

// View returns an immutable view of the state at its applied index. Views
// of the same index are the same value; building one costs
// O(jobs + nodes) pointer copies, never a copy of the records.
func (s *State) View() *View {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.view != nil {
		return s.view
	}
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	s.view = &View{
		Index:    s.index,
		hash:     s.hash,
		lastJob:  s.lastJob,
		jobs:     slices.Clone(s.jobs),
		nodes:    slices.Clone(s.nodes),
		held:     s.res.share(),
		rids:     s.rids.freeze(),
		policy:   s.policy,
		archive:  s.archive,
		switches: s.switches,
		security: s.security,
		changed:  s.changed,
	}
	return s.view
}

// findJob returns the position of job id in jobs.
func findJob(jobs []*cluster.Job, id cluster.JobID) (int, bool) {
	return slices.BinarySearchFunc(jobs, id, func(j *cluster.Job, id cluster.JobID) int {
		switch {
		case j.ID < id:
			return -1
		case j.ID > id:
			return 1
		}
		return 0
	})
}

// jobIn returns job id of jobs (ascending by ID, as findJob takes them).
func jobIn(jobs []*cluster.Job, id cluster.JobID) (*cluster.Job, bool) {
	if i, ok := findJob(jobs, id); ok {
		return jobs[i], true
	}
	return nil, false
}

// findNode returns the position of node name in nodes, or where it would
// be inserted.
func findNode(nodes []*cluster.Node, name string) (int, bool) {
	return slices.BinarySearchFunc(nodes, name, func(n *cluster.Node, name string) int {
		return strings.Compare(n.Name, name)
	})
}

func (s *State) job(id cluster.JobID) (int, *cluster.Job) {
	if i, ok := findJob(s.jobs, id); ok {
		return i, s.jobs[i]
	}
	return -1, nil
}

func (s *State) node(name string) *cluster.Node {
	if i, ok := findNode(s.nodes, name); ok {
		return s.nodes[i]
	}
	return nil
}

// putNode stores n, replacing the record of the same name or inserting it
// in order.
func (s *State) putNode(n *cluster.Node) {
	i, ok := findNode(s.nodes, n.Name)
	if ok {
		s.nodes[i] = n
		return
	}
	s.nodes = slices.Insert(s.nodes, i, n)
}
