package api

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// Job is a job as `shoal job --json` and `shoal queue --json` print it.
type Job struct {
	ID         uint64           `json:"id"`
	Name       string           `json:"name"`
	User       string           `json:"user"`
	State      string           `json:"state"`
	Reason     string           `json:"reason"`
	Nodes      []string         `json:"nodes"`
	GPUs       map[string][]int `json:"gpus"`
	ExitCode   int              `json:"exit_code"`
	SubmitTime string           `json:"submit_time"`
	StartTime  string           `json:"start_time"`
	EndTime    string           `json:"end_time"`

	Command      []string `json:"command"`
	WorkDir      string   `json:"work_dir"`
	NumNodes     int      `json:"num_nodes"`
	GPUsPerNode  int      `json:"gpus_per_node"`
	TasksPerNode int      `json:"tasks_per_node"`
	// NTasks and Distribution: the job's -n and -m, when given (see
	// SubmitRequest); TasksPerNode is then the most a node runs.
	NTasks       int    `json:"ntasks,omitempty"`
	Distribution string `json:"distribution,omitempty"`
	// Pack: the ranks are packed in blocks, up to TasksPerNode on the
	// first nodes (cluster.Request.Pack).
	Pack bool `json:"pack,omitempty"`
	// NodeTasks, when set, is how many ranks each node (in Tasks' order)
	// runs, as the job's start laid them out from its nodes' free CPUs
	// (cluster.NodeAlloc.Tasks); the ranks are dealt over them by
	// Distribution (slurm.Deal).
	NodeTasks   []int  `json:"node_tasks,omitempty"`
	CPUsPerTask int    `json:"cpus_per_task"`
	TimeLimitS  int64  `json:"time_limit_s"`
	Incarnation uint64 `json:"incarnation"`
	Requeue     bool   `json:"requeue"`
	// CPUsPerNode and MemPerNodeMiB are what the job takes on each node
	// (MemWholeNode: all of its memory, --mem=0 or --exclusive);
	// CPUsPerGPU is --cpus-per-gpu.
	CPUsPerNode   int    `json:"cpus_per_node"`
	CPUsPerGPU    int    `json:"cpus_per_gpu,omitempty"`
	MemPerNodeMiB uint64 `json:"mem_per_node_mib,omitempty"`
	MemWholeNode  bool   `json:"mem_whole_node,omitempty"`
	// ReasonDetail says what a job pending with Resources waits for (GPUs,
	// CPUs or memory, with counts); only `shoal job` (GET /v1/jobs/{id})
	// fills it.
	ReasonDetail string `json:"reason_detail,omitempty"`
	// RestartCount is how many times the job was requeued (Slurm's
	// SLURM_RESTART_COUNT).
	RestartCount uint64 `json:"restart_count"`
	MasterPort   int    `json:"master_port,omitempty"`
	Tasks        []Task `json:"tasks"`
	// Batch says the job is a batch job (its script is not echoed back).
	Batch bool   `json:"batch"`
	Steps []Step `json:"steps"`

	// ReqNodeList, ExcNodeList, Features and Exclusive are the job's -w,
	// -x, -C and --exclusive, named as scontrol show job names them.
	ReqNodeList []string `json:"req_node_list,omitempty"`
	ExcNodeList []string `json:"exc_node_list,omitempty"`
	Features    string   `json:"features,omitempty"`
	Exclusive   bool     `json:"exclusive,omitempty"`
	// ArrayJobID and ArrayTaskID place an array element (ArrayTaskID is
	// -1 for a job that is not one); JobIDString is "12" or, for an element,
	// "12_3" as Slurm names it.
	ArrayJobID    uint64 `json:"array_job_id,omitempty"`
	ArrayTaskID   int    `json:"array_task_id"`
	ArrayThrottle int    `json:"array_throttle,omitempty"`
	JobIDString   string `json:"job_id_string"`
	// Dependency is the --dependency still recorded, in Slurm's syntax;
	// Hold is "user" or "admin" while held.
	Dependency string `json:"dependency,omitempty"`
	Hold       string `json:"hold,omitempty"`
	// Begin is the job's --begin (RFC 3339), if any.
	Begin string `json:"begin,omitempty"`
	// Deadline is the job's --deadline (RFC 3339), if any.
	Deadline string `json:"deadline,omitempty"`
	// Partition is the job's partition; empty when the cluster has none.
	Partition string `json:"partition,omitempty"`
	// Signal is the job's --signal, if any.
	Signal *cluster.JobSignal `json:"signal,omitempty"`
	// Account, QoS and Nice are the job's queue-policy fields (-A, -q,
	// --nice); see `shoal priority` for what they make of its priority.
	Account string `json:"account,omitempty"`
	QoS     string `json:"qos,omitempty"`
	Nice    int    `json:"nice,omitempty"`
	// UID and GID are the submitter's; StdOut and StdErr a batch job's
	// output files (on its first node), StdIn its input file (sbatch -i;
	// /dev/null without), as scontrol show job prints them.
	UID    int    `json:"uid"`
	GID    int    `json:"gid"`
	StdOut string `json:"std_out,omitempty"`
	StdErr string `json:"std_err,omitempty"`
	StdIn  string `json:"std_in,omitempty"`
	// Container is the job's --container bundle ("" for none).
	Container string `json:"container,omitempty"`
	// StdinNodes are the nodes whose own tasks read srun's stdin (srun
	// outside an allocation): srun relays it to each (AttachStdin).
	StdinNodes []string `json:"stdin_nodes,omitempty"`
	// AdminPriority is the priority root set (scontrol update Priority=),
	// 0 when the multifactor one applies.
	AdminPriority int64 `json:"admin_priority,omitempty"`
	// NodesMax is -N MIN-MAX's MAX (0: -N gave one count).
	NodesMax int `json:"nodes_max,omitempty"`
	// Comment is the job's comment (scontrol update Comment=).
	Comment string `json:"comment,omitempty"`
	// SubmitHost is the host the job was submitted from, as its client
	// said ("" when unknown).
	SubmitHost string `json:"submit_host,omitempty"`
	// Elastic says the job runs elastically (-N MIN-MAX): Nodes and
	// NumNodes are the nodes it has now, Resizes how it got there.
	Elastic bool     `json:"elastic,omitempty"`
	Resizes []Resize `json:"resizes,omitempty"`
}

