package cluster

import (
	"fmt"
	"strconv"
)

// StdinAll is the Stdin relay value that sends srun's stdin to every task
// (srun --input=all, Slurm's default).
const StdinAll = "all"

// StdinTakes reports whether global rank reads srun's stdin under relay,
// a job's Spec.Stdin or a StepSpec's: "" for none (no relay), StdinAll for
// every rank, or a rank's number (srun -i N).
func StdinTakes(relay string, rank int) bool {
	switch relay {
	case "":
		return false
	case StdinAll:
		return true
	}
	n, err := strconv.Atoi(relay)
	return err == nil && n == rank
}

// ValidateStdin checks a Stdin relay value.
func ValidateStdin(relay string) error {
	if relay == "" || relay == StdinAll {
		return nil
	}
	if n, err := strconv.Atoi(relay); err != nil || n < 0 || strconv.Itoa(n) != relay {
		return fmt.Errorf("stdin %.32q: want %q, a task number or empty", relay, StdinAll)
	}
	return nil
}

// StdinNodes are the nodes whose tasks read srun's stdin, for step (or
// the job's own tasks, step < 0), in node order: srun relays its stdin
// to each of them. Nil when nothing is relayed, or the step is unknown.
func (j *Job) StdinNodes(step int) []string {
	var out []string
	if step < 0 {
		if j.Spec.Stdin == "" || j.Spec.Batch != nil || j.Alloc == nil {
			return nil
		}
		req := j.Spec.Request.WithDefaults()
		for k, count := range req.TaskCountsIn(*j.Alloc) {
			for local := range count {
				if StdinTakes(j.Spec.Stdin, req.RankIn(*j.Alloc, k, local)) {
					out = append(out, j.Alloc.Nodes[k].Node)
					break
				}
			}
		}
		return out
	}
	for _, st := range j.Steps {
		if st.ID != step || st.Spec.Stdin == "" {
			continue
		}
		for i, sn := range st.Nodes {
			for local := range sn.Tasks {
				rank := sn.FirstRank + local
				if st.Spec.NTasks != 0 {
					rank = st.Spec.RankAt(i, local)
				}
				if StdinTakes(st.Spec.Stdin, rank) {
					out = append(out, sn.Node)
					break
				}
			}
		}
	}
	return out
}
