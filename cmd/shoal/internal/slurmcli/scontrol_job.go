package slurmcli

import (
	"cmp"
	"fmt"
	"io"
	"os/user"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// ShowJob says how `scontrol show job` prints a job: Slurm 22.05's
// layout, line by line (testdata/show_job, made by
// make_show_job_golden.sh), with Slurm's placeholders where Shoal has no
// value.
type ShowJob struct {
	// Details is -d's count: from 1, the derived exit code, the job's
	// GRES and each node's CPU_IDs, memory and GPUs.
	Details int
	// OneLiner is -o: each job on one line.
	OneLiner bool
	// Shoal adds Shoal's own lines (shoal job): the wait's detail, the
	// incarnation, the rendezvous port, each node's GPUs and state, the
	// steps.
	Shoal bool
	// Priority is the job's priority (a pending job's multifactor one);
	// a held job shows 0, as in Slurm.
	Priority int64
	// Group is the job's group name ("" shows the number).
	Group string
	view  slurmView
}

// PrintJob is `shoal job`'s block for one job: scontrol show job -dd's,
// then Shoal's own lines.
func PrintJob(w io.Writer, j api.Job) {
	ShowJob{Details: 2, Shoal: true, Priority: j.AdminPriority, Group: groupName(j.GID),
		view: slurmView{now: time.Now(), loc: time.Local}}.Print(w, j)
}

// groupName is gid's name on this host, or "" when it has none.
func groupName(gid int) string {
	g, err := user.LookupGroupId(strconv.Itoa(gid))
	if err != nil {
		return ""
	}
	return g.Name
}

// Print writes j's block (or line, OneLiner).
func (o ShowJob) Print(w io.Writer, j api.Job) {
	lines := o.lines(j)
	if o.OneLiner {
		for _, l := range lines {
			io.WriteString(w, strings.TrimLeft(l, " ")+" ")
		}
		io.WriteString(w, "\n")
		return
	}
	for i, l := range lines {
		if i > 0 {
			io.WriteString(w, "   ")
		}
		io.WriteString(w, l+"\n")
	}
	io.WriteString(w, "   \n\n")
}

// lines are the block's lines, without the first one's indent; a -d
// node line keeps its own ("  Nodes=...": five spaces in all).
func (o ShowJob) lines(j api.Job) []string {
	var ls []string
	add := func(format string, a ...any) { ls = append(ls, fmt.Sprintf(format, a...)) }
	pending := j.State == string(cluster.JobPending)
	allocated := len(j.Nodes) > 0

	array := ""
	if j.ArrayJobID != 0 {
		array = fmt.Sprintf(" ArrayJobId=%d ArrayTaskId=%d", j.ArrayJobID, j.ArrayTaskID)
	}
	add("JobId=%d%s JobName=%s", j.ID, array, j.Name)
	group := o.Group
	if group == "" {
		group = strconv.Itoa(j.GID)
	}
	add("UserId=%s(%d) GroupId=%s(%d) MCS_label=N/A", j.User, j.UID, group, j.GID)
	prio := o.Priority
	if j.Hold != "" {
		prio = 0
	}
	add("Priority=%d Nice=%d Account=%s QOS=%s", prio, j.Nice, orNull(j.Account), orNull(j.QoS))
	add("JobState=%s Reason=%s Dependency=%s", j.State, orNone(j.Reason), orNull(j.Dependency))
	add("Requeue=%d Restarts=%d BatchFlag=%d Reboot=0 ExitCode=%s",
		boolInt(j.Requeue), j.RestartCount, boolInt(j.Batch), sacctExitCode(j.ExitCode))
	if o.Details > 0 {
		derived := 0
		for _, s := range j.Steps {
			derived = max(derived, s.ExitCode)
		}
		add("DerivedExitCode=%s", sacctExitCode(derived))
	}
	limit := "UNLIMITED"
	if j.TimeLimitS > 0 {
		limit = slurm.FormatHMS(time.Duration(j.TimeLimitS) * time.Second)
	}
	add("RunTime=%s TimeLimit=%s TimeMin=N/A", slurm.FormatHMS(Elapsed(j, o.view.now)), limit)
	eligible := o.view.date(j.SubmitTime, "Unknown")
	if j.Begin != "" {
		eligible = o.view.date(j.Begin, "Unknown") // --begin: Slurm's EligibleTime is it
	}
	if pending && (j.Hold != "" || j.Dependency != "") {
		eligible = "Unknown" // not eligible yet
	}
	add("SubmitTime=%s EligibleTime=%s", o.view.date(j.SubmitTime, "Unknown"), eligible)
	add("AccrueTime=%s", eligible)
	if n := len(j.Resizes); n > 0 {
		// Slurm prints it only for a job whose allocation changed.
		add("ResizeTime=%s", o.view.date(j.Resizes[n-1].Time, "Unknown"))
	}
	end := o.view.date(j.EndTime, "Unknown")
	if start, err := time.Parse(time.RFC3339, j.StartTime); err == nil && j.EndTime == "" && j.TimeLimitS > 0 {
		end = o.view.date(start.Add(time.Duration(j.TimeLimitS)*time.Second).Format(time.RFC3339), "Unknown")
	}
	add("StartTime=%s EndTime=%s Deadline=%s", o.view.date(j.StartTime, "Unknown"), end, o.view.date(j.Deadline, "N/A"))
	lastEval := o.view.date(j.StartTime, o.view.date(j.SubmitTime, "Unknown"))
	add("SuspendTime=None SecsPreSuspend=0 LastSchedEval=%s Scheduler=Main", lastEval)
	part := j.Partition
	if part == "" {
		part = ShoalPartition
	}
	// Slurm's AllocNode:Sid is the submit host and session; Shoal knows
	// the host only.
	add("Partition=%s AllocNode:Sid=%s:0", part, orNull(j.SubmitHost))
	add("ReqNodeList=%s ExcNodeList=%s", orNull(slurm.CompressHostlist(j.ReqNodeList)), orNull(slurm.CompressHostlist(j.ExcNodeList)))
	add("NodeList=%s", slurm.CompressHostlist(j.Nodes))
	if allocated {
		add("BatchHost=%s", j.Nodes[0])
	}
	nodes := strconv.Itoa(j.NumNodes)
	if pending {
		nodes = fmt.Sprintf("%d-%d", j.NumNodes, max(j.NumNodes, j.NodesMax))
	}
	cpus, mem := j.CPUsPerNode*j.NumNodes, j.MemPerNodeMiB*uint64(j.NumNodes)
	if allocated {
		cpus, mem = 0, 0
		for _, t := range j.Tasks {
			cpus += cpuCount(t.CPUs)
			mem += t.MemMiB
		}
	}
	ntasks := j.TasksPerNode * j.NumNodes
	if j.NTasks > 0 { // -n: its count, however laid out
		ntasks = j.NTasks
	}
	add("NumNodes=%s NumCPUs=%d NumTasks=%d CPUs/Task=%d ReqB:S:C:T=0:0:*:*", nodes, cpus, ntasks, j.CPUsPerTask)
	tres := fmt.Sprintf("cpu=%d,mem=%s,node=%d,billing=%d", cpus, tresMem(mem), j.NumNodes, cpus)
	if j.GPUsPerNode > 0 {
		tres += fmt.Sprintf(",gres/gpu=%d", j.GPUsPerNode*j.NumNodes)
	}
	add("TRES=%s", tres)
	add("Socks/Node=* NtasksPerN:B:S:C=%d:0:*:* CoreSpec=*", j.TasksPerNode)
	if o.Details > 0 && allocated {
		jobGres := "(null)"
		if j.GPUsPerNode > 0 {
			jobGres = fmt.Sprintf("gpu:%d", j.GPUsPerNode)
		}
		add("JOB_GRES=%s", jobGres)
		for _, t := range j.Tasks {
			gres := ""
			if len(t.GPUs) > 0 {
				gres = fmt.Sprintf("gpu:%d(IDX:%s)", len(t.GPUs), cluster.CPUList(t.GPUs))
			}
			add("  Nodes=%s CPU_IDs=%s Mem=%d GRES=%s", t.Node, t.CPUs, t.MemMiB, gres)
		}
	}
	minMem := fmt.Sprintf("%dM", j.MemPerNodeMiB)
	if j.MemWholeNode {
		minMem = "0" // --mem=0: all of each node's memory
	}
	add("MinCPUsNode=%d MinMemoryNode=%s MinTmpDiskNode=0", j.CPUsPerNode, minMem)
	add("Features=%s DelayBoot=00:00:00", orNull(j.Features))
	overSubscribe := "OK" // Slurm shows --exclusive as OverSubscribe=NO
	if j.Exclusive {
		overSubscribe = "NO"
	}
	add("OverSubscribe=%s Contiguous=0 Licenses=(null) Network=(null)", overSubscribe)
	// A batch script's path (Shoal keeps the script, not its path); an
	// interactive job's program, without its arguments, as Slurm shows.
	command := "(null)"
	if !j.Batch && len(j.Command) > 0 {
		command = orNull(j.Command[0])
	}
	add("Command=%s", command)
	add("WorkDir=%s", j.WorkDir)
	if j.Comment != "" {
		add("Comment=%s ", j.Comment) // Slurm's trailing space
	}
	if j.Batch {
		add("StdErr=%s", j.StdErr)
		add("StdIn=%s", cmp.Or(j.StdIn, "/dev/null")) // an agent before sbatch -i sent none
		add("StdOut=%s", j.StdOut)
	}
	add("Power=")
	if j.GPUsPerNode > 0 {
		add("TresPerNode=gres:gpu:%d", j.GPUsPerNode)
	}
	if j.Container != "" {
		add("Container=%s", j.Container) // Slurm's optional line, near the end
	}
	if o.Shoal {
		ls = append(ls, shoalLines(j)...)
	}
	return ls
}

// shoalLines are what `shoal job` adds to Slurm's block.
func shoalLines(j api.Job) []string {
	var ls []string
	if j.ReasonDetail != "" {
		// Slurm's Resources does not say which; Shoal does, on a line of
		// its own so the Reason= field stays Slurm's one word.
		ls = append(ls, "ReasonDetail=waiting for "+j.ReasonDetail)
	}
	if !j.Batch && len(j.Command) > 1 {
		ls = append(ls, "CommandLine="+strings.Join(j.Command, " "))
	}
	ls = append(ls, fmt.Sprintf("Incarnation=%d GPUsPerNode=%d TasksPerNode=%d CPUsPerGPU=%d MasterPort=%d Hold=%s",
		j.Incarnation, j.GPUsPerNode, j.TasksPerNode, j.CPUsPerGPU, j.MasterPort, orNone(j.Hold)))
	if j.ArrayJobID != 0 {
		ls = append(ls, fmt.Sprintf("ArrayTaskThrottle=%d", j.ArrayThrottle))
	}
	for i, t := range j.Tasks {
		ls = append(ls, fmt.Sprintf("Node[%d]=%s GPUs=%s CPU_IDs=%s Mem=%d State=%s ExitCode=%d", i, t.Node, cluster.IndexCSV(t.GPUs), orNone(t.CPUs), t.MemMiB, t.State, t.ExitCode))
	}
	for _, s := range j.Steps {
		ls = append(ls, fmt.Sprintf("Step=%d.%d Name=%s State=%s ExitCode=%d NTasks=%d Nodes=%s Command=%s",
			j.ID, s.ID, s.Name, s.State, s.ExitCode, s.NTasks, strings.Join(s.Nodes, ","), strings.Join(s.Command, " ")))
	}
	return ls
}

// cpuCount is how many CPUs a cpulist ("0-3,8") names.
func cpuCount(list string) int {
	n := 0
	for part := range strings.SplitSeq(list, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		n += max(0, b-a+1)
	}
	return n
}

// tresMem is a TRES memory count as Slurm prints it: in the largest unit
// that divides it (4000M, 4G, 1T).
func tresMem(mib uint64) string {
	switch {
	case mib > 0 && mib%(1<<20) == 0:
		return fmt.Sprintf("%dT", mib>>20)
	case mib > 0 && mib%(1<<10) == 0:
		return fmt.Sprintf("%dG", mib>>10)
	}
	return fmt.Sprintf("%dM", mib)
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