// Resize is one size change of an elastic job's allocation.
type Resize struct {
	Time string `json:"time"`
	// Cause is "grow" (a node freed up and the job took it) or "shrink"
	// (it lost a node and went on without it).
	Cause string `json:"cause"`
	Node  string `json:"node"`
	// NumNodes is the job's node count after the change.
	NumNodes int `json:"num_nodes"`
}

// Step is one srun step of a job's current incarnation.
type Step struct {
	ID        int      `json:"id"`
	Name      string   `json:"name"`
	State     string   `json:"state"`
	ExitCode  int      `json:"exit_code"`
	Nodes     []string `json:"nodes"`
	NTasks    int      `json:"ntasks"`
	Command   []string `json:"command"`
	StartTime string   `json:"start_time"`
	EndTime   string   `json:"end_time"`
	// Usage is what the step's tasks used on each node that counted it
	// (cgroups), by node name.
	Usage map[string]cluster.Usage `json:"usage,omitempty"`
	// StdinNodes are the nodes whose tasks read srun's stdin (srun
	// --input=all or -i N): srun relays it to each (AttachStdin).
	StdinNodes []string `json:"stdin_nodes,omitempty"`
	// NodeTasks are the step's tasks on each node, in node order: which
	// ranks, and whether they have all ended (srun -W watches them).
	NodeTasks []StepNodeTasks `json:"node_tasks,omitempty"`
}

