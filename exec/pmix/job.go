package pmix

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/slurm"
)

// MPIEnv is the variable of a step's environment that asks for PMIx:
// srun --mpi (or the SLURM_MPI_TYPE srun inherited) puts it there, and
// the tasks see it, as under Slurm.
const MPIEnv = "SLURM_MPI_TYPE"

// Wanted reports whether the task of l serves PMIx to its ranks: a step
// (only a step: srun --mpi=pmix outside an allocation runs as step 0 of
// one) whose environment, the job's under the step's, names a PMIx type
// in MPIEnv.
func Wanted(l task.Launch) bool {
	t, ok := StepMPI(l)
	return ok && slurm.UsesPMIx(t)
}

// StepMPI is the MPI type (slurm.ParseMPI's) that the step of l names in
// MPIEnv, the job's environment under the step's; ok is false for a
// task that is no step, and for a type ParseMPI refuses.
func StepMPI(l task.Launch) (t string, ok bool) {
	if l.Step == nil {
		return "", false
	}
	v := ""
	for _, env := range [][]string{l.Spec.Env, l.Step.Spec.Env} {
		for _, kv := range env {
			if s, ok := strings.CutPrefix(kv, MPIEnv+"="); ok {
				v = s
			}
		}
	}
	t, err := slurm.ParseMPI(v)
	return t, err == nil
}

// Job is the PMIx namespace of one step: every rank, where it runs, and
// this node's place in it. It is derived from the Launch alone, so every
// node of the step derives the same one.
type Job struct {
	// Nspace names the namespace: "shoal.JOB.INCARNATION.STEP".
	Nspace string
	// ID is PMIX_JOBID, Slurm's "JOB.STEP".
	ID string
	// Nodes are the step's nodes in step order; Ranks[i] the global
	// ranks on Nodes[i], in local order.
	Nodes []string
	Ranks [][]int
	// Size is the number of ranks.
	Size int
	// Node is this node's index in Nodes.
	Node int
}

// JobOf is the namespace of the step l launches, seen from l's node.
func JobOf(l task.Launch) (Job, error) {
	if l.Step == nil {
		return Job{}, errors.New("pmix: a job's own task has no PMIx namespace; only a step does")
	}
	k := l.Key()
	j := Job{
		Nspace: fmt.Sprintf("shoal.%d.%d.%d", uint64(k.Job), k.Incarnation, k.Step),
		ID:     fmt.Sprintf("%d.%d", uint64(k.Job), k.Step),
		Node:   -1,
	}
	self, _, ok := l.StepShare()
	if !ok {
		return Job{}, fmt.Errorf("pmix: step %d has no share on node %s", k.Step, l.NodeName)
	}
	j.Node = self
	seen := map[int]bool{}
	for _, sn := range l.Step.Nodes {
		other := l
		other.NodeName = sn.Node
		ranks := other.Ranks()
		if len(ranks) != sn.Tasks {
			return Job{}, fmt.Errorf("pmix: step %d node %s: %d ranks laid out, %d tasks", k.Step, sn.Node, len(ranks), sn.Tasks)
		}
		for _, r := range ranks {
			if r < 0 || seen[r] {
				return Job{}, fmt.Errorf("pmix: step %d node %s: rank %d given twice or negative", k.Step, sn.Node, r)
			}
			seen[r] = true
		}
		j.Nodes = append(j.Nodes, sn.Node)
		j.Ranks = append(j.Ranks, ranks)
		j.Size += len(ranks)
	}
	if n := l.Step.Spec.NTasks; n > 0 && n != j.Size {
		return Job{}, fmt.Errorf("pmix: step %d: %d ranks laid out, the step has %d", k.Step, j.Size, n)
	}
	for r := range j.Size {
		if !seen[r] {
			return Job{}, fmt.Errorf("pmix: step %d: rank %d runs nowhere (%d ranks)", k.Step, r, j.Size)
		}
	}
	return j, nil
}

// Local is this node's ranks, in local order.
func (j Job) Local() []int { return j.Ranks[j.Node] }

// Rank is a PMIx rank (pmix_rank_t), a distinct type so that the server
// loads it as PMIX_PROC_RANK.
type Rank uint32

