package cluster

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Policy is the queue policy every leader orders pending jobs by: the
// weights of Slurm's multifactor priority and what its factors are
// measured against. It is replicated (the FSM's SetPolicy), so it holds no
// Go maps: accounts, users and QoS levels are slices sorted by name, which
// keeps its encoding, and so snapshots, the same on every replica.
type Policy struct {
	Weights Weights `msgpack:"weights" json:"weights"`
	// MaxAge is the wait at which the age factor reaches 1 (Slurm's
	// PriorityMaxAge); zero makes every pending job's age factor 1.
	MaxAge time.Duration `msgpack:"max_age" json:"max_age"`
	// HalfLife is the fair-share usage decay half-life (Slurm's
	// PriorityDecayHalfLife); zero means usage never decays.
	HalfLife time.Duration `msgpack:"half_life" json:"half_life"`
	// Accounts are the configured fair-share accounts, by ascending name.
	Accounts []AccountShare `msgpack:"accounts" json:"accounts"`
	// QoS are the named QoS levels, by ascending name.
	QoS []QoSLevel `msgpack:"qos" json:"qos"`
	// Partitions are the named node sets jobs run in, by ascending name;
	// none: every job may use every node.
	Partitions []Partition `msgpack:"partitions,omitempty" json:"partitions,omitempty"`
	// Preempt are the QoS levels that may preempt others, by ascending
	// QoS name; PreemptGrace is how long a victim has between SIGTERM and
	// its requeue or cancel (Slurm's GraceTime).
	Preempt      []PreemptRule `msgpack:"preempt,omitempty" json:"preempt,omitempty"`
	PreemptGrace time.Duration `msgpack:"preempt_grace,omitempty" json:"preempt_grace,omitempty"`
	// MaxSubmitJobs bounds one user's live (pending or running) jobs,
	// array elements each counting, as Slurm's MaxSubmitJobs association
	// limit; 0 means DefaultMaxSubmitJobs.
	MaxSubmitJobs int `msgpack:"max_submit_jobs,omitempty" json:"max_submit_jobs,omitempty"`
	// MaxJobCount bounds the cluster's live jobs, as slurm.conf's
	// MaxJobCount (which also counts finished jobs kept for MinJobAge);
	// 0 means DefaultMaxJobCount.
	MaxJobCount int `msgpack:"max_job_count,omitempty" json:"max_job_count,omitempty"`
	// Operators are users, and Unix groups written "@group", by ascending
	// name, who may act on every user's jobs as root may (cancel, signal,
	// hold, release, requeue, update, read output), as Slurm's
	// AdminLevel=Operator; they cannot run code as another user (steps) or
	// change the cluster (drain, policy).
	Operators []string `msgpack:"operators,omitempty" json:"operators,omitempty"`
	// PrivateJobs hides other users' jobs from users who are neither root
	// nor operators, as slurm.conf's PrivateData=jobs.
	PrivateJobs bool `msgpack:"private_jobs,omitempty" json:"private_jobs,omitempty"`
	// MinJobAge is how long a finished job stays in the live state before
	// it moves to the accounting archive, as slurm.conf's MinJobAge; 0
	// means DefaultMinJobAge.
	MinJobAge time.Duration `msgpack:"min_job_age,omitempty" json:"min_job_age,omitempty"`
	// ArchiveMax bounds the archive (the newest records stay); 0 means
	// DefaultArchiveMax.
	ArchiveMax int `msgpack:"archive_max,omitempty" json:"archive_max,omitempty"`
	// OutputRetention is how long after a job ended the nodes keep its
	// task directories (its records and the rank output shoal logs
	// reads), once it is archived; 0 means DefaultOutputRetention.
	OutputRetention time.Duration `msgpack:"output_retention,omitempty" json:"output_retention,omitempty"`
	// ClusterName is the cluster's name in jobs' SLURM_CLUSTER_NAME (as
	// slurm.conf's ClusterName); "" means DefaultClusterName.
	ClusterName string `msgpack:"cluster_name,omitempty" json:"cluster_name,omitempty"`
	// Scheduler is the order the leader takes pending jobs in, as
	// slurm.conf's SchedulerType and PriorityType choose Slurm's: ""
	// (SchedulerShoal, the default) is multifactor priority order;
	// SchedulerQSSF is shortest predicted service first with aging
	// (placement.QSSFOrder). Placement and EASY backfill are the same
	// under both. "" is the canonical form of SchedulerShoal, so a policy
	// that names it encodes as one that does not.
	Scheduler string `msgpack:"scheduler,omitempty" json:"scheduler,omitempty"`
	// StarveAfter and AgingHalf tune SchedulerQSSF (placement.Options):
	// a job that has waited StarveAfter goes ahead of every job that has
	// not, and a job's predicted service counts half after waiting
	// AgingHalf. 0 means placement's defaults (10 days, 1 h).
	StarveAfter time.Duration `msgpack:"starve_after,omitempty" json:"starve_after,omitempty"`
	AgingHalf   time.Duration `msgpack:"aging_half,omitempty" json:"aging_half,omitempty"`
}