// StepNodeTasks is one node's tasks of a step.
type StepNodeTasks struct {
	Node string `json:"node"`
	// Ranks are the global ranks (SLURM_PROCID) the node runs.
	Ranks    []int  `json:"ranks"`
	State    string `json:"state"` // cluster.TaskState
	ExitCode int    `json:"exit_code"`
	// GPUs and CPUs are what a step that holds them (srun without
	// --overlap) holds of the job's on the node: GPU indices, and CPU
	// positions as a list ("0-3"); empty for a shared step.
	GPUs []int  `json:"gpus,omitempty"`
	CPUs string `json:"cpus,omitempty"`
}

// Task is one node's share of a running or finished job.
type Task struct {
	Node     string `json:"node"`
	GPUs     []int  `json:"gpus"`
	State    string `json:"state"`
	ExitCode int    `json:"exit_code"`
	// CPUs are the job's CPUs on the node (positions, cpulist form
	// "0-3,8"), MemMiB its memory there.
	CPUs   string `json:"cpus,omitempty"`
	MemMiB uint64 `json:"mem_mib,omitempty"`
	// Usage is what the node's tasks used, once they exited; nil when the
	// node did not count it (no cgroups).
	Usage *cluster.Usage `json:"usage,omitempty"`
	// GPUUsage is what the job's GPUs on the node did, as last recorded
	// (periodically while it runs, and with its exit); nil when the node
	// did not sample them.
	GPUUsage *cluster.GPUUsage `json:"gpu_usage,omitempty"`
}

// Node is a node as `shoal nodes --json` prints it.
type Node struct {
	Name      string `json:"name"`
	State     string `json:"state"` // IDLE, MIXED, ALLOCATED, DOWN, DRAIN
	GPUs      int    `json:"gpus"`
	GPUsFree  int    `json:"gpus_free"`
	GPUModel  string `json:"gpu_model"`
	CPUs      int    `json:"cpus"`
	MemoryMiB uint64 `json:"memory_mib"`
	// CPUsAlloc and MemAllocMiB are what running jobs hold; Sockets,
	// CoresPerSocket and ThreadsPerCore the CPU layout (0: unknown).
	CPUsAlloc      int    `json:"cpus_alloc"`
	MemAllocMiB    uint64 `json:"mem_alloc_mib"`
	Sockets        int    `json:"sockets,omitempty"`
	CoresPerSocket int    `json:"cores_per_socket,omitempty"`
	ThreadsPerCore int    `json:"threads_per_core,omitempty"`
	Switch         string `json:"switch"`
	SwitchParent   string `json:"switch_parent"`
	Block          string `json:"block,omitempty"`
	Raft           string `json:"raft"` // leader, voter, nonvoter, none
	Address        string `json:"address"`
	Reason         string `json:"reason,omitempty"`
	Version        string `json:"version"`

	// Features are the node's features (its agent's --features).
	Features []string `json:"features,omitempty"`
}

// Member is one entry of the gossip view (`shoal members --json`).
type Member struct {
	Name    string `json:"name"`
	Address string `json:"address"` // gossip host:port
	Status  string `json:"status"`  // alive, suspect, failed, left
	APIAddr string `json:"api_address"`
	GPUs    int    `json:"gpus"`
	Switch  string `json:"switch"`
	Version string `json:"version"`
}

// Leader names the current raft leader.
type Leader struct {
	Name    string `json:"name"`
	Address string `json:"address"` // the leader's HTTP API host:port
}

// Status describes one agent.
type Status struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	RaftState    string `json:"raft_state"`
	Leader       string `json:"leader"`
	AppliedIndex uint64 `json:"applied_index"`
	// StateHash is the FSM's running hash (hex) over every entry applied
	// up to HashIndex: replicas at the same index must agree (DESIGN
	// invariant 5).
	StateHash string `json:"state_hash"`
	HashIndex uint64 `json:"hash_index"`
	Diverged  string `json:"diverged,omitempty"`
	// Worker is set on a node outside the raft configuration: it keeps no
	// replica current (AppliedIndex and StateHash are its stale one's),
	// and its reads of the state are answered by the leader.
	Worker bool `json:"worker,omitempty"`
	// Security is "tls" (mutual TLS between nodes, TLS API, encrypted
	// gossip) or "insecure" (--insecure: none of it).
	Security string `json:"security"`
	// CertExpires is when this node's certificate expires (RFC 3339).
	CertExpires string `json:"cert_expires,omitempty"`
	Nodes       int    `json:"nodes"`
	Jobs        int    `json:"jobs"`
}

