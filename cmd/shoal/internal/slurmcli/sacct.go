package slurmcli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// sacctDefaultFormat is sacct's default field list. Account is the job's
// -A (empty without one); Partition is "shoal" on a cluster without
// partitions.
const sacctDefaultFormat = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"

// sacctBriefFormat is sacct -b's.
const sacctBriefFormat = "JobID,State,ExitCode"

var sacctOpts = []slurm.Option{
	optJobs,
	optFormat,
	{Long: "allocations", Short: 'X', Arg: slurm.NoArg},
	optParsable,
	optParsable2,
	{Long: "delimiter", Arg: slurm.NeedArg},
	optNoheader,
	optUser,
	{Long: "allusers", Short: 'a', Arg: slurm.NoArg},
	{Long: "state", Short: 's', Arg: slurm.NeedArg},
	{Long: "name", Arg: slurm.NeedArg},
	{Long: "brief", Short: 'b', Arg: slurm.NoArg},
	{Long: "starttime", Short: 'S', Arg: slurm.NeedArg},
	{Long: "endtime", Short: 'E', Arg: slurm.NeedArg},
	{Long: "partition", Short: 'r', Arg: slurm.NeedArg},
	optVerbose,
	{Long: "duplicates", Short: 'D', Arg: slurm.NoArg},
	{Long: "long", Short: 'l', Arg: slurm.NoArg, Unsupported: "name the fields with --format (MaxRSS, AveRSS, TotalCPU, UserCPU, SystemCPU, ReqMem, AllocTRES, TRESUsageInTot are there)"},
	{Long: "units", Arg: slurm.NeedArg},
	{Long: "accounts", Short: 'A', Arg: slurm.NeedArg},
	optQoS,
	{Long: "nodelist", Short: 'N', Arg: slurm.NeedArg},
	optClusters,
	{Long: "json", Arg: slurm.NoArg, Unsupported: "use `shoal job N --json`"},
	{Long: "helpformat", Short: 'e', Arg: slurm.NoArg, Unsupported: "see the fields listed in `shoal slurm sacct --format` errors"},
	optHelp,
	optUsage,
}

// sacctRow is one line of sacct: a job, its batch step, or one of its
// srun steps.
type sacctRow struct {
	job   api.Job
	step  *api.Step // nil for the job and the batch step
	batch bool
}

// sacctField is one --format field, with sacct's default width (negative:
// left-aligned).
type sacctField struct {
	name  string
	width int
	value func(r sacctRow, v slurmView) string
}

// sacctTime renders a time as sacct does: local time, "Unknown" when not
// set.
func (v slurmView) sacctTime(s string) string { return v.date(s, "Unknown") }

// sacctElapsed is secs2time_str: [D-]HH:MM:SS, a negative duration
// (clock steps) as 00:00:00.
func sacctElapsed(d time.Duration) string { return slurm.FormatHMS(max(d, 0)) }

// sacctExitCode renders an exit code as sacct's "code:signal". Shoal
// records a rank killed by a signal as 128+signal, as a shell does, so
// 129 to 159 are shown as sacct shows a signal death.
func sacctExitCode(code int) string {
	if code > 128 && code < 160 {
		return fmt.Sprintf("0:%d", code-128)
	}
	return fmt.Sprintf("%d:0", code)
}

// id is the row's JobID: "12", "12_3" for an array element, with
// ".batch" or ".STEP" for those rows.
func (r sacctRow) id() string { return r.stepID(JobIDString(r.job)) }

// rawID is JobIDRaw: the job's own id, whatever array it is in.
func (r sacctRow) rawID() string { return r.stepID(strconv.FormatUint(r.job.ID, 10)) }

// stepID is the row's id given its job's: the job's, or with ".batch" or
// ".STEP" for those rows.
func (r sacctRow) stepID(job string) string {
	switch {
	case r.batch:
		return job + ".batch"
	case r.step != nil:
		return fmt.Sprintf("%s.%d", job, r.step.ID)
	}
	return job
}

func (r sacctRow) state() string {
	switch {
	case r.step != nil:
		return r.step.State
	case r.batch:
		switch r.job.State {
		case "COMPLETED", "FAILED":
			if r.job.ExitCode == 0 {
				return "COMPLETED"
			}
			return "FAILED"
		}
	}
	return r.job.State
}