// The queue orders a Policy's Scheduler selects.
const (
	// SchedulerShoal is multifactor priority order (Policy.Weights).
	SchedulerShoal = "shoal"
	// SchedulerQSSF is quasi-shortest-service-first: starving jobs
	// first, then by predicted GPU-time, aged and weighted by fair share.
	SchedulerQSSF = "qssf"
)

// SchedulerName is the queue order in force under p (nil: the default):
// SchedulerShoal or SchedulerQSSF.
func (p *Policy) SchedulerName() string {
	if p != nil && p.Scheduler != "" {
		return p.Scheduler
	}
	return SchedulerShoal
}

// DefaultClusterName names a cluster whose policy names none.
const DefaultClusterName = "shoal"

// Name is the cluster name in force under p (nil: the default).
func (p *Policy) Name() string {
	if p != nil && p.ClusterName != "" {
		return p.ClusterName
	}
	return DefaultClusterName
}

// Defaults of the accounting archive and of job output.
const (
	DefaultMinJobAge       = 300 * time.Second
	DefaultArchiveMax      = 200000
	DefaultOutputRetention = 24 * time.Hour
)

// Retention is the OutputRetention in force under p (nil: the default).
func (p *Policy) Retention() time.Duration {
	if p != nil && p.OutputRetention > 0 {
		return p.OutputRetention
	}
	return DefaultOutputRetention
}

// ArchiveAge is the MinJobAge in force under p (nil: the default).
func (p *Policy) ArchiveAge() time.Duration {
	if p != nil && p.MinJobAge > 0 {
		return p.MinJobAge
	}
	return DefaultMinJobAge
}

// ArchiveLimit is the ArchiveMax in force under p (nil: the default).
func (p *Policy) ArchiveLimit() int {
	if p != nil && p.ArchiveMax > 0 {
		return p.ArchiveMax
	}
	return DefaultArchiveMax
}

// IsOperator reports whether user is one of the policy's operators by
// name (groups are the caller's to resolve: OperatorGroups).
func (p *Policy) IsOperator(user string) bool {
	if p == nil {
		return false
	}
	_, ok := slices.BinarySearch(p.Operators, user)
	return ok
}

// OperatorGroups returns the Unix groups whose members are operators.
func (p *Policy) OperatorGroups() []string {
	if p == nil {
		return nil
	}
	var out []string
	for _, o := range p.Operators {
		if g, ok := strings.CutPrefix(o, "@"); ok {
			out = append(out, g)
		}
	}
	return out
}

// MaxPolicyOperators bounds the operators a policy names.
const MaxPolicyOperators = 256