// SubmitRequest is the body of POST /v1/jobs.
type SubmitRequest struct {
	// RequestID makes retries safe: the same id yields its first job
	// while that job is live, and for ten minutes at least
	// (cluster.RequestIDRetention); after both, a new one.
	RequestID    string   `json:"request_id"`
	Name         string   `json:"name"`
	Command      []string `json:"command"`
	Env          []string `json:"env,omitempty"`
	WorkDir      string   `json:"work_dir"`
	Nodes        int      `json:"nodes"`
	GPUsPerNode  int      `json:"gpus_per_node"`
	TasksPerNode int      `json:"tasks_per_node"`
	// NTasks, when set, is the job's rank count (sbatch -n), laid out by
	// Distribution (-m; "" is block); TasksPerNode is then the most a node
	// runs.
	NTasks       int    `json:"ntasks,omitempty"`
	Distribution string `json:"distribution,omitempty"`
	CPUsPerTask  int    `json:"cpus_per_task"`
	TimeLimitS   int64  `json:"time_limit_s"`
	// Requeue sends the job back to the queue if it loses a node.
	Requeue bool `json:"requeue,omitempty"`
	// NodeList (-w), Exclude (-x), Constraint (-C) and Exclusive
	// (--exclusive) limit the job's nodes; see cluster.Request.
	NodeList   []string `json:"node_list,omitempty"`
	Exclude    []string `json:"exclude,omitempty"`
	Constraint string   `json:"constraint,omitempty"`
	Exclusive  bool     `json:"exclusive,omitempty"`
	// Account (-A), QoS (-q) and Nice (--nice; negative for root only)
	// place the job in the queue policy.
	Account string `json:"account,omitempty"`
	QoS     string `json:"qos,omitempty"`
	Nice    int    `json:"nice,omitempty"`
	// Batch makes this a batch job (sbatch): its script runs on the first
	// node and launches steps; Command must then be empty.
	Batch *cluster.Batch `json:"batch,omitempty"`
	// Signal is --signal=[B:]SIG[@SECONDS]: SIG sent Before the time limit.
	Signal *cluster.JobSignal `json:"signal,omitempty"`
	// Dependency, Array and Hold are sbatch's --dependency, --array and
	// --hold, already parsed.
	Dependency *cluster.Dependency `json:"dependency,omitempty"`
	Array      *cluster.ArraySpec  `json:"array,omitempty"`
	Hold       bool                `json:"hold,omitempty"`
	// Begin (--begin, RFC 3339) keeps the job pending, with reason
	// BeginTime, until then.
	Begin string `json:"begin,omitempty"`
	// Deadline (--deadline, RFC 3339): a job that cannot end by then is
	// refused, or, pending, ends DEADLINE.
	Deadline string `json:"deadline,omitempty"`
	// NoKill (--no-kill) keeps the job running when it loses a node other
	// than its first.
	NoKill bool `json:"no_kill,omitempty"`
	// Container (--container) is the absolute path of the OCI bundle the
	// job's tasks run in.
	Container string `json:"container,omitempty"`
	// Pty (srun --pty) runs rank 0 on a terminal: GET
	// /v1/jobs/{id}/pty?step=-1 attaches to it.
	Pty bool `json:"pty,omitempty"`
	// Stdin relays srun's stdin to the job's tasks: "all" or a task's
	// number; empty: none (/dev/null). GET /v1/jobs/{id}/stdin?step=-1
	// carries it.
	Stdin string `json:"stdin,omitempty"`
	// Partition is -p: empty for the default one.
	Partition string `json:"partition,omitempty"`
	// NodesMax is --nodes MIN-MAX's MAX (Nodes the MIN): the job starts on
	// as many as fit, up to it.
	NodesMax int `json:"nodes_max,omitempty"`
	// GPUsTotal is --gpus without --nodes: the agent spreads them evenly
	// over the fewest nodes that can hold them (Nodes and GPUsPerNode
	// then set by it).
	GPUsTotal int `json:"gpus_total,omitempty"`
	// GPUOption is the option the GPUs were asked with ("gpus-per-node",
	// "gpus", or "" for --gres): it decides which of Slurm's variables
	// the job sees.
	GPUOption string `json:"gpu_option,omitempty"`
	// SubmitHost is the client's host name (SLURM_SUBMIT_HOST).
	SubmitHost string `json:"submit_host,omitempty"`
	// MemPerNodeMiB is --mem, MemPerCPUMiB --mem-per-cpu, MemPerGPUMiB
	// --mem-per-gpu (at most one), MemWholeNode --mem=0: the memory the
	// job holds on each node and its cgroup limit. CPUsPerGPU is
	// --cpus-per-gpu (not with cpus_per_task above 1).
	MemPerNodeMiB uint64 `json:"mem_per_node_mib,omitempty"`
	MemPerCPUMiB  uint64 `json:"mem_per_cpu_mib,omitempty"`
	MemPerGPUMiB  uint64 `json:"mem_per_gpu_mib,omitempty"`
	MemWholeNode  bool   `json:"mem_whole_node,omitempty"`
	CPUsPerGPU    int    `json:"cpus_per_gpu,omitempty"`
	// MinCPUs is --mincpus: the least CPUs each node gives the job.
	MinCPUs int `json:"min_cpus,omitempty"`
	// Switches and SwitchesWaitS are --switches=COUNT@WAIT.
	Switches      int   `json:"switches,omitempty"`
	SwitchesWaitS int64 `json:"switches_wait_s,omitempty"`
}