func (r sacctRow) exitCode() int {
	if r.step != nil {
		return r.step.ExitCode
	}
	return r.job.ExitCode
}

func (r sacctRow) times() (start, end string) {
	if r.step != nil {
		return r.step.StartTime, r.step.EndTime
	}
	return r.job.StartTime, r.job.EndTime
}

func (r sacctRow) nodes() []string {
	switch {
	case r.step != nil:
		return r.step.Nodes
	case r.batch && len(r.job.Nodes) > 0:
		return r.job.Nodes[:1]
	}
	return r.job.Nodes
}

func (r sacctRow) nnodes() int {
	if r.step == nil && !r.batch {
		return jobNodeCount(r.job)
	}
	return len(r.nodes())
}

func (r sacctRow) cpus() int {
	cpt := max(1, r.job.CPUsPerTask)
	if r.step == nil {
		// The allocation's CPUs, where it names them: all of them for the
		// job, the first node's for its batch step.
		tasks := r.job.Tasks
		if r.batch && len(tasks) > 0 {
			tasks = tasks[:1]
		}
		if n := allocCPUs(tasks); n > 0 {
			return n
		}
	}
	switch {
	case r.step != nil:
		return r.step.NTasks * cpt
	case r.batch:
		return max(1, r.job.TasksPerNode) * cpt
	case r.job.StartTime == "":
		return 0 // nothing allocated yet
	}
	return jobCPUs(r.job)
}

func (r sacctRow) elapsed(now time.Time) time.Duration {
	start, end := r.times()
	return Elapsed(api.Job{StartTime: start, EndTime: end}, now)
}