// Defaults and ceilings of the job-count limits.
const (
	DefaultMaxSubmitJobs = 10000
	DefaultMaxJobCount   = 100000
	MaxJobCountLimit     = 10000000
)

// JobLimits returns the per-user and cluster-wide live-job limits in force
// under p (nil: the defaults).
func (p *Policy) JobLimits() (perUser, cluster int) {
	perUser, cluster = DefaultMaxSubmitJobs, DefaultMaxJobCount
	if p != nil && p.MaxSubmitJobs > 0 {
		perUser = p.MaxSubmitJobs
	}
	if p != nil && p.MaxJobCount > 0 {
		cluster = p.MaxJobCount
	}
	return perUser, cluster
}

// Weights are the integer weights of the priority factors (each factor is
// in [0,1]), as Slurm's PriorityWeight* settings.
type Weights struct {
	Age       int64 `msgpack:"age" json:"age"`
	FairShare int64 `msgpack:"fair_share" json:"fair_share"`
	JobSize   int64 `msgpack:"job_size" json:"job_size"`
	QoS       int64 `msgpack:"qos" json:"qos"`
	// Partition weighs the job's partition's Priority, relative to the
	// highest partition priority.
	Partition int64 `msgpack:"partition,omitempty" json:"partition,omitempty"`
}

// AccountShare is one account's fair-share: its shares among the accounts
// and, optionally, its users' shares within it.
type AccountShare struct {
	Name   string      `msgpack:"name" json:"name"`
	Shares int64       `msgpack:"shares" json:"shares"`
	Users  []UserShare `msgpack:"users" json:"users"` // ascending name
}

// UserShare is one user's shares within an account.
type UserShare struct {
	Name   string `msgpack:"name" json:"name"`
	Shares int64  `msgpack:"shares" json:"shares"`
}

// QoSLevel is a named QoS and its priority (Slurm's QOS Priority).
type QoSLevel struct {
	Name     string `msgpack:"name" json:"name"`
	Priority int64  `msgpack:"priority" json:"priority"`
	// MaxGPUsPerUser caps the GPUs one user's running jobs of this QoS
	// hold together (Slurm's MaxTRESPerUser=gres/gpu); 0: no cap. A job
	// that would pass it pends with QOSMaxGpuPerUser.
	MaxGPUsPerUser int64 `msgpack:"max_gpus_per_user,omitempty" json:"max_gpus_per_user,omitempty"`
}

// ReasonQOSMaxGPUPerUser is the reason of a job held back by its QoS's
// MaxGPUsPerUser.
const ReasonQOSMaxGPUPerUser = "QOSMaxGpuPerUser"

// QoSLimitFile is one QoS level's limits in a PolicyFile.
type QoSLimitFile struct {
	MaxGPUsPerUser int64 `json:"max_gpus_per_user"`
}

// QoSLevel returns the QoS level named name.
func (p *Policy) QoSLevel(name string) (*QoSLevel, bool) {
	if p == nil || name == "" {
		return nil, false
	}
	i, ok := slices.BinarySearchFunc(p.QoS, name, func(q QoSLevel, n string) int { return cmp.Compare(q.Name, n) })
	if !ok {
		return nil, false
	}
	return &p.QoS[i], true
}

// Policy bounds: they keep a hostile or corrupt policy from making the
// replicated state or a scheduling pass large, and priorities from
// overflowing int64 (four weights and a nice all under 2^32).
const (
	MaxPolicyWeight   = 1 << 32
	MaxPolicyShares   = 1 << 32
	MaxPolicyAccounts = 10000
	MaxPolicyUsers    = 10000 // per account
	MaxPolicyQoS      = 1000
	MaxPolicyNameLen  = 64
	MaxPolicyDuration = 10 * 365 * 24 * time.Hour
	// MaxNice bounds --nice either way (Slurm's own bound).
	MaxNice = 2147483645
)

