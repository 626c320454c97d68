package slurmcli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/slurm"
)

// ShoalPartition is the partition every job and node is in when the
// queue policy declares none: the PARTITION columns of squeue, sinfo and
// sacct show this one name then.
const ShoalPartition = "shoal"

// jobPartition is the job's partition, or ShoalPartition when the queue
// policy has none.
func jobPartition(j api.Job) string {
	if j.Partition != "" {
		return j.Partition
	}
	return ShoalPartition
}

// Slurm 22.05's squeue formats.
const (
	squeueDefaultFormat = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
	squeueLongFormat    = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"
)

var squeueOpts = []slurm.Option{
	optUser,
	{Long: "me", Arg: slurm.NoArg},
	{Long: "states", Short: 't', Arg: slurm.NeedArg},
	optJobs,
	{Long: "name", Short: 'n', Arg: slurm.NeedArg},
	optPartition,
	optNoheaderH,
	optLong,
	optFormat,
	{Long: "Format", Short: 'O', Arg: slurm.NeedArg},
	{Long: "all", Short: 'a', Arg: slurm.NoArg},
	{Long: "array", Short: 'r', Arg: slurm.NoArg},
	optVerbose,
	{Long: "sort", Short: 'S', Arg: slurm.NeedArg, Unsupported: "jobs are listed by state, then in queue order"},
	{Long: "iterate", Short: 'i', Arg: slurm.NeedArg, Unsupported: "run it under watch(1)"},
	{Long: "steps", Short: 's', Arg: slurm.OptArg, Unsupported: "sacct -j N lists a job's steps"},
	{Long: "start", Arg: slurm.NoArg, Unsupported: "Shoal does not report expected start times"},
	{Long: "account", Short: 'A', Arg: slurm.NeedArg},
	optQoS,
	{Long: "nodelist", Short: 'w', Arg: slurm.NeedArg},
	optClusters,
	{Long: "json", Arg: slurm.NoArg, Unsupported: "use `shoal queue --json`"},
	optHelp,
	optUsage,
}

// parseStates turns a squeue -t (or sacct -s) list of codes or names
// into long state names (slurm.ParseJobState); all is set, and the map
// nil, with every state wanted.
func parseStates(list string) (map[string]bool, bool, error) {
	want := map[string]bool{}
	for _, s := range splitList(list) {
		if strings.EqualFold(s, "all") {
			return nil, true, nil
		}
		name, ok := slurm.ParseJobState(s)
		if !ok {
			return nil, false, slurmErrorf("Invalid job state specified: %s\nValid job states include: %s", s, strings.Join(slurm.JobStateNames(), ","))
		}
		want[name] = true
	}
	return want, false, nil
}

// liveState reports whether a job is one squeue shows by default.
func liveState(state string) bool {
	return state == "PENDING" || state == "RUNNING" || state == "REQUEUED"
}

// jobSel is one -j id: a job (and, when it is an array, its elements) or
// one array element (task >= 0).
type jobSel struct {
	id   uint64
	task int
}

// parseJobList parses -j's comma list of job references (slurm.ParseJobRef),
// N or N_M; an error is worded as squeue words it.
func parseJobList(list string) ([]jobSel, error) {
	var ids []jobSel
	for _, s := range splitList(list) {
		r, err := slurm.ParseJobRef(s)
		if err != nil || r.List {
			return nil, slurmErrorf("Invalid job id: %s", s)
		}
		sel := jobSel{id: r.ID, task: -1}
		if r.Tasks != nil {
			sel.task = r.Tasks[0]
		}
		ids = append(ids, sel)
	}
	return ids, nil
}

// selects reports whether job j is one of the -j selections.
func selects(sels []jobSel, j api.Job) bool {
	for _, s := range sels {
		switch {
		case s.task < 0 && (j.ID == s.id || j.ArrayJobID == s.id):
			return true
		case s.task >= 0 && j.ArrayJobID == s.id && j.ArrayTaskID == s.task:
			return true
		}
	}
	return false
}