var sacctFields = []sacctField{
	{"JobID", -12, func(r sacctRow, _ slurmView) string { return r.id() }},
	{"JobIDRaw", -12, func(r sacctRow, _ slurmView) string { return r.rawID() }},
	{"JobName", 10, func(r sacctRow, _ slurmView) string {
		switch {
		case r.step != nil:
			return r.step.Name
		case r.batch:
			return "batch"
		}
		return r.job.Name
	}},
	{"Partition", 10, func(r sacctRow, _ slurmView) string {
		if r.step != nil || r.batch {
			return ""
		}
		return jobPartition(r.job)
	}},
	{"Account", 10, func(r sacctRow, _ slurmView) string { return r.job.Account }},
	{"QOS", 10, func(r sacctRow, _ slurmView) string {
		if r.step != nil || r.batch {
			return ""
		}
		return r.job.QoS
	}},
	{"User", 9, func(r sacctRow, _ slurmView) string {
		if r.step != nil || r.batch {
			return ""
		}
		return r.job.User
	}},
	{"AllocCPUS", 10, func(r sacctRow, _ slurmView) string { return strconv.Itoa(r.cpus()) }},
	{"NCPUS", 10, func(r sacctRow, _ slurmView) string { return strconv.Itoa(r.cpus()) }},
	{"State", 10, func(r sacctRow, _ slurmView) string { return r.state() }},
	{"ExitCode", 8, func(r sacctRow, _ slurmView) string { return sacctExitCode(r.exitCode()) }},
	{"Elapsed", 10, func(r sacctRow, v slurmView) string { return sacctElapsed(r.elapsed(v.now)) }},
	{"ElapsedRaw", 10, func(r sacctRow, v slurmView) string {
		return strconv.FormatInt(int64(r.elapsed(v.now)/time.Second), 10)
	}},
	{"Submit", 19, func(r sacctRow, v slurmView) string {
		if r.step != nil {
			return v.sacctTime(r.step.StartTime)
		}
		return v.sacctTime(r.job.SubmitTime)
	}},
	{"Start", 19, func(r sacctRow, v slurmView) string { s, _ := r.times(); return v.sacctTime(s) }},
	{"End", 19, func(r sacctRow, v slurmView) string { _, e := r.times(); return v.sacctTime(e) }},
	{"NNodes", 8, func(r sacctRow, _ slurmView) string { return strconv.Itoa(r.nnodes()) }},
	{"NTasks", 8, func(r sacctRow, _ slurmView) string {
		switch {
		case r.step != nil:
			return strconv.Itoa(r.step.NTasks)
		case r.batch:
			return "1"
		}
		return ""
	}},
	{"NodeList", 15, func(r sacctRow, _ slurmView) string {
		if len(r.nodes()) == 0 {
			return "None assigned"
		}
		return slurm.CompressHostlist(r.nodes())
	}},
	{"Timelimit", 10, func(r sacctRow, _ slurmView) string {
		if r.step != nil || r.batch {
			return ""
		}
		if r.job.TimeLimitS == 0 {
			return "UNLIMITED"
		}
		return sacctElapsed(time.Duration(r.job.TimeLimitS) * time.Second)
	}},
	{"AllocTRES", 10, func(r sacctRow, _ slurmView) string {
		cpus := r.cpus()
		if cpus == 0 {
			return ""
		}
		nodes := r.nnodes()
		tres := fmt.Sprintf("cpu=%d", cpus)
		if gpus := r.job.GPUsPerNode * nodes; gpus > 0 {
			tres += fmt.Sprintf(",gres/gpu=%d", gpus)
		}
		if mem := r.memMiB() * uint64(nodes); mem > 0 {
			tres += ",mem=" + sacctUnits(mem, unitMega, unitNone)
		}
		return tres + fmt.Sprintf(",node=%d", nodes)
	}},
	{"ReqMem", 10, func(r sacctRow, v slurmView) string { return sacctUnits(r.memMiB(), unitMega, v.units) }},
	{"MaxRSS", 10, func(r sacctRow, v slurmView) string {
		if u, ok := r.usage(); ok && u.rss {
			return sacctUnits(u.MaxRSS>>10, unitKilo, v.units)
		}
		return ""
	}},
	{"AveRSS", 10, func(r sacctRow, v slurmView) string {
		if u, ok := r.usage(); ok && u.rss {
			return sacctUnits(u.AveRSS>>10, unitKilo, v.units)
		}
		return ""
	}},
	{"TotalCPU", 10, func(r sacctRow, _ slurmView) string {
		if u, ok := r.usage(); ok {
			return slurm.FormatCPUTime(u.TotalCPU())
		}
		return ""
	}},
	{"UserCPU", 10, func(r sacctRow, _ slurmView) string {
		if u, ok := r.usage(); ok {
			return slurm.FormatCPUTime(u.UserCPU)
		}
		return ""
	}},
	{"SystemCPU", 10, func(r sacctRow, _ slurmView) string {
		if u, ok := r.usage(); ok {
			return slurm.FormatCPUTime(u.SystemCPU)
		}
		return ""
	}},
	{"TRESUsageInTot", 14, func(r sacctRow, _ slurmView) string {
		u, ok := r.usage()
		if !ok || !u.rss {
			return ""
		}
		return "cpu=" + sacctElapsed(u.TotalCPU()) + ",mem=" + sacctUnits(u.sumRSS>>10, unitKilo, unitNone)
	}},
	{"TRESUsageInAve", 14, func(r sacctRow, _ slurmView) string { return gpuTRES(r, false) }},
	{"TRESUsageInMax", 14, func(r sacctRow, _ slurmView) string { return gpuTRES(r, true) }},
	{"WorkDir", 20, func(r sacctRow, _ slurmView) string { return r.job.WorkDir }},
	{"Reason", 22, func(r sacctRow, _ slurmView) string { return jobReason(r.job) }},
}

// gpuTRES is TRESUsageInAve (or, peak, TRESUsageInMax) of the job's
// allocation row: its memory (AveRSS or MaxRSS, where counted) and its
// GPUs' use as Slurm's acct_gather_gpu names it, gres/gpumem (MiB, "M")
// and gres/gpuutil (percent): the mean over the nodes' means, or the
// highest peak. Empty on step rows and for jobs whose GPUs were not
// sampled.
func gpuTRES(r sacctRow, peak bool) string {
	if r.step != nil || r.batch {
		return ""
	}
	var parts []string
	if u, ok := r.usage(); ok && u.rss {
		rss := u.AveRSS
		if peak {
			rss = u.MaxRSS
		}
		parts = append(parts, "mem="+sacctUnits(rss>>10, unitKilo, unitNone))
	}
	var n int
	var mem, util float64
	for _, t := range r.job.Tasks {
		g := t.GPUUsage
		if g == nil || g.Samples == 0 {
			continue
		}
		n++
		if peak {
			mem, util = max(mem, float64(g.PeakMemBytes)), max(util, g.PeakUtil)
		} else {
			mem, util = mem+float64(g.MeanMemBytes), util+g.MeanUtil
		}
	}
	if n > 0 {
		if !peak {
			mem, util = mem/float64(n), util/float64(n)
		}
		parts = append(parts, fmt.Sprintf("gres/gpumem=%.0fM", mem/(1<<20)), fmt.Sprintf("gres/gpuutil=%.0f", util*100))
	}
	return strings.Join(parts, ",")
}