// DefaultPolicy is the policy in force until one is set: age and
// fair-share at equal weight, everything a week. Jobs of users with equal
// usage keep FIFO order (equal fair-share, the older job's age factor is
// never lower, ties go to the lower ID); a user who has used more waits
// behind one who has used less.
func DefaultPolicy() Policy {
	week := 7 * 24 * time.Hour
	return Policy{
		Weights:  Weights{Age: 1000, FairShare: 1000},
		MaxAge:   week,
		HalfLife: week,
	}
}

// within names field unless v is 0 to max; zero, when set, says what 0
// means ("want 0 (no limit) to 240h").
func within[T int | int64 | time.Duration](field string, v, max T, zero string) error {
	if v >= 0 && v <= max {
		return nil
	}
	if zero != "" {
		zero = " (" + zero + ")"
	}
	return fmt.Errorf("%s %v: want 0%s to %v", field, v, zero, max)
}

// Validate checks the policy and names the first bad field. Accounts,
// their users and QoS levels must be sorted by name without repeats (the
// canonical form ParsePolicyJSON makes).
func (p *Policy) Validate() error {
	for _, w := range []struct {
		name string
		v    int64
	}{{"age", p.Weights.Age}, {"fair_share", p.Weights.FairShare}, {"job_size", p.Weights.JobSize}, {"qos", p.Weights.QoS}, {"partition", p.Weights.Partition}} {
		if err := within("weights."+w.name, w.v, MaxPolicyWeight, ""); err != nil {
			return err
		}
	}
	if len(p.Operators) > MaxPolicyOperators {
		return fmt.Errorf("operators: %d, want at most %d", len(p.Operators), MaxPolicyOperators)
	}
	for i, u := range p.Operators {
		if err := policyName(u); err != nil {
			return fmt.Errorf("operators[%d]: %w", i, err)
		}
		if i > 0 && u <= p.Operators[i-1] {
			return fmt.Errorf("operators[%d] %q: not after %q, want ascending unique names", i, u, p.Operators[i-1])
		}
	}
	if err := within("min_job_age", p.MinJobAge, MaxPolicyDuration, "the default, "+DefaultMinJobAge.String()); err != nil {
		return err
	}
	if p.Scheduler == SchedulerShoal {
		return fmt.Errorf("scheduler %q: not canonical, want \"\" for the default", p.Scheduler)
	}
	if p.Scheduler != "" && p.Scheduler != SchedulerQSSF {
		return fmt.Errorf("scheduler %q: want %s (the default) or %s", p.Scheduler, SchedulerShoal, SchedulerQSSF)
	}
	if err := cmp.Or(
		within("starve_after", p.StarveAfter, MaxPolicyDuration, "the default, 240h"),
		within("aging_half", p.AgingHalf, MaxPolicyDuration, "the default, 1h"),
	); err != nil {
		return err
	}
	if p.ClusterName != "" {
		if err := policyName(p.ClusterName); err != nil {
			return fmt.Errorf("cluster_name: %w", err)
		}
	}
	if err := cmp.Or(
		within("output_retention", p.OutputRetention, MaxPolicyDuration, "the default, "+DefaultOutputRetention.String()),
		within("archive_max", p.ArchiveMax, 10000000, fmt.Sprint("the default, ", DefaultArchiveMax)),
		within("max_submit_jobs", p.MaxSubmitJobs, MaxJobCountLimit, fmt.Sprint("the default, ", DefaultMaxSubmitJobs)),
		within("max_job_count", p.MaxJobCount, MaxJobCountLimit, fmt.Sprint("the default, ", DefaultMaxJobCount)),
		within("max_age", p.MaxAge, MaxPolicyDuration, ""),
		within("half_life", p.HalfLife, MaxPolicyDuration, "no decay"),
	); err != nil {
		return err
	}
	if len(p.Accounts) > MaxPolicyAccounts {
		return fmt.Errorf("accounts: %d, want at most %d", len(p.Accounts), MaxPolicyAccounts)
	}
	for i, a := range p.Accounts {
		where := fmt.Sprintf("accounts[%d] %.64q", i, a.Name)
		if err := namedAt(where, p.Accounts, i, func(a AccountShare) string { return a.Name }); err != nil {
			return err
		}
		if err := within(where+": shares", a.Shares, MaxPolicyShares, ""); err != nil {
			return err
		}
		if len(a.Users) > MaxPolicyUsers {
			return fmt.Errorf("%s: users: %d, want at most %d", where, len(a.Users), MaxPolicyUsers)
		}
		for k, u := range a.Users {
			uw := fmt.Sprintf("%s: users[%d] %.64q", where, k, u.Name)
			if err := namedAt(uw, a.Users, k, func(u UserShare) string { return u.Name }); err != nil {
				return err
			}
			if err := within(uw+": shares", u.Shares, MaxPolicyShares, ""); err != nil {
				return err
			}
		}
	}
	if len(p.QoS) > MaxPolicyQoS {
		return fmt.Errorf("qos: %d levels, want at most %d", len(p.QoS), MaxPolicyQoS)
	}
	for i, q := range p.QoS {
		where := fmt.Sprintf("qos[%d] %.64q", i, q.Name)
		if err := namedAt(where, p.QoS, i, func(q QoSLevel) string { return q.Name }); err != nil {
			return err
		}
		if err := cmp.Or(
			within(where+": priority", q.Priority, MaxPolicyWeight, ""),
			within(where+": max_gpus_per_user", q.MaxGPUsPerUser, MaxNodesPerJob*MaxGPUsPerNode, "no cap"),
		); err != nil {
			return err
		}
	}
	if err := validatePartitions(p.Partitions); err != nil {
		return err
	}
	return p.validatePreempt()
}