// StepRequest is the body of POST /v1/jobs/{id}/steps (srun inside an
// allocation).
type StepRequest struct {
	// Incarnation is the run of the job the step belongs to
	// (SHOAL_INCARNATION in the caller's environment).
	Incarnation uint64           `json:"incarnation"`
	Spec        cluster.StepSpec `json:"spec"`
	// RequestID makes the step safe to send again after a leader change:
	// the same id never starts two steps once every raft server speaks
	// protocol 6. Until then the leader drops it and an unknown outcome
	// is answered as final (500), by the leader or, when the leader died
	// before answering, by the agent that forwarded the request.
	RequestID string `json:"request_id,omitempty"`
}

// StepResponse answers POST /v1/jobs/{id}/steps.
type StepResponse struct {
	Step int `json:"step"`
	// Incarnation is the run of the job the step belongs to: step ids
	// start again at 0 when a job is requeued, so (incarnation, step)
	// names one step's output.
	Incarnation uint64 `json:"incarnation"`
}

// DrainRequest is the body of POST /v1/nodes/{name}/drain.
type DrainRequest struct {
	Reason string `json:"reason"`
}

// LeaveRequest is the body of POST /v1/agent/leave (shoal leave):
// DrainWaitS, when set, is how long to drain before stopping (else the
// agent's --drain-on-stop).
type LeaveRequest struct {
	DrainWaitS *int64 `json:"drain_wait_s,omitempty"`
}

// LeaveResponse answers it: the node that is leaving, and the agent's
// process id, so that a caller on the same host (through the Unix socket)
// can wait for the process itself to exit: the agent stops answering
// before it has closed its tasks, raft and data dir.
type LeaveResponse struct {
	Node string `json:"node"`
	PID  int    `json:"pid,omitempty"`
}