// groupPendingArrays folds each array's pending elements into one row, as
// squeue shows them unless -r: the first pending element's, with the id
// "12_[3-9%2]".
func groupPendingArrays(jobs []api.Job) []api.Job {
	type group struct {
		row   int
		tasks []int
	}
	groups := map[uint64]*group{}
	var out []api.Job
	for _, j := range jobs {
		if j.ArrayJobID == 0 || j.State != "PENDING" {
			out = append(out, j)
			continue
		}
		g, ok := groups[j.ArrayJobID]
		if !ok {
			g = &group{row: len(out)}
			groups[j.ArrayJobID] = g
			out = append(out, j)
		}
		g.tasks = append(g.tasks, j.ArrayTaskID)
	}
	for id, g := range groups {
		if len(g.tasks) > 1 {
			out[g.row].JobIDString = fmt.Sprintf("%d_[%s]", id, cluster.IndexList(g.tasks, out[g.row].ArrayThrottle))
		}
	}
	return out
}

// resolveUsers turns -u's names or uids into user names.
func resolveUsers(list string) []string {
	var out []string
	for _, u := range splitList(list) {
		if _, err := strconv.Atoi(u); err == nil {
			if pw, err := user.LookupId(u); err == nil {
				u = pw.Username
			}
		}
		out = append(out, u)
	}
	return out
}

// jobFilter is what squeue and sacct select jobs by besides their ids,
// states and times.
type jobFilter struct {
	users    []string // -u
	names    []string // -n (sacct: --name)
	nodes    []string // -w (sacct: -N): jobs on any of these nodes
	parts    []string // -p (sacct: -r): only these partitions
	accounts []string // -A
	qos      []string // -q
}

// option takes v when it is one of jobFilter's options (named as squeue
// or sacct names it); it ignores any other.
func (f *jobFilter) option(v slurm.OptValue) error {
	var err error
	switch v.Opt.Long {
	case "user":
		f.users = append(f.users, resolveUsers(v.Value)...)
	case "name":
		f.names = append(f.names, splitList(v.Value)...)
	case "nodelist":
		f.nodes, err = expandNodeFilter(v.Value)
	case "partition":
		f.parts = append(f.parts, splitList(v.Value)...)
	case "account", "accounts":
		f.accounts = append(f.accounts, splitList(v.Value)...)
	case "qos":
		f.qos = append(f.qos, splitList(v.Value)...)
	}
	return err
}

// matches says whether j passes every filter, its users only when byUser.
func (f jobFilter) matches(j api.Job, byUser bool) bool {
	switch {
	case len(f.parts) > 0 && !slices.Contains(f.parts, jobPartition(j)):
		return false
	case byUser && len(f.users) > 0 && !slices.Contains(f.users, j.User):
		return false
	case len(f.accounts) > 0 && !slices.Contains(f.accounts, j.Account):
		return false
	case len(f.qos) > 0 && !slices.Contains(f.qos, j.QoS):
		return false
	case len(f.nodes) > 0 && !onNodes(j, f.nodes):
		return false
	case len(f.names) > 0 && !slices.Contains(f.names, j.Name):
		return false
	}
	return true
}

// squeueQuery is what squeue was asked to show.
type squeueQuery struct {
	jobFilter
	ids       []jobSel
	states    map[string]bool
	allStates bool
	noHeader  bool
	long      bool
	array     bool   // -r: one row per array element
	format    string // -o
	format2   string // -O
}

func (q squeueQuery) match(j api.Job) bool {
	switch {
	case !q.matches(j, true):
		return false
	case len(q.ids) > 0 && !selects(q.ids, j):
		return false
	case q.allStates:
		return true
	case q.states != nil:
		return q.states[j.State]
	}
	return liveState(j.State)
}

