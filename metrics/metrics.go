// Package metrics owns the agent's Prometheus exposition at /metrics: the
// one table of the metrics Shoal exports (Table), the values read from
// the agent at scrape time (Reading, turned into samples by the pure
// Samples), and the histograms the agent's loops observe as things
// happen. The Go and process collectors of client_golang come with it.
package metrics

import (
	"cmp"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/fsm"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/gpu"
)

// Kind is a metric's Prometheus type.
type Kind int

const (
	Gauge Kind = iota
	Counter
	Histogram
)

// Desc describes one metric of Table.
type Desc struct {
	Name   string
	Kind   Kind
	Labels []string
	Help   string
	// Scope says where it is exported: "every agent", or "the leader".
	Scope string
}

// Names of the exported metrics. Every one is in Table; the README's
// table lists the same (TestREADMEListsEveryMetric).
const (
	RaftTerm          = "shoal_raft_term"
	RaftLastIndex     = "shoal_raft_last_index"
	RaftCommitIndex   = "shoal_raft_commit_index"
	RaftAppliedIndex  = "shoal_raft_applied_index"
	RaftLeader        = "shoal_raft_leader"
	RaftVoters        = "shoal_raft_voters"
	RaftNonvoters     = "shoal_raft_nonvoters"
	RaftLeaderChanges = "shoal_raft_leader_changes_total"
	RaftApplySeconds  = "shoal_raft_apply_duration_seconds"

	GossipMembers       = "shoal_gossip_members"
	GossipProbeFailures = "shoal_gossip_probe_failures_total"
	GossipHealthScore   = "shoal_gossip_health_score"

	SchedJobsPending   = "shoal_scheduler_jobs_pending"
	SchedJobsRunning   = "shoal_scheduler_jobs_running"
	SchedPlacements    = "shoal_scheduler_placements_total"
	SchedPreemptions   = "shoal_scheduler_preemptions_total"
	SchedPassSeconds   = "shoal_scheduler_pass_duration_seconds"
	SchedSubmitToStart = "shoal_scheduler_submit_to_start_seconds"

	NodeGPUs            = "shoal_node_gpus"
	NodeGPUsAllocated   = "shoal_node_gpus_allocated"
	NodeCPUs            = "shoal_node_cpus"
	NodeCPUsAllocated   = "shoal_node_cpus_allocated"
	NodeMemoryBytes     = "shoal_node_memory_bytes"
	NodeMemoryAllocated = "shoal_node_memory_allocated_bytes"
	NodeGPUUtilization  = "shoal_node_gpu_utilization_ratio"
	NodeGPUMemoryUsed   = "shoal_node_gpu_memory_used_bytes"
	NodeGPUTemperature  = "shoal_node_gpu_temperature_celsius"
	NodeGPUPower        = "shoal_node_gpu_power_watts"
	JobGPUUtilization   = "shoal_job_gpu_utilization_ratio"
	JobGPUMemoryUsed    = "shoal_job_gpu_memory_used_bytes"
	NodeTasksRunning    = "shoal_node_tasks_running"
	NodeLeaseAge        = "shoal_node_lease_age_seconds"
	NodeLeaseTTL        = "shoal_node_lease_ttl_seconds"
	NodeFencings        = "shoal_node_fencings_total"
	LeaseRenewals       = "shoal_lease_renewals_total"
)

const (
	everyAgent = "every agent"
	theLeader  = "the leader"
)