// namedAt checks the name of list[i], an account, user or QoS level
// (where, in errors): a valid name, after the name before it.
func namedAt[T any](where string, list []T, i int, name func(T) string) error {
	if err := policyName(name(list[i])); err != nil {
		return fmt.Errorf("%s: name: %w", where, err)
	}
	if i > 0 && name(list[i]) <= name(list[i-1]) {
		return fmt.Errorf("%s: name not after %q, want ascending unique names", where, name(list[i-1]))
	}
	return nil
}

// policyName checks an account, user or QoS name.
func policyName(s string) error {
	if s == "" || len(s) > MaxPolicyNameLen {
		return fmt.Errorf("%d bytes, want 1 to %d", len(s), MaxPolicyNameLen)
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return fmt.Errorf("control or space character at byte %d", i)
		}
	}
	return nil
}

// HasQoS reports whether the policy names QoS level name.
func (p *Policy) HasQoS(name string) bool {
	_, ok := slices.BinarySearchFunc(p.QoS, name, func(q QoSLevel, n string) int { return cmp.Compare(q.Name, n) })
	return ok
}

// Clone returns a deep copy of p.
func (p *Policy) Clone() *Policy {
	if p == nil {
		return nil
	}
	c := *p
	c.Accounts = cloneEach(p.Accounts, func(a *AccountShare) { a.Users = slices.Clone(a.Users) })
	c.QoS = slices.Clone(p.QoS)
	c.Operators = slices.Clone(p.Operators)
	c.Preempt = cloneEach(p.Preempt, func(r *PreemptRule) { r.Preempts = slices.Clone(r.Preempts) })
	c.Partitions = cloneEach(p.Partitions, func(q *Partition) { q.Nodes = slices.Clone(q.Nodes) })
	return &c
}