// Squeue is squeue: pending and running jobs in Slurm's columns.
func Squeue(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
	vals, err := cliOptions("squeue", squeueOpts, args, stderr)
	if err != nil {
		return err
	}
	q := squeueQuery{format: os.Getenv("SQUEUE_FORMAT"), format2: os.Getenv("SQUEUE_FORMAT2")}
	for _, v := range vals {
		switch v.Opt.Long {
		case "me":
			q.users = append(q.users, currentIdentity().User)
		case "states":
			if q.states, q.allStates, err = parseStates(v.Value); err != nil {
				return err
			}
		case "jobs":
			if q.ids, err = parseJobList(v.Value); err != nil {
				return err
			}
		case "noheader":
			q.noHeader = true
		case "long":
			q.long = true
		case "array":
			q.array = true
		case "format":
			q.format, q.format2 = v.Value, ""
		case "Format":
			q.format2, q.format = v.Value, ""
		default:
			if err := q.option(v); err != nil {
				return err
			}
		}
	}
	c, err := connect()
	if err != nil {
		return err
	}
	var jobs []api.Job
	if len(q.ids) == 1 {
		// As squeue loads a single job: an unknown id is an error.
		var j api.Job
		if sel := q.ids[0]; sel.task >= 0 {
			j, err = c.JobByRef(ctx, fmt.Sprintf("%d_%d", sel.id, sel.task))
		} else {
			j, err = c.Job(ctx, sel.id)
		}
		if api.IsNotFound(err) {
			fmt.Fprintln(stderr, "slurm_load_jobs error: Invalid job id specified")
			return exitcode.Code(1)
		}
		if err != nil {
			return err
		}
		jobs = []api.Job{j}
		if q.ids[0].task < 0 && j.ArrayJobID == j.ID {
			// The array's own id: every element.
			if jobs, err = c.Jobs(ctx, true); err != nil {
				return err
			}
		}
	} else {
		wantAll := q.allStates || len(q.ids) > 0
		for st := range q.states {
			wantAll = wantAll || !liveState(st)
		}
		if jobs, err = c.Jobs(ctx, wantAll); err != nil {
			return err
		}
	}
	var shown []api.Job
	for _, j := range jobs {
		if q.match(j) {
			shown = append(shown, j)
		}
	}
	sortSqueue(shown)
	if !q.array {
		shown = groupPendingArrays(shown)
	}
	v := slurmView{now: time.Now(), loc: time.Local}
	if q.long && q.format == "" && q.format2 == "" {
		fmt.Fprintln(stdout, v.now.In(v.loc).Format("Mon Jan _2 15:04:05 2006"))
	}
	if q.format2 != "" {
		cols, err := parseSqueueFormat2(q.format2)
		if err != nil {
			return err
		}
		printSqueue(stdout, cols, shown, v, !q.noHeader)
		return nil
	}
	format := q.format
	if format == "" {
		format = squeueDefaultFormat
		if q.long {
			format = squeueLongFormat
		}
	}
	cols, bad := parseSqueueFormat(format)
	for _, b := range bad {
		fmt.Fprintf(stderr, "squeue: error: Invalid job format specification: %s\n", b)
	}
	printSqueue(stdout, cols, shown, v, !q.noHeader)
	return nil
}

