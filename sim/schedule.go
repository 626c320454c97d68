package sim

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
)

// WriteSchedule writes one CSV row per trace job, in trace order:
// job_id,submit,start,end,nodes,gpus_per_node. Times are seconds on the
// trace's clock; nodes is the gang's node names in rank order joined by
// ";", gpus_per_node the GPUs each of them gives, aligned with nodes. An
// unplaceable job has start, end, nodes and gpus_per_node empty.
func WriteSchedule(w io.Writer, r *Result) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"job_id", "submit", "start", "end", "nodes", "gpus_per_node"}); err != nil {
		return err
	}
	row := make([]string, 6)
	var names, gpus []string
	for i := range r.Jobs {
		o := &r.Jobs[i]
		row[0], row[1] = o.Job.ID, strconv.FormatInt(o.Job.Submit, 10)
		row[2], row[3], row[4], row[5] = "", "", "", ""
		if o.Ran() {
			names, gpus = names[:0], gpus[:0]
			for _, a := range o.Nodes {
				names = append(names, a.Node)
				gpus = append(gpus, strconv.Itoa(len(a.GPUs)))
			}
			row[2], row[3] = strconv.FormatInt(o.Start, 10), strconv.FormatInt(o.End, 10)
			row[4], row[5] = strings.Join(names, ";"), strings.Join(gpus, ";")
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