// TestOnlyResponse answers POST /v1/jobs?test_only=1 (sbatch
// --test-only): the id the job would get, when (RFC 3339) and where it
// could start, as an estimate that counts running jobs' time limits but
// not the jobs queued ahead of it.
type TestOnlyResponse struct {
	Job       uint64   `json:"job"`
	Start     string   `json:"start"`
	Nodes     []string `json:"nodes"`
	CPUs      int      `json:"cpus"`
	Partition string   `json:"partition,omitempty"`
}

// JobsChanged answers a write on a job reference (cancel, hold, release,
// requeue): ID is the job or array named, IDs the jobs it changed.
type JobsChanged struct {
	ID  uint64   `json:"id"`
	IDs []uint64 `json:"ids"`
}

// SubmitResponse answers POST /v1/jobs.
type SubmitResponse struct {
	ID        uint64 `json:"id"`
	Duplicate bool   `json:"duplicate,omitempty"`
	// Warnings are what the job was accepted despite (a QoS the policy
	// does not name), to print as the CLI's warnings.
	Warnings []string `json:"warnings,omitempty"`
}

// LogChunk is one rank's output stream.
type LogChunk struct {
	Node        string `json:"node"`
	Incarnation uint64 `json:"incarnation"`
	// Step is the srun step the output belongs to, or -1 for the job's
	// own tasks (its command, or its batch script).
	Step   int    `json:"step"`
	Rank   int    `json:"rank"`
	Stream string `json:"stream"` // stdout or stderr
	Data   string `json:"data"`
	// Offset is where Data starts in the rank's file, and Size the file's
	// size when read: pass Size back to read only what came after.
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Error  string `json:"error,omitempty"` // the node holding it could not be read
}

// JobGPU is what a job's GPUs on one node did over time, for one run
// (incarnation) of the job, as that node's agent sampled them; kept while
// the job is live (GET /v1/jobs/{id}/gpu).
type JobGPU struct {
	Node        string            `json:"node"`
	Incarnation uint64            `json:"incarnation"`
	Series      cluster.GPUSeries `json:"series"`
	Error       string            `json:"error,omitempty"` // the node holding it could not be read
}

// Error is every error response's body.
type Error struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

// Internal node-to-node messages.

// Heartbeat renews a node's lease with the leader and carries its full
// record, so the leader can register or update it.
type Heartbeat struct {
	Node cluster.Node `json:"node"`
}

// HeartbeatReply acknowledges a heartbeat. Index is the leader's applied
// index when it renewed the lease: the node starts no rank until its own
// replica has applied that far, so it never acts on an allocation the
// cluster has already taken back from it. TTL is how long the renewal
// holds, counted from when the node sent it (leader.GrantLease: at least
// --lease-ttl, stretched as the cluster grows), and RenewEvery when the
// node should renew next; both are absent from a leader older than
// stretched leases, whose renewals hold for --lease-ttl.
type HeartbeatReply struct {
	Index      uint64        `json:"index"`
	TTL        time.Duration `json:"ttl_ns,omitempty"`
	RenewEvery time.Duration `json:"renew_every_ns,omitempty"`
}

// TaskEvent reports a node's tasks of one job incarnation starting or
// exiting; the leader turns it into a TaskStarted or TaskExited command.
type TaskEvent struct {
	Kind        string        `json:"kind"` // started, exited, step-exited or gpu-usage
	Step        int           `json:"step,omitempty"`
	Job         cluster.JobID `json:"job"`
	Incarnation uint64        `json:"incarnation"`
	Node        string        `json:"node"`
	// Join is the node's entry in the allocation the tasks ran under
	// (cluster.NodeAlloc.Join): 0 but on a node an elastic job took back.
	Join     int    `json:"join,omitempty"`
	ExitCode int    `json:"exit_code"`
	Cause    string `json:"cause"`
	// Usage is what the tasks used, with an exit; nil when not counted.
	Usage *cluster.Usage `json:"usage,omitempty"`
	// GPUUsage is what the job's GPUs on the node did so far: with an
	// exit, and alone (kind gpu-usage) while the job runs.
	GPUUsage *cluster.GPUUsage `json:"gpu_usage,omitempty"`
}