// allocCPUs counts the CPUs the allocation names on tasks' nodes; 0 when
// it names none (allocations made before CPUs were consumable).
func allocCPUs(tasks []api.Task) int {
	n := 0
	for _, t := range tasks {
		if cpus, err := cluster.ParseCPUList(t.CPUs); err == nil {
			n += len(cpus)
		}
	}
	return n
}

// memMiB is the memory the job holds on each node: the allocation's,
// else what it asked for; 0 when neither says.
func (r sacctRow) memMiB() uint64 {
	for _, t := range r.job.Tasks {
		if t.MemMiB > 0 {
			return t.MemMiB
		}
	}
	return r.job.MemPerNodeMiB
}

// rowUsage is a row's usage summed over its nodes as sacct shows it:
// MaxRSS the largest of the nodes', AveRSS their mean, CPU times and
// sumRSS (TRESUsageInTot's mem) their sum; rss false where sacct shows no
// memory (a batch job's allocation line, whose usage is its steps').
type rowUsage struct {
	cluster.Usage
	sumRSS uint64
	rss    bool
}

func (u *rowUsage) add(x cluster.Usage, n *int) {
	u.MaxRSS = max(u.MaxRSS, x.MaxRSS)
	u.sumRSS += x.MaxRSS
	// A running mean keeps AveRSS in range whatever the count.
	*n++
	u.AveRSS = uint64(float64(u.AveRSS) + (float64(x.AveRSS)-float64(u.AveRSS))/float64(*n))
	u.UserCPU += x.UserCPU
	u.SystemCPU += x.SystemCPU
}

// usage is what the row's tasks used, where their nodes counted it.
func (r sacctRow) usage() (rowUsage, bool) {
	var u rowUsage
	n := 0
	switch {
	case r.step != nil:
		for _, node := range r.step.Nodes {
			if x, ok := r.step.Usage[node]; ok {
				u.add(x, &n)
			}
		}
		u.rss = true
	case r.batch:
		if len(r.job.Tasks) > 0 && r.job.Tasks[0].Usage != nil {
			u.add(*r.job.Tasks[0].Usage, &n)
		}
		u.rss = true
	default:
		// The allocation: its own tasks' memory (none for a batch job,
		// whose script is the batch step), and the CPU of everything
		// that ran in it.
		for _, t := range r.job.Tasks {
			if t.Usage != nil {
				u.add(*t.Usage, &n)
			}
		}
		u.rss = !r.job.Batch
		k := 0
		var steps rowUsage
		for _, st := range r.job.Steps {
			for _, x := range st.Usage {
				steps.add(x, &k)
			}
		}
		u.UserCPU += steps.UserCPU
		u.SystemCPU += steps.SystemCPU
		n += k
	}
	return u, n > 0
}

// Units of sacctUnits, as Slurm's UNIT_NONE, UNIT_KILO, UNIT_MEGA.
const (
	unitNone = iota
	unitKilo
	unitMega
)

// sacctUnits is Slurm's convert_num_unit as sacct calls it by default
// (CONVERT_NUM_UNIT_EXACT): v in unit is scaled by 1024 while that keeps
// it exact to a half ("1536K" becomes "1.50M", "1234K" stays), then
// printed whole or with two decimals and the unit's letter: MaxRSS
// "66616K", ReqMem "4G". Memory usage goes in as KiB, as Slurm's
// accounting keeps it.
//
// spec, when not unitNone, is sacct --units': v is scaled to that unit
// whatever precision it keeps ("0.50G").
func sacctUnits(v uint64, unit, spec int) string {
	if v == 0 {
		return "0"
	}
	const letters = "\x00KMGTPE"
	n := float64(v)
	switch {
	case spec != unitNone:
		for ; unit > spec; unit-- {
			n *= 1024
		}
		for ; unit < spec; unit++ {
			n /= 1024
		}
	default:
		for n >= 1024 && uint64(n)%512 == 0 && unit < len(letters)-1 {
			n /= 1024
			unit++
		}
	}
	suffix := ""
	if unit > 0 {
		suffix = letters[unit : unit+1]
	}
	if n == float64(uint64(n)) {
		return strconv.FormatUint(uint64(n), 10) + suffix
	}
	return strconv.FormatFloat(n, 'f', 2, 64) + suffix
}