// Table is every metric Shoal exports besides client_golang's go_* and
// process_*, in the order of the README's table.
var Table = []Desc{
	{RaftTerm, Gauge, nil, "Current raft term of this server.", everyAgent},
	{RaftLastIndex, Gauge, nil, "Index of the last entry in this server's raft log.", everyAgent},
	{RaftCommitIndex, Gauge, nil, "Highest raft index this server knows to be committed.", everyAgent},
	{RaftAppliedIndex, Gauge, nil, "Highest raft index applied to this server's state.", everyAgent},
	{RaftLeader, Gauge, nil, "1 when this server is the raft leader, else 0.", everyAgent},
	{RaftVoters, Gauge, nil, "Voters in the raft configuration.", everyAgent},
	{RaftNonvoters, Gauge, nil, "Non-voters in the raft configuration.", everyAgent},
	{RaftLeaderChanges, Counter, nil, "Leader elections this server saw since it started.", everyAgent},
	{RaftApplySeconds, Histogram, nil, "Time from proposing a command on this server to its being applied.", everyAgent},
	{GossipMembers, Gauge, []string{"state"}, "Gossip members this agent knows, by state (alive, suspect, failed, left).", everyAgent},
	{GossipProbeFailures, Counter, nil, "Probes of this agent that got no ack, direct or indirect (each made it suspect the member).", everyAgent},
	{GossipHealthScore, Gauge, nil, "memberlist's awareness of this agent's own health (Lifeguard): 0 healthy, higher as its probes fail.", everyAgent},
	{SchedJobsPending, Gauge, []string{"reason"}, "Pending jobs by the reason they wait.", theLeader},
	{SchedJobsRunning, Gauge, nil, "Jobs running (or starting, or ending) that hold resources.", theLeader},
	{SchedPlacements, Counter, nil, "Jobs this server placed while it led.", everyAgent},
	{SchedPreemptions, Counter, nil, "Jobs this server preempted while it led.", everyAgent},
	{SchedPassSeconds, Histogram, nil, "Duration of a scheduling pass (decide and apply).", everyAgent},
	{SchedSubmitToStart, Histogram, nil, "Time from a job's submission to its placement.", everyAgent},
	{NodeGPUs, Gauge, nil, "GPUs this node announced.", everyAgent},
	{NodeGPUsAllocated, Gauge, nil, "GPUs of this node held by jobs.", everyAgent},
	{NodeCPUs, Gauge, nil, "CPUs this node announced.", everyAgent},
	{NodeCPUsAllocated, Gauge, nil, "CPUs of this node held by jobs.", everyAgent},
	{NodeMemoryBytes, Gauge, nil, "Memory this node announced, in bytes.", everyAgent},
	{NodeMemoryAllocated, Gauge, nil, "Memory of this node held by jobs, in bytes.", everyAgent},
	{NodeGPUUtilization, Gauge, []string{"gpu"}, "Fraction of the last sample period a kernel ran on the GPU (NVML; simulated GPUs: the synthetic load of a held GPU).", everyAgent},
	{NodeGPUMemoryUsed, Gauge, []string{"gpu"}, "GPU memory in use, in bytes.", everyAgent},
	{NodeGPUTemperature, Gauge, []string{"gpu"}, "GPU temperature (absent when the device does not report it).", everyAgent},
	{NodeGPUPower, Gauge, []string{"gpu"}, "GPU power draw in watts (absent when the device does not report it).", everyAgent},
	{JobGPUUtilization, Gauge, []string{"job", "user"}, "Mean utilization of the GPUs a running job holds on this node (labels only while it runs).", everyAgent},
	{JobGPUMemoryUsed, Gauge, []string{"job", "user"}, "GPU memory in use on the GPUs a running job holds on this node, in bytes.", everyAgent},
	{NodeTasksRunning, Gauge, nil, "Tasks this agent supervises.", everyAgent},
	{NodeLeaseAge, Gauge, nil, "Seconds since the leader last renewed this node's lease (absent before the first).", everyAgent},
	{NodeLeaseTTL, Gauge, nil, "How long the leader granted this node's last renewal (--lease-ttl, stretched as the cluster grows; absent before the first).", everyAgent},
	{NodeFencings, Counter, nil, "Times this node fenced its tasks because its lease ran out.", everyAgent},
	{LeaseRenewals, Counter, nil, "Lease renewals (node heartbeats) this server answered while it led.", everyAgent},
}

// Reading is what the agent gathers at scrape time.
type Reading struct {
	Now  time.Time
	Node string // this node's name
	// View is the replicated state; nil before the replica is readable.
	View *fsm.View
	// Leader: this agent leads (the scheduler's gauges come only from it,
	// so a sum over agents counts each job once).
	Leader             bool
	Raft               RaftReading
	Members            []gossip.Member
	ProbeFailures      uint64
	HealthScore        int
	TasksRunning       int
	LastRenew          time.Time // zero: no lease yet
	LeaseTTL           time.Duration
	LeaseRenewals      uint64
	Placements         uint64
	Preemptions        uint64
	Fencings           uint64
	RaftLeaderChanges  uint64
	RaftConfigReadable bool // Voters and Nonvoters are known
	// GPU is the node's last GPU sample; nil before the first, or
	// without a sampler.
	GPU *GPUReading
}

// GPUReading is one sample of this node's GPUs and the jobs that held
// each GPU when it was taken.
type GPUReading struct {
	Samples []gpu.Sample
	Holders map[int]JobRef // by GPU index
}

// JobRef names a job in per-job labels (ID and User; the incarnation
// only tells runs apart).
type JobRef struct {
	ID          cluster.JobID
	User        string
	Incarnation uint64
}

// JobGPU is one job's share of a GPU sample: each of its GPUs'
// utilization and their memory together.
type JobGPU struct {
	Utils    []float64
	MemBytes uint64
}

