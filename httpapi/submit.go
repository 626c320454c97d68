package httpapi

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// A submit's body as the leader takes it: checked (CheckSubmitRequest),
// turned into the spec it asks for (SpecOf), its client request id made
// the caller's own (ScopedRequestID). Another write's request id is
// checked (CheckRequestID) and scoped (ScopedWriteRequestID) the same way.

// CheckSubmitRequest refuses what a submit's body may not hold before
// anything is looked up: a request id too long to scope, a negative time
// limit.
func CheckSubmitRequest(req api.SubmitRequest) error {
	if err := CheckRequestID(req.RequestID); err != nil {
		return err
	}
	if req.TimeLimitS < 0 {
		return cluster.Mark(cluster.ErrInvalid, fmt.Errorf("time_limit_s %d: want 0 (unlimited) or more", req.TimeLimitS))
	}
	return nil
}

// MaxClientRequestID leaves room in cluster.MaxRequestIDBytes for the
// user scope ScopedRequestID adds.
const MaxClientRequestID = cluster.MaxRequestIDBytes - 16

// CheckRequestID refuses a client request id too long to scope.
func CheckRequestID(rid string) error {
	if len(rid) > MaxClientRequestID {
		return cluster.Mark(cluster.ErrInvalid, fmt.Errorf("request_id: %d bytes, want at most %d", len(rid), MaxClientRequestID))
	}
	return nil
}

// ScopedRequestID makes a client's request id the caller's own: the FSM
// deduplicates by it, and another user who sends the same id must get a
// job of their own, not a reference to someone else's.
func ScopedRequestID(who cluster.Identity, rid string) string {
	return scoped("u", who, rid)
}

// Scopes of request ids other than submits' ("u"), one letter each so
// that a scope (a letter, a uid of at most 10 digits, a slash) fits
// MaxClientRequestID's margin.
const (
	ScopeStep    = "s" // srun's step
	ScopeSignal  = "k" // scancel --signal
	ScopeRequeue = "r" // scontrol requeue
	ScopeUpdate  = "t" // scontrol update (TimeLimit=+N)
)

// ScopedWriteRequestID is ScopedRequestID for a write of kind (ScopeStep,
// ScopeSignal, ScopeRequeue, ScopeUpdate): in a scope of its own, so a step's id never names a
// submit's job, nor a signal's a step.
func ScopedWriteRequestID(kind string, who cluster.Identity, rid string) string {
	return scoped(kind, who, rid)
}

// scoped is rid in kind's scope of the caller's, or "" for none.
func scoped(kind string, who cluster.Identity, rid string) string {
	if rid == "" {
		return ""
	}
	return fmt.Sprintf("%s%d/%s", kind, who.UID, rid)
}

// SpecOf builds the spec a submit asks for, as the proven caller who
// (zero fields take Slurm's defaults); an error names a field that does
// not parse. It is pure.
func SpecOf(req api.SubmitRequest, who cluster.Identity) (cluster.Spec, error) {
	begin, err := rfc3339("begin", req.Begin)
	if err != nil {
		return cluster.Spec{}, err
	}
	deadline, err := rfc3339("deadline", req.Deadline)
	if err != nil {
		return cluster.Spec{}, err
	}
	name := req.Name
	if name == "" && len(req.Command) > 0 {
		name = filepath.Base(req.Command[0])
	}
	rq := cluster.Request{
		Nodes:         req.Nodes,
		GPUsPerNode:   req.GPUsPerNode,
		TasksPerNode:  req.TasksPerNode,
		NTasks:        req.NTasks,
		Distribution:  req.Distribution,
		CPUsPerTask:   req.CPUsPerTask,
		TimeLimit:     time.Duration(req.TimeLimitS) * time.Second,
		NodeList:      req.NodeList,
		Exclude:       req.Exclude,
		Constraint:    req.Constraint,
		Exclusive:     req.Exclusive,
		Partition:     req.Partition,
		Switches:      req.Switches,
		MemPerNodeMiB: req.MemPerNodeMiB,
		MemPerCPUMiB:  req.MemPerCPUMiB,
		MemPerGPUMiB:  req.MemPerGPUMiB,
		MemWholeNode:  req.MemWholeNode,
		CPUsPerGPU:    req.CPUsPerGPU,
		MinCPUs:       req.MinCPUs,
		NodesMax:      req.NodesMax,
		SwitchesWait:  time.Duration(req.SwitchesWaitS) * time.Second,
		GPUOption:     req.GPUOption,
	}
	// Zero means "not given": fill Slurm's defaults. Negative values stay
	// and are refused by validation, naming the field.
	return cluster.Spec{
		Name:       name,
		Command:    req.Command,
		Env:        req.Env,
		WorkDir:    req.WorkDir,
		Request:    rq.WithDefaults(),
		User:       who.User,
		UID:        who.UID,
		GID:        who.GID,
		Requeue:    req.Requeue,
		Account:    req.Account,
		SubmitHost: req.SubmitHost,
		QoS:        req.QoS,
		Nice:       req.Nice,
		Batch:      req.Batch,
		Pty:        req.Pty,
		Stdin:      req.Stdin,
		Signal:     req.Signal,

		Dependency: req.Dependency,
		Array:      req.Array,
		Hold:       req.Hold,
		NoKill:     req.NoKill,
		Container:  req.Container,
		Begin:      begin,
		Deadline:   deadline,
	}, nil
}

// rfc3339 is a submit's time field, in UTC; "" is none.
func rfc3339(field, value string) (time.Time, error) {
	if value == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return time.Time{}, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("%s %.64q: want an RFC 3339 time", field, value))
	}
	return t.UTC(), nil
}