// sacctCol is a --format field with its width.
type sacctCol = fieldCol[sacctField]

// parseSacctFormat parses --format: comma-separated names (any case),
// each with an optional %WIDTH.
func parseSacctFormat(format string) ([]sacctCol, error) {
	return parseFieldList(splitList(format), false, "--format", func(name string) (*sacctField, int, error) {
		var field *sacctField
		for i := range sacctFields {
			if strings.EqualFold(sacctFields[i].name, name) {
				field = &sacctFields[i]
			}
		}
		if field == nil {
			names := make([]string, len(sacctFields))
			for i, f := range sacctFields {
				names[i] = f.name
			}
			return nil, 0, slurmErrorf("Invalid field requested: \"%s\" (Shoal fills %s)", name, strings.Join(names, ", "))
		}
		return field, field.width, nil
	})
}

func printSacct(w io.Writer, cols []sacctCol, rows []sacctRow, v slurmView, l sacctLayout) {
	printFieldCols(w, cols, rows, l, func(f *sacctField) string { return f.name },
		func(r sacctRow, f *sacctField) string { return f.value(r, v) })
}

// sacctRows lists a job and, unless jobsOnly, its batch step and steps.
// The job's row is its latest accounting record (resizeRecords): for an
// elastic job that changed size, the one that started at its last
// resize; with dups (-D), every record, the RESIZING ones first.
func sacctRows(jobs []api.Job, jobsOnly, dups bool) []sacctRow {
	var rows []sacctRow
	for _, j := range jobs {
		recs := resizeRecords(j)
		if !dups {
			recs = recs[len(recs)-1:]
		}
		for _, rec := range recs {
			rows = append(rows, sacctRow{job: rec})
		}
		j = recs[len(recs)-1]
		if jobsOnly {
			continue
		}
		if j.Batch && j.StartTime != "" {
			rows = append(rows, sacctRow{job: j, batch: true})
		}
		for i := range j.Steps {
			rows = append(rows, sacctRow{job: j, step: &j.Steps[i]})
		}
	}
	return rows
}

// sacctQuery is what sacct was asked to show.
type sacctQuery struct {
	jobFilter
	ids      []jobSel
	allUsers bool
	states   map[string]bool
	start    time.Time
	end      time.Time
	startSet bool // -S given: -j jobs must fall in the window too
}

func (q sacctQuery) match(j api.Job) bool {
	// -j selects jobs whoever's they are.
	if !q.matches(j, len(q.ids) == 0 && !q.allUsers) || len(q.ids) > 0 && !selects(q.ids, j) {
		return false
	}
	if q.states != nil {
		if !q.states[j.State] {
			return false
		}
		if len(q.ids) > 0 && !q.startSet {
			return true
		}
		// With -s, as slurmdbd: jobs that were in the state at some
		// time between the start and end times.
		from, to := stateSpan(j)
		return !from.IsZero() && !from.After(q.end) && (to.IsZero() || !to.Before(q.start))
	}
	if len(q.ids) > 0 && !q.startSet {
		return true
	}
	// As sacct: jobs that were eligible, running or ending between the
	// start and end times.
	if t, err := time.Parse(time.RFC3339, j.EndTime); err == nil && t.Before(q.start) {
		return false
	}
	if t, err := time.Parse(time.RFC3339, j.SubmitTime); err == nil && t.After(q.end) {
		return false
	}
	return true
}

// stateSpan is when the job was in its present state: pending from its
// submission to its start, running from its start to its end, and in an
// end state from its end on (zero to: still in it).
func stateSpan(j api.Job) (from, to time.Time) {
	at := func(s string) time.Time {
		t, _ := time.Parse(time.RFC3339, s)
		return t
	}
	switch j.State {
	case "PENDING":
		return at(j.SubmitTime), at(j.StartTime)
	case "RUNNING", "REQUEUED":
		return at(j.StartTime), at(j.EndTime)
	}
	if e := at(j.EndTime); !e.IsZero() {
		return e, time.Time{}
	}
	return at(j.SubmitTime), time.Time{}
}