// Equal reports whether p and q are the same policy.
func (p *Policy) Equal(q *Policy) bool {
	if p == nil || q == nil {
		return p == q
	}
	return p.Weights == q.Weights && p.MaxAge == q.MaxAge && p.HalfLife == q.HalfLife &&
		p.MaxSubmitJobs == q.MaxSubmitJobs && p.MaxJobCount == q.MaxJobCount &&
		slices.Equal(p.Operators, q.Operators) && p.PrivateJobs == q.PrivateJobs &&
		p.MinJobAge == q.MinJobAge && p.ArchiveMax == q.ArchiveMax && p.OutputRetention == q.OutputRetention &&
		p.ClusterName == q.ClusterName &&
		p.Scheduler == q.Scheduler && p.StarveAfter == q.StarveAfter && p.AgingHalf == q.AgingHalf &&
		slices.Equal(p.QoS, q.QoS) &&
		slices.EqualFunc(p.Accounts, q.Accounts, func(a, b AccountShare) bool {
			return a.Name == b.Name && a.Shares == b.Shares && slices.Equal(a.Users, b.Users)
		}) &&
		p.PreemptGrace == q.PreemptGrace &&
		slices.EqualFunc(p.Preempt, q.Preempt, func(a, b PreemptRule) bool {
			return a.QoS == b.QoS && slices.Equal(a.Preempts, b.Preempts)
		}) &&
		slices.EqualFunc(p.Partitions, q.Partitions, func(a, b Partition) bool {
			return a.Name == b.Name && slices.Equal(a.Nodes, b.Nodes) && a.Default == b.Default &&
				a.DefaultTime == b.DefaultTime && a.MaxTime == b.MaxTime && a.Priority == b.Priority &&
				a.DefMemPerCPU == b.DefMemPerCPU && a.DefMemPerGPU == b.DefMemPerGPU &&
				a.DefCPUPerGPU == b.DefCPUPerGPU && a.MaxMemPerNode == b.MaxMemPerNode
		})
}

// PolicyFile is the JSON form of a Policy: what `shoal agent --policy`
// and `shoal policy set` read and `shoal policy show` prints. Durations
// are Go durations ("168h", "30m"; absent: 168h, "0s" for none); weights
// absent are 0; accounts, users and QoS levels are
// objects keyed by name.
//
//	{
//	  "weights": {"age": 1000, "fair_share": 10000, "job_size": 500, "qos": 2000},
//	  "max_age": "168h",
//	  "half_life": "168h",
//	  "accounts": {
//	    "physics": {"shares": 60, "users": {"alice": 2, "bob": 1}},
//	    "bio":     {"shares": 40}
//	  },
//	  "qos": {"normal": 0, "high": 100},
//	  "partitions": {
//	    "gpu":   {"nodes": "n[01-16]", "default": true, "default_time": "1:00:00", "max_time": "2-00:00:00",
//	              "def_mem_per_gpu": "64G", "def_cpu_per_gpu": 8, "max_mem_per_node": "1T"},
//	    "debug": {"nodes": "n[17-18]", "max_time": "30:00", "priority": 10}
//	  }
//	}
type PolicyFile struct {
	Weights  Weights                `json:"weights"`
	MaxAge   string                 `json:"max_age"`
	HalfLife string                 `json:"half_life"`
	Accounts map[string]AccountFile `json:"accounts,omitempty"`
	QoS      map[string]int64       `json:"qos,omitempty"`
	// Partitions are keyed by name; see PartitionFile.
	Partitions map[string]PartitionFile `json:"partitions,omitempty"`
	// Preempt maps a QoS level to the levels whose jobs it may preempt;
	// PreemptGrace is a Go duration (absent: 0, requeue at once).
	Preempt      map[string][]string `json:"preempt,omitempty"`
	PreemptGrace string              `json:"preempt_grace,omitempty"`
	// QoSLimits are the limits of QoS levels named in QoS.
	QoSLimits map[string]QoSLimitFile `json:"qos_limits,omitempty"`
	// MaxSubmitJobs and MaxJobCount bound live jobs per user and in all
	// (absent or 0: the defaults).
	MaxSubmitJobs int `json:"max_submit_jobs,omitempty"`
	MaxJobCount   int `json:"max_job_count,omitempty"`
	// Operators (user names) may act on every user's jobs; PrivateJobs
	// hides others' jobs from everyone else.
	Operators   []string `json:"operators,omitempty"`
	PrivateJobs bool     `json:"private_jobs,omitempty"`
	// MinJobAge (a duration) and ArchiveMax shape the accounting archive.
	MinJobAge  string `json:"min_job_age,omitempty"`
	ArchiveMax int    `json:"archive_max,omitempty"`
	// OutputRetention (a duration) is how long nodes keep a finished
	// job's task directories.
	OutputRetention string `json:"output_retention,omitempty"`
	// ClusterName is the jobs' SLURM_CLUSTER_NAME (default "shoal").
	ClusterName string `json:"cluster_name,omitempty"`
	// Scheduler is the queue order, "shoal" (absent: the default) or
	// "qssf"; StarveAfter and AgingHalf (durations) tune qssf.
	Scheduler   string `json:"scheduler,omitempty"`
	StarveAfter string `json:"starve_after,omitempty"`
	AgingHalf   string `json:"aging_half,omitempty"`
}