// FormatTime renders t as RFC 3339 in UTC, or "" for the zero time.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// JoinTokenRequest asks for a join token (root only).
type JoinTokenRequest struct {
	// TTLS is how long the token is valid, in seconds (0: an hour).
	TTLS int64 `json:"ttl_s"`
	// Uses is how many nodes may join with it (0: one).
	Uses int `json:"uses"`
}

// JoinTokenResponse carries a new token's text; its secret is shown only
// here.
type JoinTokenResponse struct {
	Token   string `json:"token"`
	Expires string `json:"expires"`
	Uses    int    `json:"uses"`
}

// JoinRequest is a new node's request for its certificate: the token's id
// and secret, and a certificate request signed by the node's own key.
type JoinRequest struct {
	TokenID string   `json:"token_id"`
	Secret  string   `json:"secret"`
	CSR     string   `json:"csr"`
	IPs     []string `json:"ips"`
}

// JoinResponse is what a joining node needs: its certificate, the CA and
// the gossip keyring (base64, the primary first).
type JoinResponse struct {
	Cert       string   `json:"cert"`
	CA         string   `json:"ca"`
	GossipKeys []string `json:"gossip_keys"`
}

// KeyringRequest changes the gossip keyring (root only): op is install,
// use or remove, key a base64 key.
type KeyringRequest struct {
	Op  string `json:"op"`
	Key string `json:"key"`
}

// Keyring is the cluster's gossip keyring and this agent's.
type Keyring struct {
	// Cluster is the replicated keyring, the primary first.
	Cluster []string `json:"cluster"`
	// Local is the keyring this agent's gossip uses now.
	Local []string `json:"local"`
}

// RenewRequest is a node's request for a new certificate, sent with its
// current one.
type RenewRequest struct {
	CSR string `json:"csr"`
}

// RenewResponse carries the renewed certificate.
type RenewResponse struct {
	Cert string `json:"cert"`
}

// ClusterCA is a node's offer of the cluster CA (with its key) and the
// gossip key to the replicated state.
type ClusterCA struct {
	CACert    string `json:"ca_cert"`
	CAKey     string `json:"ca_key"`
	GossipKey string `json:"gossip_key"`
}

// UserTokenRequest asks for a user token (root only). The CLI resolves the
// user's uid and gid where root typed the command.
type UserTokenRequest struct {
	User string `json:"user"`
	UID  int    `json:"uid"`
	GID  int    `json:"gid"`
	// TTLS is the token's lifetime in seconds (0: a day).
	TTLS int64 `json:"ttl_s"`
}

// UserTokenResponse carries a new user token.
type UserTokenResponse struct {
	Token   string `json:"token"`
	ID      string `json:"id"`
	Expires string `json:"expires"`
}

// RevokeUserTokenRequest revokes a user token (root only), given whole so
// the cluster learns its id and expiry from its signed claims.
type RevokeUserTokenRequest struct {
	Token string `json:"token"`
}

// LogFilter selects which of a job's output files to read, and from
// where (GET /v1/jobs/{id}/logs?step=S&from=KEY:OFFSET...): a step (-1
// for the job's own tasks, nil for all) and, per LogKey, the offset
// already read.
type LogFilter struct {
	Step *int
	From map[string]int64
}

// Query is the filter as the query string of a logs request ("" for
// none), as an agent passes it on to the node that holds the files.
func (f LogFilter) Query() string {
	q := make([]string, 0, len(f.From)+1)
	if f.Step != nil {
		q = append(q, "step="+strconv.Itoa(*f.Step))
	}
	for k, off := range f.From {
		q = append(q, "from="+url.QueryEscape(k+":"+strconv.FormatInt(off, 10)))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + strings.Join(q, "&")
}
