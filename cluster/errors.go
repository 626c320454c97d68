package cluster

import "errors"

// Kinds of refusal. Code that refuses a request marks the reason with one
// (Mark keeps the reason's message as it is), and callers branch on it with
// errors.Is: the HTTP API answers each kind with one status (package
// httpapi holds that table), tests and tools match the kind. A kind says
// what went wrong for the caller, not how any protocol reports it.
var (
	// ErrInvalid: the request itself is wrong (a field, a value, a form).
	ErrInvalid = errors.New("invalid request")
	// ErrUnauthenticated: the caller proved no identity, or a bad one.
	ErrUnauthenticated = errors.New("not authenticated")
	// ErrForbidden: the caller may not do this.
	ErrForbidden = errors.New("permission denied")
	// ErrNotFound: what the request names does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the request is valid but the current state refuses it.
	ErrConflict = errors.New("conflicts with the current state")
	// ErrUnavailable: this agent cannot answer now (no leader, not the
	// leader, behind the cluster); the same request may succeed later.
	ErrUnavailable = errors.New("unavailable for now")
)

// Reasons narrower than a kind, each defined once here and re-exported by
// the package that produces it under its own name (fsm.ErrLimit,
// fsm.ErrDiverged, fsm.ErrUnsupportedByCluster, consensus.ErrNotLeader are
// these very values), so errors.Is matches either name and the HTTP API
// maps them to statuses without importing the FSM or raft.
var (
	// ErrLimit: a submit would pass a job-count limit of the policy
	// (MaxSubmitJobs, MaxJobCount). The state is unchanged.
	ErrLimit = errors.New("job limit reached")
	// ErrDiverged: a replica could not decode or apply a committed entry;
	// it can no longer be trusted to match the others.
	ErrDiverged = errors.New("replica diverged: cannot apply log entry")
	// ErrUnsupported: the leader will not propose a command type that some
	// raft server does not announce it understands (a rolling upgrade is
	// not finished). Nothing was proposed; retry once every server is
	// upgraded.
	ErrUnsupported = errors.New("command not supported by every server of the cluster")
	// ErrNotLeader: an operation only the raft leader can perform reached
	// a server that is not (or stopped being) the leader.
	ErrNotLeader = errors.New("not the raft leader")
)

// Mark returns err marked with kind: errors.Is(err, kind) holds, and its
// message is err's own. A nil err stays nil.
func Mark(kind, err error) error {
	if err == nil {
		return nil
	}
	return &marked{kind: kind, err: err}
}

// KindOf returns the kind of the outermost Mark in err's chain, or nil
// when nothing marked it.
func KindOf(err error) error {
	var m *marked
	if errors.As(err, &m) {
		return m.kind
	}
	return nil
}

type marked struct{ kind, err error }

func (e *marked) Error() string   { return e.err.Error() }
func (e *marked) Unwrap() []error { return []error{e.err, e.kind} }