// AccountFile is one account in a PolicyFile.
type AccountFile struct {
	Shares int64            `json:"shares"`
	Users  map[string]int64 `json:"users,omitempty"`
}

// maxPolicyFileBytes bounds a policy file.
const maxPolicyFileBytes = 16 << 20

// ParsePolicyJSON reads a policy file (see PolicyFile) into its canonical
// Policy and validates it. Unknown fields are errors, so a misspelt weight
// is not silently zero; an error names the field.
func ParsePolicyJSON(b []byte) (Policy, error) {
	if len(b) > maxPolicyFileBytes {
		return Policy{}, fmt.Errorf("policy: %d bytes, want at most %d", len(b), maxPolicyFileBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f PolicyFile
	if err := dec.Decode(&f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return Policy{}, fmt.Errorf("policy: %s: want a %s, got a JSON %s", te.Field, te.Type, te.Value)
		}
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Policy{}, errors.New("policy: data after the JSON object, want one object")
	}
	p := Policy{Weights: f.Weights, MaxSubmitJobs: f.MaxSubmitJobs, MaxJobCount: f.MaxJobCount, PrivateJobs: f.PrivateJobs}
	if len(f.Operators) > 0 {
		p.Operators = slices.Compact(slices.Sorted(slices.Values(f.Operators)))
	}
	var err error
	def := DefaultPolicy()
	if p.MaxAge, err = policyDuration("max_age", f.MaxAge, def.MaxAge); err != nil {
		return Policy{}, err
	}
	if p.HalfLife, err = policyDuration("half_life", f.HalfLife, def.HalfLife); err != nil {
		return Policy{}, err
	}
	if len(f.Accounts) > MaxPolicyAccounts {
		return Policy{}, fmt.Errorf("policy: accounts: %d, want at most %d", len(f.Accounts), MaxPolicyAccounts)
	}
	for name, a := range f.Accounts {
		as := AccountShare{Name: name, Shares: a.Shares}
		for u, s := range a.Users {
			as.Users = append(as.Users, UserShare{Name: u, Shares: s})
		}
		slices.SortFunc(as.Users, func(x, y UserShare) int { return cmp.Compare(x.Name, y.Name) })
		p.Accounts = append(p.Accounts, as)
	}
	slices.SortFunc(p.Accounts, func(x, y AccountShare) int { return cmp.Compare(x.Name, y.Name) })
	for name, pr := range f.QoS {
		p.QoS = append(p.QoS, QoSLevel{Name: name, Priority: pr})
	}
	slices.SortFunc(p.QoS, func(x, y QoSLevel) int { return cmp.Compare(x.Name, y.Name) })
	for name, lim := range f.QoSLimits {
		q, ok := p.QoSLevel(name)
		if !ok {
			return Policy{}, fmt.Errorf("policy: qos_limits.%s: not a QoS level of \"qos\"", name)
		}
		q.MaxGPUsPerUser = lim.MaxGPUsPerUser
	}
	if p.Partitions, err = partitionsFromFile(f.Partitions); err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	if len(f.Preempt) > MaxPolicyQoS {
		return Policy{}, fmt.Errorf("policy: preempt: %d rules, want at most %d", len(f.Preempt), MaxPolicyQoS)
	}
	p.Preempt = preemptFromFile(f.Preempt)
	if p.PreemptGrace, err = policyDuration("preempt_grace", f.PreemptGrace, 0); err != nil {
		return Policy{}, err
	}
	if p.MinJobAge, err = policyDuration("min_job_age", f.MinJobAge, 0); err != nil {
		return Policy{}, err
	}
	p.ArchiveMax = f.ArchiveMax
	p.ClusterName = f.ClusterName
	if p.Scheduler = f.Scheduler; p.Scheduler == SchedulerShoal {
		p.Scheduler = "" // canonical
	}
	if p.StarveAfter, err = policyDuration("starve_after", f.StarveAfter, 0); err != nil {
		return Policy{}, err
	}
	if p.AgingHalf, err = policyDuration("aging_half", f.AgingHalf, 0); err != nil {
		return Policy{}, err
	}
	if p.OutputRetention, err = policyDuration("output_retention", f.OutputRetention, 0); err != nil {
		return Policy{}, err
	}
	if err := p.Validate(); err != nil {
		return Policy{}, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}

// policyDuration parses a duration field; absent, it is def.
func policyDuration(field, s string, def time.Duration) (time.Duration, error) {
	if s == "" {
		return def, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("policy: %s %q: want a duration such as \"168h\" or \"30m\"", field, s)
	}
	return d, nil
}

// File returns p in its JSON file form.
func (p *Policy) File() PolicyFile {
	f := PolicyFile{Weights: p.Weights, MaxAge: p.MaxAge.String(), HalfLife: p.HalfLife.String(),
		MaxSubmitJobs: p.MaxSubmitJobs, MaxJobCount: p.MaxJobCount, Operators: p.Operators, PrivateJobs: p.PrivateJobs}
	if len(p.Accounts) > 0 {
		f.Accounts = make(map[string]AccountFile, len(p.Accounts))
		for _, a := range p.Accounts {
			af := AccountFile{Shares: a.Shares}
			if len(a.Users) > 0 {
				af.Users = make(map[string]int64, len(a.Users))
				for _, u := range a.Users {
					af.Users[u.Name] = u.Shares
				}
			}
			f.Accounts[a.Name] = af
		}
	}
	if len(p.QoS) > 0 {
		f.QoS = make(map[string]int64, len(p.QoS))
		for _, q := range p.QoS {
			f.QoS[q.Name] = q.Priority
			if q.MaxGPUsPerUser > 0 {
				if f.QoSLimits == nil {
					f.QoSLimits = map[string]QoSLimitFile{}
				}
				f.QoSLimits[q.Name] = QoSLimitFile{MaxGPUsPerUser: q.MaxGPUsPerUser}
			}
		}
	}
	f.Partitions = partitionsToFile(p.Partitions)
	f.Preempt = preemptToFile(p.Preempt)
	if p.PreemptGrace > 0 {
		f.PreemptGrace = p.PreemptGrace.String()
	}
	if p.MinJobAge > 0 {
		f.MinJobAge = p.MinJobAge.String()
	}
	f.ArchiveMax = p.ArchiveMax
	f.ClusterName = p.ClusterName
	f.Scheduler = p.SchedulerName()
	if p.StarveAfter > 0 {
		f.StarveAfter = p.StarveAfter.String()
	}
	if p.AgingHalf > 0 {
		f.AgingHalf = p.AgingHalf.String()
	}
	if p.OutputRetention > 0 {
		f.OutputRetention = p.OutputRetention.String()
	}
	return f
}
