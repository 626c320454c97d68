package exec

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
	startFile  = "start.json" // written and synced before the first fork
	exitFile   = "exit.json"  // written once every rank is dead
	ackFile    = "ack.json"   // written when the exit was reported
	procGlob   = "proc-*.json"
	stopFile   = "stop.json" // a Stop's cause, for the supervisor
	scriptFile = "script"    // a batch job's script
)

// startRecord says that a task was launched; with no exitRecord beside it,
// a restarted agent must find and kill its processes.
type startRecord struct {
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

// procRecord names one started rank's process, which leads its own
// process group. StartTicks is field 22 of /proc/<pid>/stat: with the pid
// it identifies the process across pid reuse.
type procRecord struct {
	Rank       int    `json:"rank"`
	PID        int    `json:"pid"`
	StartTicks uint64 `json:"start_ticks"`
}

// exitRecord is the durable form of an Exit.
type exitRecord struct {
	Job         cluster.JobID `json:"job"`
	Incarnation uint64        `json:"incarnation"`
	Step        *int          `json:"step,omitempty"` // as in startRecord
	Node        string        `json:"node"`
	ExitCode    int           `json:"exit_code"`
	Cause       string        `json:"cause"`
	Start       time.Time     `json:"start"`
	End         time.Time     `json:"end"`
	// Usage is absent without cgroups and in records older than them.
	Usage *cluster.Usage `json:"usage,omitempty"`
}

// stopRecord asks the task's supervisor to stop the task: the agent
// writes it before it sends the request, so a request lost on the way
// (the supervisor slow, the agent dying) still arrives.
type stopRecord struct {
	Cause string `json:"cause"`
}

// ackRecord marks an exit as reported.
type ackRecord struct {
	Time time.Time `json:"time"`
}

// exit is the Exit of the record; key is the task's key, which the
// directory name gives (records older than steps carry no step).
func (r exitRecord) exit(key TaskKey) Exit {
	return Exit{Job: key.Job, Incarnation: key.Incarnation, Step: key.Step,
		ExitCode: r.ExitCode, Cause: r.Cause, Start: r.Start, End: r.End, Usage: r.Usage}
}

// stepField is the step of a record: nil for the job's own task.
func stepField(step int) *int {
	if step == NoStep {
		return nil
	}
	return &step
}

// dirName is the task directory's name: "<job>.<incarnation>" for the
// job's own task, "<job>.<incarnation>.<step>" for a step.
func (k TaskKey) dirName() string {
	s := k.Job.String() + "." + strconv.FormatUint(k.Incarnation, 10)
	if k.Step != NoStep {
		s += "." + strconv.Itoa(k.Step)
	}
	return s
}

// parseDirName is the inverse of dirName.
func parseDirName(name string) (TaskKey, bool) {
	parts := strings.Split(name, ".")
	if len(parts) != 2 && len(parts) != 3 {
		return TaskKey{}, false
	}
	step := ""
	if len(parts) == 3 {
		step = parts[2]
	}
	key, ok := parseKey(parts[0], parts[1], step)
	return key, ok && key.dirName() == name // canonical names only
}

// parseKey parses a task key from its decimal parts; step "" is NoStep.
func parseKey(job, incarnation, step string) (TaskKey, bool) {
	j, err1 := strconv.ParseUint(job, 10, 64)
	n, err2 := strconv.ParseUint(incarnation, 10, 64)
	if err1 != nil || err2 != nil || j == 0 || n == 0 {
		return TaskKey{}, false
	}
	key := TaskKey{Job: cluster.JobID(j), Incarnation: n, Step: NoStep}
	if step != "" {
		s, err := strconv.ParseUint(step, 10, 31)
		if err != nil {
			return TaskKey{}, false
		}
		key.Step = int(s)
	}
	return key, true
}

// writeJSON writes v to dir/name atomically and durably: a temporary file
// is written and synced, renamed over name, and the directory synced, so a
// crash leaves either the old file or the complete new one.
func writeJSON(dir, name string, v any) error {
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
	if werr == nil {
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
	return syncDir(dir)
}

// readJSON decodes dir/name into v.
func readJSON(dir, name string, v any) error {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}

func syncDir(dir string) error {
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

func exists(path string) (bool, error) {
	_, err := os.Lstat(path)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// readProcs returns the proc records in dir, skipping unreadable ones
// (recovery's /proc scan by environment still finds those processes).
func readProcs(dir string) ([]procRecord, []error) {
	names, err := filepath.Glob(filepath.Join(dir, procGlob))
	if err != nil {
		return nil, []error{err}
	}
	var recs []procRecord
	var errs []error
	for _, n := range names {
		var r procRecord
		if err := readJSON(dir, filepath.Base(n), &r); err != nil {
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

func procFile(rank int) string { return fmt.Sprintf("proc-%d.json", rank) }

func logFile(rank int, ext string) string { return fmt.Sprintf("rank-%d.%s", rank, ext) }