// ByJob splits a sample by the jobs holding the GPUs. Pure.
func ByJob(r GPUReading) map[JobRef]JobGPU {
	out := map[JobRef]JobGPU{}
	for _, s := range r.Samples {
		ref, ok := r.Holders[s.Index]
		if !ok {
			continue
		}
		jg := out[ref]
		jg.Utils = append(jg.Utils, s.Utilization)
		jg.MemBytes += s.MemoryUsedBytes
		out[ref] = jg
	}
	return out
}

// GPUHolders returns which job holds each of node's GPUs: allocations not
// yet released. Pure.
func GPUHolders(jobs []*cluster.Job, node string) map[int]JobRef {
	out := map[int]JobRef{}
	for _, j := range jobs {
		if j.Alloc == nil {
			continue
		}
		for _, na := range j.Alloc.Nodes {
			if na.Node != node || na.Released {
				continue
			}
			for _, g := range na.GPUs {
				out[g] = JobRef{ID: j.ID, User: j.Spec.User, Incarnation: j.Incarnation}
			}
		}
	}
	return out
}

// RaftReading is raft's part of a Reading.
type RaftReading struct {
	Term, LastIndex, CommitIndex, AppliedIndex uint64
	Voters, Nonvoters                          int
}

// Sample is one value of one metric.
type Sample struct {
	Name   string
	Labels []string // values, in the order of the Desc's Labels
	Value  float64
}

// Samples turns a reading into the gauge and counter values it gives, in
// Table order (labelled ones sorted by label). Pure.
func Samples(r Reading) []Sample {
	var out []Sample
	add := func(name string, v float64, labels ...string) {
		out = append(out, Sample{Name: name, Labels: labels, Value: v})
	}
	add(RaftTerm, float64(r.Raft.Term))
	add(RaftLastIndex, float64(r.Raft.LastIndex))
	add(RaftCommitIndex, float64(r.Raft.CommitIndex))
	add(RaftAppliedIndex, float64(r.Raft.AppliedIndex))
	add(RaftLeader, b2f(r.Leader))
	if r.RaftConfigReadable {
		add(RaftVoters, float64(r.Raft.Voters))
		add(RaftNonvoters, float64(r.Raft.Nonvoters))
	}
	add(RaftLeaderChanges, float64(r.RaftLeaderChanges))

	byState := map[gossip.MemberStatus]int{}
	for _, m := range r.Members {
		byState[m.Status]++
	}
	for _, st := range []gossip.MemberStatus{gossip.StatusAlive, gossip.StatusFailed, gossip.StatusLeft, gossip.StatusSuspect} {
		add(GossipMembers, float64(byState[st]), string(st))
	}
	add(GossipProbeFailures, float64(r.ProbeFailures))
	add(GossipHealthScore, float64(r.HealthScore))

	if r.Leader && r.View != nil {
		pending, running := jobCounts(r.View.Jobs())
		for _, reason := range slices.Sorted(maps.Keys(pending)) {
			add(SchedJobsPending, float64(pending[reason]), reason)
		}
		add(SchedJobsRunning, float64(running))
	}
	add(SchedPlacements, float64(r.Placements))
	add(SchedPreemptions, float64(r.Preemptions))

	if r.View != nil {
		if n, ok := r.View.Node(r.Node); ok {
			held := heldOn(r.View.Jobs(), r.Node)
			add(NodeGPUs, float64(len(n.GPUs)))
			add(NodeGPUsAllocated, float64(held.gpus))
			add(NodeCPUs, float64(n.CPUs))
			add(NodeCPUsAllocated, float64(held.cpus))
			add(NodeMemoryBytes, mib(n.MemoryMiB))
			add(NodeMemoryAllocated, mib(held.memMiB))
		}
	}
	if r.GPU != nil {
		out = append(out, gpuSamples(*r.GPU)...)
	}
	add(NodeTasksRunning, float64(r.TasksRunning))
	if !r.LastRenew.IsZero() {
		add(NodeLeaseAge, r.Now.Sub(r.LastRenew).Seconds())
		add(NodeLeaseTTL, r.LeaseTTL.Seconds())
	}
	add(NodeFencings, float64(r.Fencings))
	add(LeaseRenewals, float64(r.LeaseRenewals))
	return out
}

// gpuSamples gives each GPU's figures and each holding job's: the mean
// utilization and the total memory of its GPUs here.
func gpuSamples(r GPUReading) []Sample {
	var out []Sample
	for _, s := range r.Samples {
		g := strconv.Itoa(s.Index)
		out = append(out, Sample{NodeGPUUtilization, []string{g}, s.Utilization},
			Sample{NodeGPUMemoryUsed, []string{g}, float64(s.MemoryUsedBytes)})
		if s.TemperatureC > 0 {
			out = append(out, Sample{NodeGPUTemperature, []string{g}, s.TemperatureC})
		}
		if s.PowerWatts > 0 {
			out = append(out, Sample{NodeGPUPower, []string{g}, s.PowerWatts})
		}
	}
	byJob := ByJob(r)
	refs := slices.SortedFunc(maps.Keys(byJob), func(a, b JobRef) int { return cmp.Compare(a.ID, b.ID) })
	for _, ref := range refs {
		jg := byJob[ref]
		var sum float64
		for _, u := range jg.Utils {
			sum += u
		}
		labels := []string{strconv.FormatUint(uint64(ref.ID), 10), ref.User}
		out = append(out, Sample{JobGPUUtilization, labels, sum / float64(len(jg.Utils))},
			Sample{JobGPUMemoryUsed, labels, float64(jg.MemBytes)})
	}
	return out
}

