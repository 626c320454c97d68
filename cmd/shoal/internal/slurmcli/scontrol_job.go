package slurmcli

import (
	"fmt"
	"io"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

// PrintJob is scontrol show job's block for one job (shoal job prints it
// too).
func PrintJob(w io.Writer, j api.Job) {
	fmt.Fprintf(w, "JobId=%d JobName=%s UserId=%s\n", j.ID, j.Name, j.User)
	fmt.Fprintf(w, "   Account=%s QOS=%s Nice=%d\n", orNull(j.Account), orNull(j.QoS), j.Nice)
	if j.ArrayJobID != 0 {
		fmt.Fprintf(w, "   ArrayJobId=%d ArrayTaskId=%d ArrayTaskThrottle=%d\n", j.ArrayJobID, j.ArrayTaskID, j.ArrayThrottle)
	}
	if j.Partition != "" {
		fmt.Fprintf(w, "   Partition=%s\n", j.Partition)
	}
	if j.Dependency != "" || j.Hold != "" {
		fmt.Fprintf(w, "   Dependency=%s Hold=%s\n", orNull(j.Dependency), orNone(j.Hold))
	}
	fmt.Fprintf(w, "   JobState=%s Reason=%s ExitCode=%d Incarnation=%d Requeue=%d Restarts=%d\n",
		j.State, orNone(j.Reason), j.ExitCode, j.Incarnation, boolInt(j.Requeue), j.RestartCount)
	if j.ReasonDetail != "" {
		// Slurm's Resources does not say which; Shoal does, on a line of
		// its own so the Reason= field stays Slurm's one word.
		fmt.Fprintf(w, "   ReasonDetail=waiting for %s\n", j.ReasonDetail)
	}
	fmt.Fprintf(w, "   SubmitTime=%s StartTime=%s EndTime=%s\n", orUnknown(j.SubmitTime), orUnknown(j.StartTime), orUnknown(j.EndTime))
	fmt.Fprintf(w, "   NumNodes=%d GPUsPerNode=%d TasksPerNode=%d CPUsPerTask=%d TimeLimit=%ds\n",
		j.NumNodes, j.GPUsPerNode, j.TasksPerNode, j.CPUsPerTask, j.TimeLimitS)
	mem := fmt.Sprintf("%dM", j.MemPerNodeMiB)
	if j.MemWholeNode {
		mem = "node" // all of each node's memory
	}
	fmt.Fprintf(w, "   MinCPUsNode=%d MinMemoryNode=%s CPUsPerGPU=%d\n", j.CPUsPerNode, mem, j.CPUsPerGPU)
	// Slurm shows --exclusive as OverSubscribe=NO.
	overSubscribe := "OK"
	if j.Exclusive {
		overSubscribe = "NO"
	}
	fmt.Fprintf(w, "   ReqNodeList=%s ExcNodeList=%s Features=%s OverSubscribe=%s\n",
		orNull(slurm.CompressHostlist(j.ReqNodeList)), orNull(slurm.CompressHostlist(j.ExcNodeList)), orNull(j.Features), overSubscribe)
	if j.Batch {
		fmt.Fprintf(w, "   Command=(batch script)\n")
	} else {
		fmt.Fprintf(w, "   Command=%s\n", strings.Join(j.Command, " "))
	}
	fmt.Fprintf(w, "   WorkDir=%s\n", j.WorkDir)
	if len(j.Tasks) > 0 {
		fmt.Fprintf(w, "   MasterPort=%d\n", j.MasterPort)
	}
	for i, t := range j.Tasks {
		fmt.Fprintf(w, "   Node[%d]=%s GPUs=%s CPU_IDs=%s Mem=%d State=%s ExitCode=%d\n", i, t.Node, joinInts(t.GPUs), orNone(t.CPUs), t.MemMiB, t.State, t.ExitCode)
	}
	for _, s := range j.Steps {
		fmt.Fprintf(w, "   Step=%d.%d Name=%s State=%s ExitCode=%d NTasks=%d Nodes=%s Command=%s\n",
			j.ID, s.ID, s.Name, s.State, s.ExitCode, s.NTasks, strings.Join(s.Nodes, ","), strings.Join(s.Command, " "))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "Unknown"
	}
	return s
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// orNone is Slurm's "None" for an empty field.
func orNone(s string) string {
	if s == "" {
		return "None"
	}
	return s
}

// joinInts renders GPU indices as "0,1,2".
func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
