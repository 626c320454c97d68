package httpapi

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
)

// Relays are what lives on a job's nodes: its output, its GPU series,
// a terminal, srun's stdin, a PMIx fence and sbcast's copies, served by
// the agent that holds them or relayed to it. The job-wide reads (Logs,
// JobGPU) come once the replica is readable; the dials and Bcast come
// through AcceptRelay (proven caller, readable replica); the Local reads
// answer the agent that gathers them (nodes only).
type Relays interface {
	// Logs are job id's output files from the nodes that hold them, if
	// who may read them, and the replica's index.
	Logs(ctx context.Context, id cluster.JobID, filter api.LogFilter, who cluster.Identity) ([]api.LogChunk, uint64, error)
	// LocalLogs are job id's output files on this node.
	LocalLogs(id cluster.JobID, filter api.LogFilter) ([]api.LogChunk, error)
	// JobGPU is what job id's GPUs did over time on each of its nodes,
	// if who may read it, and the replica's index.
	JobGPU(ctx context.Context, id cluster.JobID, who cluster.Identity) ([]api.JobGPU, uint64, error)
	// LocalGPU is job id's GPU series sampled on this node.
	LocalGPU(id cluster.JobID) []api.JobGPU
	// DialPty connects to the terminal of rank 0 of job id's own task
	// (step -1) or of a step, for who: here or through the agent of the
	// node that runs it, but only here when forwarded (a peer asked). It
	// names that node.
	DialPty(ctx context.Context, id cluster.JobID, step int, who cluster.Identity, forwarded bool) (conn io.ReadWriteCloser, node string, err error)
	// DialStdin connects to the stdin of the ranks on node of job id's
	// own task (step -1) or of a step that read srun's, resumable
	// (api.StdinResumeProtocol) or raw, for who: here or through that
	// node's agent, but only here when forwarded.
	DialStdin(ctx context.Context, id cluster.JobID, step int, node string, resume bool, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, error)
	// DialPMIx connects to the fences of a PMIx step (srun --mpi=pmix)
	// on its first node, for who: here or through that node's agent, but
	// only here when forwarded. It names that node.
	DialPMIx(ctx context.Context, id cluster.JobID, step int, who cluster.Identity, forwarded bool) (io.ReadWriteCloser, string, error)
	// Bcast writes what r holds to f on a node of job id's allocation,
	// for who (the job's owner or root), as the job's user: here when f
	// names this node, else through that node's agent, but only here
	// when forwarded (a peer asked).
	Bcast(ctx context.Context, id cluster.JobID, f api.BcastFile, r io.Reader, who cluster.Identity, forwarded bool) error
}

// HandleLogs is GET /v1/jobs/{id}/logs: the job's output from every node
// that holds some, in order of run, step, rank and stream.
func (s *Server) HandleLogs(w http.ResponseWriter, r *http.Request) {
	id, filter, err := logsOf(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	jobWide(s, w, r, func(ctx context.Context, who cluster.Identity) ([]api.LogChunk, uint64, error) {
		return s.Relays.Logs(ctx, id, filter, who)
	}, func(x, y api.LogChunk) int {
		return cmp.Or(cmp.Compare(x.Incarnation, y.Incarnation), cmp.Compare(x.Step, y.Step),
			cmp.Compare(x.Rank, y.Rank), strings.Compare(x.Stream, y.Stream))
	})
}

// jobWide answers a read of what lives on every node of a job, once the
// replica is readable: read's answer for the caller, in order, at the
// index read gives.
func jobWide[T any](s *Server, w http.ResponseWriter, r *http.Request,
	read func(context.Context, cluster.Identity) ([]T, uint64, error), order func(x, y T) int) {
	if err := s.WaitReadable(r.Context()); err != nil {
		WriteError(w, err)
		return
	}
	out, index, err := read(r.Context(), CallerOf(r).Who())
	if err != nil {
		WriteError(w, err)
		return
	}
	slices.SortStableFunc(out, order)
	WriteJSON(w, http.StatusOK, index, out)
}

// HandleLocalLogs is GET /v1/internal/logs/{id}: this node's share of a
// job's output, for the agent that serves HandleLogs (nodes only).
func (s *Server) HandleLocalLogs(w http.ResponseWriter, r *http.Request) {
	if err := s.RequireNode(r, ""); err != nil {
		WriteError(w, err)
		return
	}
	id, filter, err := logsOf(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	out, err := s.Relays.LocalLogs(id, filter)
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, 0, out)
}

// HandleJobGPU is GET /v1/jobs/{id}/gpu: what the job's GPUs did over
// time on each of its nodes (asked of those nodes: the series are theirs,
// never replicated), in order of run and node.
func (s *Server) HandleJobGPU(w http.ResponseWriter, r *http.Request) {
	id, err := PathJobID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	jobWide(s, w, r, func(ctx context.Context, who cluster.Identity) ([]api.JobGPU, uint64, error) {
		return s.Relays.JobGPU(ctx, id, who)
	}, func(x, y api.JobGPU) int {
		return cmp.Or(cmp.Compare(x.Incarnation, y.Incarnation), cmp.Compare(x.Node, y.Node))
	})
}

// HandleLocalGPU is GET /v1/internal/gpu/{id}: this node's series of a
// job's GPU use, for the agent that serves HandleJobGPU (nodes only).
func (s *Server) HandleLocalGPU(w http.ResponseWriter, r *http.Request) {
	if err := s.RequireNode(r, ""); err != nil {
		WriteError(w, err)
		return
	}
	id, err := PathJobID(r)
	if err != nil {
		WriteError(w, err)
		return
	}
	WriteJSON(w, http.StatusOK, 0, s.Relays.LocalGPU(id))
}

// logsOf is the job and the filter of a logs request.
func logsOf(r *http.Request) (cluster.JobID, api.LogFilter, error) {
	id, err := PathJobID(r)
	if err != nil {
		return 0, api.LogFilter{}, err
	}
	filter, err := ParseLogFilter(r)
	return id, filter, err
}

// ParseLogFilter reads ?step=S&from=KEY:OFFSET... (api.LogFilter.Query's
// inverse).
func ParseLogFilter(r *http.Request) (api.LogFilter, error) {
	var f api.LogFilter
	q := r.URL.Query()
	if s := q.Get("step"); s != "" {
		step, err := strconv.Atoi(s)
		if err != nil || step < -1 {
			return f, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("step %q: want a step id, or -1 for the job's own tasks", s))
		}
		f.Step = &step
	}
	for _, kv := range q["from"] {
		i := strings.LastIndexByte(kv, ':')
		off, err := strconv.ParseInt(kv[i+1:], 10, 64)
		if i < 0 || err != nil || off < 0 {
			return f, cluster.Mark(cluster.ErrInvalid, fmt.Errorf("from %q: want NODE/INCARNATION/RANK/STREAM:OFFSET", kv))
		}
		if f.From == nil {
			f.From = map[string]int64{}
		}
		f.From[kv[:i]] = off
	}
	return f, nil
}