// Info is one key of the information registered for the namespace; Value
// is a uint32, uint16, Rank, string, bool or []Info (an array of
// pmix_info_t, as PMIX_PROC_DATA).
type Info struct {
	Key   string
	Value any
}

// PMIx's key names (pmix_common.h), as the server library reads them.
const (
	keySpawned    = "pmix.spawned"
	keyTmpdir     = "pmix.tmpdir"
	keyNsdir      = "pmix.nsdir"
	keyJobID      = "pmix.jobid"
	keyNodeID     = "pmix.nodeid"
	keyUnivSize   = "pmix.univ.size"
	keyJobSize    = "pmix.job.size"
	keyMaxProcs   = "pmix.max.size"
	keyAppSize    = "pmix.app.size"
	keyNumApps    = "pmix.job.napps"
	keyNumNodes   = "pmix.num.nodes"
	keyLocalSize  = "pmix.local.size"
	keyNodeSize   = "pmix.node.size"
	keyNodeMap    = "pmix.nmap"
	keyProcMap    = "pmix.pmap"
	keyLocalPeers = "pmix.lpeers"
	keyLocalLdr   = "pmix.lldr"
	keyAppNum     = "pmix.appnum"
	keyAppLdr     = "pmix.aldr"
	keyProcData   = "pmix.pdata"
	keyRank       = "pmix.rank"
	keyGlobalRank = "pmix.grank"
	keyAppRank    = "pmix.apprank"
	keyLocalRank  = "pmix.lrank"
	keyNodeRank   = "pmix.nrank"
	keyHostname   = "pmix.hname"
)

// NodeMap is PMIX_NODE_MAP in PMIx's plain form, which its parser takes
// where no regex module claims it: the step's nodes, comma-separated.
func (j Job) NodeMap() string { return strings.Join(j.Nodes, ",") }

// ProcMap is PMIX_PROC_MAP in PMIx's plain form: each node's ranks,
// comma-separated, nodes separated by semicolons, in NodeMap's order.
func (j Job) ProcMap() string {
	parts := make([]string, len(j.Ranks))
	for i, rs := range j.Ranks {
		parts[i] = cluster.IndexCSV(rs)
	}
	return strings.Join(parts, ";")
}

// Infos is what the server registers for the namespace on this node
// (PMIx_server_register_nspace): the sizes, the maps of nodes and ranks,
// this node's peers, and each rank's own data (PMIX_PROC_DATA), with its
// local and node rank where it runs here. tmpdir is the session's
// directory on this node (PMIX_TMPDIR and PMIX_NSDIR).
func (j Job) Infos(tmpdir string) []Info {
	local := j.Local()
	size := uint32(j.Size)
	infos := []Info{
		{keySpawned, false},
		{keyTmpdir, tmpdir},
		{keyNsdir, tmpdir},
		{keyJobID, j.ID},
		{keyNodeID, uint32(j.Node)},
		{keyUnivSize, size},
		{keyJobSize, size},
		{keyMaxProcs, size},
		{keyAppSize, size},
		{keyNumApps, uint32(1)},
		{keyNumNodes, uint32(len(j.Nodes))},
		{keyLocalSize, uint32(len(local))},
		{keyNodeSize, uint32(len(local))},
		{keyNodeMap, j.NodeMap()},
		{keyProcMap, j.ProcMap()},
		{keyLocalPeers, cluster.IndexCSV(local)},
		{keyLocalLdr, Rank(slices.Min(local))},
		{keyAppNum, uint32(0)},
		{keyAppLdr, Rank(0)},
	}
	type place struct{ node, local int }
	where := make([]place, j.Size)
	for n, rs := range j.Ranks {
		for l, r := range rs {
			where[r] = place{n, l}
		}
	}
	for r, p := range where {
		data := []Info{
			{keyRank, Rank(r)},
			{keyAppNum, uint32(0)},
			{keyAppLdr, Rank(0)},
			{keyGlobalRank, Rank(r)},
			{keyAppRank, Rank(r)},
			{keyHostname, j.Nodes[p.node]},
			{keyNodeID, uint32(p.node)},
		}
		if p.node == j.Node {
			data = append(data, Info{keyLocalRank, uint16(p.local)}, Info{keyNodeRank, uint16(p.local)})
		}
		infos = append(infos, Info{keyProcData, data})
	}
	return infos
}
