package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/cluster"
)

// File names inside a task directory DataDir/jobs/<job>.<incarnation>/
// (or <job>.<incarnation>.<step>/ for a step).
const (
	StartFile  = "start.json" // written and synced before the supervisor starts
	ExitFile   = "exit.json"  // written once every rank is dead
	AckFile    = "ack.json"   // written when the exit was reported
	procGlob   = "proc-*.json"
	StopFile   = "stop.json" // the agent's stop cause, for the supervisor
	ScriptFile = "script"    // a batch job's script
	HostsFile  = "hosts"     // the ranks' /etc/hosts, with task namespaces only
)

// StartRecord says that a task was launched; with no ExitRecord beside it,
// a restarted agent must reattach to its supervisor or, with none left,
// find and kill its processes.
type StartRecord struct {
	Job         cluster.JobID `json:"job"`
	Incarnation uint64        `json:"incarnation"`
	// Step is absent in records older than steps: the job's own task.
	Step      *int      `json:"step,omitempty"`
	Node      string    `json:"node"`
	FirstRank int       `json:"first_rank"`
	Ranks     int       `json:"ranks"`
	Start     time.Time `json:"start"`
	// Stdout and Stderr are a batch script's output files, when they are
	// not the rank files of the task directory.
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
}

// ProcRecord names one started rank's process, which leads its own
// process group. StartTicks is field 22 of /proc/<pid>/stat: with the pid
// it identifies the process across pid reuse.
type ProcRecord struct {
	Rank       int    `json:"rank"`
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// ExitRecord is the durable form of an Exit.
type ExitRecord struct {
	Job         cluster.JobID `json:"job"`
	Incarnation uint64        `json:"incarnation"`
	Step        *int          `json:"step,omitempty"` // as in StartRecord
	Node        string        `json:"node"`
	ExitCode    int           `json:"exit_code"`
	Cause       string        `json:"cause"`
	Start       time.Time     `json:"start"`
	End         time.Time     `json:"end"`
	// Usage is absent without cgroups and in records older than them.
	Usage *cluster.Usage `json:"usage,omitempty"`
}

// StopRecord asks the task's supervisor to stop the task: the agent
// writes it before it sends the request, so a request lost on the way
// (the supervisor slow, the agent dying) still arrives.
type StopRecord struct {
	Cause string `json:"cause"`
}

// AckRecord marks an exit as reported.
type AckRecord struct {
	Time time.Time `json:"time"`
}

// StepField is the step of a record: nil for the job's own task.
func StepField(step int) *int {
	if step == NoStep {
		return nil
	}
	return &step
}

// dirName is the task directory's name: "<job>.<incarnation>" for the
// job's own task, "<job>.<incarnation>.<step>" for a step, each followed
// by "~<join>" for a task of a node's later entry (Key.Join).
func (k Key) DirName() string {
	s := k.Job.String() + "." + strconv.FormatUint(k.Incarnation, 10)
	if k.Step != NoStep {
		s += "." + strconv.Itoa(k.Step)
	}
	if k.Join > 0 {
		s += "~" + strconv.Itoa(k.Join)
	}
	return s
}

// ParseDirName is the inverse of dirName.
func ParseDirName(name string) (Key, bool) {
	base, join, rejoined := strings.Cut(name, "~")
	parts := strings.Split(base, ".")
	if len(parts) != 2 && len(parts) != 3 {
		return Key{}, false
	}
	step := ""
	if len(parts) == 3 {
		step = parts[2]
	}
	key, ok := parseKey(parts[0], parts[1], step)
	if rejoined {
		n, err := strconv.ParseUint(join, 10, 31)
		if err != nil || n == 0 {
			return Key{}, false
		}
		key.Join = int(n)
	}
	return key, ok && key.DirName() == name // canonical names only
}

// parseKey parses a task key from its decimal parts; step "" is NoStep.
func parseKey(job, incarnation, step string) (Key, bool) {
	j, err1 := strconv.ParseUint(job, 10, 64)
	n, err2 := strconv.ParseUint(incarnation, 10, 64)
	if err1 != nil || err2 != nil || j == 0 || n == 0 {
		return Key{}, false
	}
	key := Key{Job: cluster.JobID(j), Incarnation: n, Step: NoStep}
	if step != "" {
		s, err := strconv.ParseUint(step, 10, 31)
		if err != nil {
			return Key{}, false
		}
		key.Step = int(s)
	}
	return key, true
}

// WriteJSON writes v to dir/name atomically and durably: a temporary file
// is written and synced, renamed over name, and the directory synced, so a
// crash leaves either the old file or the complete new one.
func WriteJSON(dir, name string, v any) error { return writeJSON(dir, name, v, true) }

// WriteJSONVolatile writes v to dir/name atomically but not durably: a
// reader on the running system sees the old file or the complete new one,
// while a power loss may leave either, or neither, or an empty file. It is
// for what only processes and cgroups of this boot read (a supervisor's
// input), which a power loss ends too; a later durable write in the same
// directory (WriteJSON) makes its name durable as well.
func WriteJSONVolatile(dir, name string, v any) error { return writeJSON(dir, name, v, false) }

func writeJSON(dir, name string, v any, durable bool) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", name, err)
	}
	f, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(append(b, '\n'))
	if werr == nil && durable {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp, filepath.Join(dir, name))
	}
	if werr != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), werr)
	}
	if !durable {
		return nil
	}
	return SyncDir(dir)
}

// ReadJSON decodes dir/name into v.
func ReadJSON(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync dir %s: %w", dir, err)
	}
	return nil
}

func Exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// ReadProcs returns the proc records in dir, skipping unreadable ones
// (recovery's /proc scan by environment still finds those processes).
func ReadProcs(dir string) ([]ProcRecord, []error) {
	names, err := filepath.Glob(filepath.Join(dir, procGlob))
	if err != nil {
		return nil, []error{err}
	}
	var recs []ProcRecord
	var errs []error
	for _, n := range names {
		var r ProcRecord
		if err := ReadJSON(dir, filepath.Base(n), &r); err != nil {
			errs = append(errs, err)
			continue
		}
		if r.PID <= 0 {
			errs = append(errs, fmt.Errorf("%s: bad pid %d", n, r.PID))
			continue
		}
		recs = append(recs, r)
	}
	return recs, errs
}

func ProcFile(rank int) string { return fmt.Sprintf("proc-%d.json", rank) }

// RankFile is the name of rank's output file in the task directory, ext
// "out" for stdout and "err" for stderr.
func RankFile(rank int, ext string) string { return fmt.Sprintf("rank-%d.%s", rank, ext) }

// ParseRankFile parses the names RankFile gives: "rank-<N>.out" and
// "rank-<N>.err".
func ParseRankFile(name string) (rank int, stream string, ok bool) {
	rest, found := strings.CutPrefix(name, "rank-")
	if !found {
		return 0, "", false
	}
	num, ext, found := strings.Cut(rest, ".")
	if !found {
		return 0, "", false
	}
	switch ext {
	case "out":
		stream = "stdout"
	case "err":
		stream = "stderr"
	default:
		return 0, "", false
	}
	rank, err := strconv.Atoi(num)
	if err != nil || rank < 0 {
		return 0, "", false
	}
	return rank, stream, true
}
