package pmi2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/exec/pmix"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/slurm"
)

// Wanted reports whether the task of l serves PMI-2 (and PMI-1) to its
// ranks: a step whose environment, the job's under the step's, names
// pmi2 in SLURM_MPI_TYPE (srun --mpi=pmi2 puts it there).
func Wanted(l task.Launch) bool {
	t, ok := pmix.StepMPI(l)
	return ok && t == slurm.MPIPMI2
}

// ProcessMapping is PMI_process_mapping of a step whose node i runs the
// global ranks ranks[i]: "(vector,(START,NODES,PPN),...)", MPICH's
// form, where each block gives PPN consecutive ranks to each of NODES
// nodes from START in turn. Ranks are walked in order; each run of ranks
// on one node is a block of one node, and runs of the same length on
// consecutive nodes merge, so a block layout of even nodes is one block
// and a cyclic one repeats "(0,NODES,1)".
func ProcessMapping(ranks [][]int) (string, error) {
	size := 0
	for _, rs := range ranks {
		size += len(rs)
	}
	nodeOf := make([]int, size)
	for i := range nodeOf {
		nodeOf[i] = -1
	}
	for n, rs := range ranks {
		for _, r := range rs {
			if r < 0 || r >= size || nodeOf[r] != -1 {
				return "", fmt.Errorf("pmi2: rank %d on node %d: ranks must be 0 to %d, each once", r, n, size-1)
			}
			nodeOf[r] = n
		}
	}
	type block struct{ start, nodes, ppn int }
	var blocks []block
	for r := 0; r < size; {
		n, run := nodeOf[r], 0
		for r < size && nodeOf[r] == n {
			r++
			run++
		}
		if len(blocks) > 0 {
			b := &blocks[len(blocks)-1]
			if b.ppn == run && b.start+b.nodes == n {
				b.nodes++
				continue
			}
		}
		blocks = append(blocks, block{n, 1, run})
	}
	var sb strings.Builder
	sb.WriteString("(vector")
	for _, b := range blocks {
		fmt.Fprintf(&sb, ",(%d,%d,%d)", b.start, b.nodes, b.ppn)
	}
	sb.WriteString(")")
	return sb.String(), nil
}

// Job is what the server tells a node's ranks: the step's layout (from
// pmix.JobOf: every node derives the same) and its mapping.
type Job struct {
	pmix.Job
	Mapping string
}

// JobOf is the step of l seen from l's node.
func JobOf(l task.Launch) (Job, error) {
	j, err := pmix.JobOf(l)
	if err != nil {
		return Job{}, err
	}
	m, err := ProcessMapping(j.Ranks)
	if err != nil {
		return Job{}, err
	}
	return Job{Job: j, Mapping: m}, nil
}

// Attr is the job attribute key of PMI-2 (info-getjobattr), also in
// the KVS for PMI-1 clients, which read it with get.
func (j Job) Attr(key string) (string, bool) {
	switch key {
	case "PMI_process_mapping":
		return j.Mapping, true
	case "universeSize":
		return strconv.Itoa(j.Size), true
	}
	return "", false
}

// encodeKVS is a node's puts of one fence, canonical: keys sorted, each
// key and value with its length (uvarint) before it, so that nodes'
// blobs concatenated in node order decode as one.
func encodeKVS(kvs map[string]string) []byte {
	var out []byte
	for _, k := range slices.Sorted(maps.Keys(kvs)) {
		out = binary.AppendUvarint(out, uint64(len(k)))
		out = append(out, k...)
		v := kvs[k]
		out = binary.AppendUvarint(out, uint64(len(v)))
		out = append(out, v...)
	}
	return out
}

// decodeKVS adds the pairs of blob (nodes' encodeKVS concatenated) to
// into; a key given twice takes the later node's value.
func decodeKVS(blob []byte, into map[string]string) error {
	next := func() (string, error) {
		n, w := binary.Uvarint(blob)
		if w <= 0 || n > uint64(len(blob)-w) {
			return "", errors.New("pmi2: fence data: truncated")
		}
		s := string(blob[w : w+int(n)])
		blob = blob[w+int(n):]
		return s, nil
	}
	for len(blob) > 0 {
		k, err := next()
		if err != nil {
			return err
		}
		v, err := next()
		if err != nil {
			return err
		}
		into[k] = v
	}
	return nil
}
