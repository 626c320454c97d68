package task

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"github.com/shoal-sched/shoal/cgroup"
)

// StepdArg is the argument that makes a binary run a task supervisor:
// `shoal stepd [--detach] TASKDIR` (see package stepd). The agent runs
// its exec.Config.StepdCommand with the task directory added, in a session
// of its own; earlier agents passed "--detach" too, which supervisors
// still accept (a supervisor binary may be newer than the agent). A
// binary whose StepdCommand does not name cmd/shoal (a test binary) must
// call stepd.Main itself when its os.Args[1] is StepdArg.
const StepdArg = "stepd"

// StepdProbe, as `shoal-slurm stepd StepdProbe`, asks whether that binary
// may supervise tasks in the agent's stead (exec.Config.StepdLightCommand);
// it exits 0 if so.
const StepdProbe = "--probe"

// Files of the supervisor in a task directory.
const (
	StepdFile = "stepd.json" // its input, written before it starts
	SockFile  = "stepd.sock" // its control socket, while it runs
	PtySock   = "pty.sock"   // its terminal's socket, for a --pty task (pty.go)
	StdinSock = "stdin.sock" // srun's stdin's socket, for ranks that read it (stdin.go)
	// StdinResumeSock is the same stdin's socket whose connection may be
	// made again (stdin.go).
	StdinResumeSock = "stdin2.sock"
	PMIxSock        = "pmix.sock" // a PMIx step's fences, on its first node (package pmix)
	StepdLog        = "stepd.log" // its log
)

const (
	// CtlTimeout bounds one control request to a supervisor.
	CtlTimeout = 2 * time.Second
	// MaxCtlLine bounds a control message.
	MaxCtlLine = 4096
	// maxUnixPath is the longest socket path bind and connect accept
	// (sun_path is 108 bytes with its terminating NUL).
	maxUnixPath = 107
)

// StepdConfig is a supervisor's input, stepd.json: the task and the
// agent's settings that govern it (exec.Config's fields of the same
// names).
type StepdConfig struct {
	Launch    Launch        `json:"launch"`
	Start     time.Time     `json:"start"`
	NodeName  string        `json:"node"`
	KillWait  time.Duration `json:"kill_wait"`
	KillGrace time.Duration `json:"kill_grace"`
	// Lease is the lease file the fencing watchdog reads; empty: none.
	Lease string `json:"lease,omitempty"`
	// TaskNamespace is the task namespace helper's argv prefix; empty:
	// none.
	TaskNamespace []string `json:"task_namespace,omitempty"`
	// TaskExec is the exec shim's argv prefix (stepd.TaskExecCommand),
	// through which ranks start when TaskNamespace is empty, to learn
	// their own pid (SLURM_TASK_PID); empty: ranks start directly.
	TaskExec []string `json:"task_exec,omitempty"`
	// Cgroup, HostCPUs and TaskPidsMax confine the task; the agent's
	// recovery reads Cgroup back to kill a lost task's cgroup.
	Cgroup      *cgroup.Root `json:"cgroup,omitempty"`
	HostCPUs    []int        `json:"host_cpus,omitempty"`
	TaskPidsMax int64        `json:"task_pids_max,omitempty"`
	// OCIRuntime is the OCI runtime (runc or crun) --container tasks
	// run with; empty: none on this node, and such tasks do not start.
	OCIRuntime string `json:"oci_runtime,omitempty"`
	// AgentSocket is the agent's Unix socket, through which the
	// supervisor of a PMIx step's other nodes reaches the coordinator on
	// its first node (package pmix); empty: none.
	AgentSocket string `json:"agent_socket,omitempty"`
}

// LaunchResult is what a supervisor tells the agent that started it,
// once the ranks are forked (on the inherited descriptor 3).
type LaunchResult struct {
	// Error, when set, is why the ranks did not start; the agent records
	// the task's exit with cause "start" then.
	Error string `json:"error,omitempty"`
	// StartFailed is set with an Error from starting the ranks (not from
	// the supervisor's own setup). The agent does not read it.
	StartFailed bool `json:"start_failed,omitempty"`
}

// Request is one request on a supervisor's socket, one JSON line.
type Request struct {
	Op        string `json:"op"` // "stop", "signal", "timelimit" or "wait"
	Cause     string `json:"cause,omitempty"`
	Signal    int    `json:"signal,omitempty"`
	ShellOnly bool   `json:"shell_only,omitempty"`
	// TimeLimit is "timelimit"'s new limit, measured from the task's
	// start as at launch; 0: none (scontrol update TimeLimit= of a
	// running job).
	TimeLimit time.Duration `json:"time_limit,omitempty"`
}

// Reply answers a Request; "wait" is answered once the task's exit
// is recorded.
type Reply struct {
	Error      string `json:"error,omitempty"`
	NotRunning bool   `json:"not_running,omitempty"`
}

// LaunchEnv marks a supervisor started with a launch descriptor.
const LaunchEnv = "SHOAL_STEPD_LAUNCH_FD"

// Dial connects to the supervisor of the task in dir.
func Dial(dir string) (net.Conn, error) { return dialIn(dir, SockFile) }

// dialIn connects to the socket name of the task directory dir.
func dialIn(dir, name string) (net.Conn, error) {
	path := filepath.Join(dir, name)
	d := net.Dialer{Timeout: CtlTimeout}
	if len(path) <= maxUnixPath {
		return d.Dial("unix", path)
	}
	// Too long for a socket address: reach it through a descriptor of the
	// directory.
	df, err := os.OpenFile(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer df.Close()
	return d.Dial("unix", fmt.Sprintf("/proc/self/fd/%d/%s", df.Fd(), name))
}

// Send sends req on c, a connection from Dial, and returns the
// supervisor's reply. For "wait" the read has no deadline.
func Send(c net.Conn, req Request) (Reply, error) {
	var reply Reply
	_ = c.SetWriteDeadline(time.Now().Add(CtlTimeout))
	if err := json.NewEncoder(c).Encode(req); err != nil {
		return reply, err
	}
	if req.Op != "wait" {
		_ = c.SetReadDeadline(time.Now().Add(CtlTimeout))
	}
	line, err := bufio.NewReaderSize(io.LimitReader(c, MaxCtlLine), MaxCtlLine).ReadBytes('\n')
	if err != nil {
		return reply, err
	}
	if err := json.Unmarshal(line, &reply); err != nil {
		return reply, fmt.Errorf("malformed reply: %w", err)
	}
	return reply, nil
}