// sacctWindow is the start and end times sacct selects jobs between
// when -S and -E leave them out, as Slurm's slurmdb_job_cond_def_start_end:
// with -s, from now (from the epoch with -j) to the start; with -j alone,
// from the epoch to now; else from today's midnight to now.
func sacctWindow(q *sacctQuery, endSet bool, now time.Time) {
	if !q.startSet {
		switch {
		case q.states != nil && len(q.ids) == 0:
			q.start = now
		case len(q.ids) > 0:
			q.start = time.Unix(0, 0)
		default:
			q.start = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
		}
	}
	if !endSet {
		q.end = now
		if q.states != nil && (q.startSet || len(q.ids) == 0) {
			q.end = q.start
		}
	}
}

// parseUnits reads --units: K, M, G, T or P (any case), as Slurm's
// get_unit_type.
func parseUnits(s string) (int, error) {
	if len(s) > 0 {
		if i := strings.IndexByte("KMGTP", byte(unicode.ToUpper(rune(s[0])))); i >= 0 {
			return unitKilo + i, nil
		}
	}
	return 0, slurmErrorf("Invalid unit type")
}

// Sacct is sacct over the jobs the cluster still holds: Shoal keeps
// every job in its replicated state, so the "accounting" is the queue with
// finished jobs.
func Sacct(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
	vals, err := cliOptions("sacct", sacctOpts, args, stderr)
	if err != nil {
		return err
	}
	now := time.Now()
	v := slurmView{now: now, loc: time.Local}
	var q sacctQuery
	endSet := false
	format := sacctDefaultFormat
	layout := sacctLayout{header: true, delimiter: "|"}
	jobsOnly, dups := false, false
	for _, o := range vals {
		if layout.option(o.Opt.Long) {
			continue
		}
		switch o.Opt.Long {
		case "jobs":
			for _, s := range splitList(o.Value) {
				// JOB.STEP selects the job here; its steps are listed
				// with it.
				jobPart, _, _ := strings.Cut(s, ".")
				ids, err := parseJobList(jobPart)
				if err != nil {
					return err
				}
				q.ids = append(q.ids, ids...)
			}
		case "format":
			format = o.Value
		case "brief":
			format = sacctBriefFormat
		case "allocations":
			jobsOnly = true
		case "duplicates":
			dups = true
		case "delimiter":
			layout.delimiter = o.Value
		case "allusers":
			q.allUsers = true
		case "state":
			if q.states, _, err = parseStates(o.Value); err != nil {
				return err
			}
		case "starttime":
			if q.start, err = slurm.ParseDate(o.Value, now); err != nil {
				return fmt.Errorf("-S: %w", err)
			}
			q.startSet = true
		case "endtime":
			if q.end, err = slurm.ParseDate(o.Value, now); err != nil {
				return fmt.Errorf("-E: %w", err)
			}
			endSet = true
		case "units":
			if v.units, err = parseUnits(o.Value); err != nil {
				return err
			}
		default:
			if err := q.option(o); err != nil {
				return err
			}
		}
	}
	if len(q.users) == 0 && !q.allUsers {
		// Like sacct, a user sees their own jobs by default and root
		// everyone's.
		if id := currentIdentity(); id.UID != 0 {
			q.users = []string{id.User}
		}
	}
	sacctWindow(&q, endSet, now)
	if q.start.After(q.end) {
		return slurmErrorf("Start time (%s) requested is after end time (%s).", q.start.Format("2006-01-02T15:04:05"), q.end.Format("2006-01-02T15:04:05"))
	}
	cols, err := parseSacctFormat(format)
	if err != nil {
		return err
	}
	_, in, err := readAgent(ctx, connect, readJobs)
	if err != nil {
		return err
	}
	var shown []api.Job
	for _, j := range in.jobs {
		if q.match(j) {
			shown = append(shown, j)
		}
	}
	slices.SortStableFunc(shown, func(a, b api.Job) int { return cmp.Compare(a.ID, b.ID) })
	printSacct(stdout, cols, sacctRows(shown, jobsOnly, dups), v, layout)
	return nil
}