// jobCounts counts pending jobs by reason ("None", as squeue shows it,
// when the leader gave none yet) and the jobs that hold resources.
func jobCounts(jobs []*cluster.Job) (pending map[string]int, running int) {
	pending = map[string]int{}
	for _, j := range jobs {
		switch {
		case j.State == cluster.JobPending:
			reason := j.Reason
			if reason == cluster.ReasonNone {
				reason = "None"
			}
			pending[reason]++
		case j.HoldsResources():
			running++
		}
	}
	return pending, running
}

type held struct {
	gpus, cpus int
	memMiB     uint64
}

// heldOn sums what jobs hold on node: shares not yet released.
func heldOn(jobs []*cluster.Job, node string) held {
	var h held
	for _, j := range jobs {
		if j.Alloc == nil {
			continue
		}
		for _, na := range j.Alloc.Nodes {
			if na.Node == node && !na.Released {
				h.gpus += len(na.GPUs)
				h.cpus += len(na.CPUs)
				h.memMiB += na.MemMiB
			}
		}
	}
	return h
}

func mib(n uint64) float64 { return float64(n) * (1 << 20) }

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Metrics is an agent's registry: the Reading-based collector, the
// histograms its loops observe, and client_golang's Go and process
// collectors.
type Metrics struct {
	reg           *prometheus.Registry
	applySeconds  prometheus.Histogram
	passSeconds   prometheus.Histogram
	submitToStart prometheus.Histogram
}

// New returns the metrics of an agent whose state read returns at scrape
// time. read is called once per scrape, from the scraping goroutine.
func New(read func() Reading) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	hist := func(name string, buckets []float64) prometheus.Histogram {
		d := lookup(name)
		return prometheus.NewHistogram(prometheus.HistogramOpts{Name: d.Name, Help: d.Help, Buckets: buckets})
	}
	// Raft applies take milliseconds on a LAN; a pass is longer with many
	// jobs; waiting for a start spans seconds to days.
	m.applySeconds = hist(RaftApplySeconds, prometheus.ExponentialBuckets(0.0005, 2, 14))
	m.passSeconds = hist(SchedPassSeconds, prometheus.ExponentialBuckets(0.0005, 2, 16))
	m.submitToStart = hist(SchedSubmitToStart, prometheus.ExponentialBuckets(0.1, 4, 12))
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.applySeconds, m.passSeconds, m.submitToStart,
		readingCollector{read: read},
	)
	return m
}

// Handler serves the exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Applied observes one command's propose-to-apply time.
func (m *Metrics) Applied(d time.Duration) { m.applySeconds.Observe(d.Seconds()) }

// Passed observes one scheduling pass's duration.
func (m *Metrics) Passed(d time.Duration) { m.passSeconds.Observe(d.Seconds()) }

// Started observes a placed job's wait since its submission.
func (m *Metrics) Started(wait time.Duration) { m.submitToStart.Observe(wait.Seconds()) }

// lookup returns name's Desc; names come from this package's constants,
// so a miss is a bug in Table caught by the tests.
func lookup(name string) Desc {
	for _, d := range Table {
		if d.Name == name {
			return d
		}
	}
	panic("metrics: " + name + " is not in Table")
}

// readingCollector exports Samples of a fresh Reading at each scrape.
type readingCollector struct{ read func() Reading }

var descs = func() map[string]*prometheus.Desc {
	m := map[string]*prometheus.Desc{}
	for _, d := range Table {
		if d.Kind != Histogram {
			m[d.Name] = prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
		}
	}
	return m
}()

func (c readingCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range Table {
		if d.Kind != Histogram {
			ch <- descs[d.Name]
		}
	}
}

func (c readingCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range Samples(c.read()) {
		vt := prometheus.GaugeValue
		if lookup(s.Name).Kind == Counter {
			vt = prometheus.CounterValue
		}
		m, err := prometheus.NewConstMetric(descs[s.Name], vt, s.Value, s.Labels...)
		if err != nil {
			m = prometheus.NewInvalidMetric(descs[s.Name], err)
		}
		ch <- m
	}
}