// sortSqueue orders jobs as squeue does by default: by state name, then
// in queue order (Shoal queues in submission order, so by job id).
func sortSqueue(jobs []api.Job) {
	slices.SortStableFunc(jobs, func(a, b api.Job) int {
		if c := strings.Compare(a.State, b.State); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// slurmView is what the formatters need besides a job: the clock and the
// time zone Slurm's dates are printed in.
type slurmView struct {
	now   time.Time
	loc   *time.Location
	units int // sacct --units (unitKilo, ...); unitNone: sacct's own choice
}

// date renders an RFC 3339 time as Slurm does (local time, no zone), or
// none when the time is not set.
func (v slurmView) date(s, none string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return none
	}
	return t.In(v.loc).Format("2006-01-02T15:04:05")
}

// squeueField is one % field of squeue -o (and its -O name).
type squeueField struct {
	letter byte
	long   string // -O name, lower case
	header string
	value  func(j api.Job, v slurmView) string
}

var squeueFields = []squeueField{
	{'i', "jobid", "JOBID", func(j api.Job, _ slurmView) string { return JobIDString(j) }},
	{'A', "jobarrayid", "JOBID", func(j api.Job, _ slurmView) string { return strconv.FormatUint(arrayJobID(j), 10) }},
	{'F', "arrayjobid", "ARRAY_JOB_ID", func(j api.Job, _ slurmView) string { return strconv.FormatUint(arrayJobID(j), 10) }},
	{'K', "arraytaskid", "ARRAY_TASK_ID", func(j api.Job, _ slurmView) string {
		if j.ArrayJobID == 0 {
			return "N/A"
		}
		if id, ok := strings.CutPrefix(JobIDString(j), strconv.FormatUint(j.ArrayJobID, 10)+"_"); ok {
			return strings.Trim(id, "[]")
		}
		return strconv.Itoa(j.ArrayTaskID)
	}},
	{'j', "name", "NAME", func(j api.Job, _ slurmView) string { return j.Name }},
	{'u', "username", "USER", func(j api.Job, _ slurmView) string { return j.User }},
	{'t', "statecompact", "ST", func(j api.Job, _ slurmView) string { return slurm.JobStateCode(j.State) }},
	{'T', "state", "STATE", func(j api.Job, _ slurmView) string { return j.State }},
	{'M', "timeused", "TIME", func(j api.Job, v slurmView) string { return slurm.FormatElapsed(Elapsed(j, v.now)) }},
	{'l', "timelimit", "TIME_LIMIT", func(j api.Job, _ slurmView) string {
		return slurm.FormatTime(time.Duration(j.TimeLimitS) * time.Second)
	}},
	{'L', "timeleft", "TIME_LEFT", func(j api.Job, v slurmView) string {
		if j.TimeLimitS == 0 {
			return "UNLIMITED"
		}
		return slurm.FormatElapsed(max(0, time.Duration(j.TimeLimitS)*time.Second-Elapsed(j, v.now)))
	}},
	{'D', "numnodes", "NODES", func(j api.Job, _ slurmView) string { return strconv.Itoa(jobNodeCount(j)) }},
	{'C', "numcpus", "CPUS", func(j api.Job, _ slurmView) string { return strconv.Itoa(jobCPUs(j)) }},
	{'c', "mincpus", "MIN_CPUS", func(j api.Job, _ slurmView) string { return strconv.Itoa(max(1, j.CPUsPerTask)) }},
	{'b', "tres-per-node", "TRES_PER_NODE", func(j api.Job, _ slurmView) string {
		if j.GPUsPerNode == 0 {
			return "N/A"
		}
		return fmt.Sprintf("gres:gpu:%d", j.GPUsPerNode)
	}},
	{'N', "nodelist", "NODELIST", func(j api.Job, _ slurmView) string { return slurm.CompressHostlist(j.Nodes) }},
	{'R', "reasonlist", "NODELIST(REASON)", func(j api.Job, _ slurmView) string {
		if showsReason(j) {
			return "(" + jobReason(j) + ")"
		}
		return slurm.CompressHostlist(j.Nodes)
	}},
	{'r', "reason", "REASON", func(j api.Job, _ slurmView) string { return jobReason(j) }},
	{'P', "partition", "PARTITION", func(j api.Job, _ slurmView) string { return jobPartition(j) }},
	{'a', "account", "ACCOUNT", func(j api.Job, _ slurmView) string { return orNull(j.Account) }},
	{'V', "submittime", "SUBMIT_TIME", func(j api.Job, v slurmView) string { return v.date(j.SubmitTime, "N/A") }},
	{'S', "starttime", "START_TIME", func(j api.Job, v slurmView) string { return v.date(j.StartTime, "N/A") }},
	{'e', "endtime", "END_TIME", func(j api.Job, v slurmView) string {
		if j.EndTime != "" {
			return v.date(j.EndTime, "N/A")
		}
		start, err := time.Parse(time.RFC3339, j.StartTime)
		switch {
		case err != nil:
			return "N/A"
		case j.TimeLimitS == 0:
			return "NONE"
		}
		return v.date(start.Add(time.Duration(j.TimeLimitS)*time.Second).Format(time.RFC3339), "N/A")
	}},
	{'Z', "workdir", "WORK_DIR", func(j api.Job, _ slurmView) string { return j.WorkDir }},
	{'o', "command", "COMMAND", func(j api.Job, _ slurmView) string {
		if j.Batch {
			return "(batch script)"
		}
		return strings.Join(j.Command, " ")
	}},
}

// jobNodeCount is the job's node count: its nodes once placed, else what
// it asked for.
func jobNodeCount(j api.Job) int {
	if len(j.Nodes) > 0 {
		return len(j.Nodes)
	}
	return j.NumNodes
}

// jobCPUs is the CPUs the job holds (or asks for): its tasks (-n, or
// tasks per node on every node) times CPUs per task.
func jobCPUs(j api.Job) int {
	if j.NTasks > 0 {
		return j.NTasks * max(1, j.CPUsPerTask)
	}
	return jobNodeCount(j) * max(1, j.TasksPerNode) * max(1, j.CPUsPerTask)
}

// showsReason reports whether squeue's NODELIST(REASON) shows the reason
// in parentheses instead of the nodes: for pending, failed and timed-out
// jobs, as Slurm does.
func showsReason(j api.Job) bool {
	switch j.State {
	case "PENDING", "FAILED", "TIMEOUT", "REQUEUED":
		return true
	}
	return false
}

// jobReason is squeue's REASON: the agent's, or the one Slurm gives a job
// that ended that way.
func jobReason(j api.Job) string {
	if j.Reason != "" {
		return j.Reason
	}
	switch j.State {
	case "FAILED":
		return "NonZeroExitCode"
	case "TIMEOUT":
		return "TimeLimit"
	case "NODE_FAIL", "REQUEUED":
		return "NodeDown"
	}
	return "None"
}

// squeueCol is one piece of a parsed squeue format: a field with its
// width and alignment, or literal text.
type squeueCol = formatCol[squeueField]

// parseSqueueFormat parses squeue -o: %[.][width]letter fields and text.
// Like squeue it reports a specification it does not know and prints it
// as text; "%%" is a literal "%".
func parseSqueueFormat(format string) ([]squeueCol, []string) {
	var cols []squeueCol
	var bad []string
	text := func(t string) {
		// An unknown specification joins the text around it, as in squeue.
		if n := len(cols); n > 0 && cols[n-1].field == nil {
			cols[n-1].literal += t
			return
		}
		cols = append(cols, squeueCol{literal: t})
	}
	_ = scanFormat(format, false, text, func(f formatSpec) error {
		field := squeueFieldByLetter(f.letter)
		if f.letter == 0 || field == nil {
			if f.letter != 0 {
				bad = append(bad, string(f.letter))
			}
			text(f.raw)
			return nil
		}
		cols = append(cols, specCol(field, f))
		return nil
	})
	return cols, bad
}

func squeueFieldByLetter(c byte) *squeueField {
	for i := range squeueFields {
		if squeueFields[i].letter == c {
			return &squeueFields[i]
		}
	}
	return nil
}

// parseSqueueFormat2 parses squeue -O: comma-separated names, each with an
// optional ":[.]width" (default 20, left-aligned).
func parseSqueueFormat2(format string) ([]squeueCol, error) {
	var cols []squeueCol
	for _, item := range splitList(format) {
		name, size, hasSize := strings.Cut(item, ":")
		col := squeueCol{width: 20}
		if hasSize {
			if strings.HasPrefix(size, ".") {
				col.right, size = true, size[1:]
			}
			if size != "" {
				w, err := strconv.Atoi(size)
				if err != nil || w < 0 {
					return nil, slurmErrorf("Invalid job format specification: %s", item)
				}
				col.width = w
			}
		}
		for i := range squeueFields {
			if strings.EqualFold(squeueFields[i].long, name) {
				col.field = &squeueFields[i]
			}
		}
		if col.field == nil {
			return nil, slurmErrorf("Invalid job format specification: %s", name)
		}
		cols = append(cols, col)
	}
	return cols, nil
}

// printSqueue prints the header (when asked) and one line per job.
func printSqueue(w io.Writer, cols []squeueCol, jobs []api.Job, v slurmView, header bool) {
	if header {
		printFormatLine(w, cols, func(f *squeueField) string { return f.header })
	}
	for _, j := range jobs {
		printFormatLine(w, cols, func(f *squeueField) string { return f.value(j, v) })
	}
}

// fitField pads s to width (0: as is) and truncates it to width, right- or
// left-aligned, as Slurm's printf("%*.*s") does.
func fitField(s string, width int, right bool) string {
	if width == 0 {
		return s
	}
	if len(s) > width {
		s = s[:width]
	}
	pad := strings.Repeat(" ", width-len(s))
	if right {
		return pad + s
	}
	return s + pad
}

// JobIDString is the job's id as Slurm prints it: "12", "12_3", or for a
// folded row of pending elements "12_[3-9]".
func JobIDString(j api.Job) string {
	if j.JobIDString != "" {
		return j.JobIDString
	}
	return strconv.FormatUint(j.ID, 10)
}

// arrayJobID is %A and %F: the array's id for an element, else the job's.
func arrayJobID(j api.Job) uint64 {
	if j.ArrayJobID != 0 {
		return j.ArrayJobID
	}
	return j.ID
}

// expandNodeFilter reads a -w/-N hostlist of nodes to filter jobs by.
func expandNodeFilter(list string) ([]string, error) {
	nodes, err := slurm.ExpandHostlist(list)
	if err != nil {
		return nil, slurmErrorf("Invalid node name specified: %s", list)
	}
	return nodes, nil
}

// onNodes reports whether job j runs (or ran) on any of nodes.
func onNodes(j api.Job, nodes []string) bool {
	return slices.ContainsFunc(j.Nodes, func(n string) bool { return slices.Contains(nodes, n) })
}
