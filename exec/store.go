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

// File names inside a task directory DataDir/jobs/<job>.<incarnation>/.
const (
	startFile = "start.json" // written and synced before the first fork
	exitFile  = "exit.json"  // written once every rank is dead
	ackFile   = "ack.json"   // written when the exit was reported
	procGlob  = "proc-*.json"
)

// startRecord says that a task was launched; with no exitRecord beside it,
// a restarted agent must find and kill its processes.
type startRecord struct {
	Job         cluster.JobID `json:"job"`
	Incarnation uint64        `json:"incarnation"`
	Node        string        `json:"node"`
	FirstRank   int           `json:"first_rank"`
	Ranks       int           `json:"ranks"`
	Start       time.Time     `json:"start"`
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
	Node        string        `json:"node"`
	ExitCode    int           `json:"exit_code"`
	Cause       string        `json:"cause"`
	Start       time.Time     `json:"start"`
	End         time.Time     `json:"end"`
}

// ackRecord marks an exit as reported.
type ackRecord struct {
	Time time.Time `json:"time"`
}

func (r exitRecord) exit() Exit {
	return Exit{Job: r.Job, Incarnation: r.Incarnation, ExitCode: r.ExitCode,
		Cause: r.Cause, Start: r.Start, End: r.End}
}

// dirName is the task directory's name: "<job>.<incarnation>".
func (k TaskKey) dirName() string {
	return k.Job.String() + "." + strconv.FormatUint(k.Incarnation, 10)
}

// parseDirName is the inverse of dirName.
func parseDirName(name string) (TaskKey, bool) {
	j, inc, ok := strings.Cut(name, ".")
	if !ok {
		return TaskKey{}, false
	}
	job, err1 := strconv.ParseUint(j, 10, 64)
	n, err2 := strconv.ParseUint(inc, 10, 64)
	if err1 != nil || err2 != nil || job == 0 || n == 0 {
		return TaskKey{}, false
	}
	return TaskKey{Job: cluster.JobID(job), Incarnation: n}, true
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
