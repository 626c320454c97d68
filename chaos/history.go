package chaos

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// Outcome of one submit attempt as the client saw it.
type Outcome string

const (
	// Acked: the agent answered with a job id.
	Acked Outcome = "acked"
	// Refused: the agent answered with a definite error (4xx): no job.
	Refused Outcome = "refused"
	// Unknown: no answer, or a 5xx: the job may or may not exist.
	Unknown Outcome = "unknown"
)

// Attempt is one submit request as the client sent it.
type Attempt struct {
	RequestID string    `json:"request_id"`
	Node      string    `json:"node"` // the agent it went through
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	Outcome   Outcome   `json:"outcome"`
	Job       uint64    `json:"job,omitempty"` // when Acked
	Duplicate bool      `json:"duplicate,omitempty"`
	Err       string    `json:"err,omitempty"`
}

// Cancel is one cancel request as the client sent it.
type Cancel struct {
	Job   uint64    `json:"job"`
	Node  string    `json:"node"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Err   string    `json:"err,omitempty"`
}

// Record is one line a rank appended: it proves the rank of Job's
// Incarnation held GPUs on Node from Start to End (ns since the epoch,
// CLOCK_REALTIME, shared by every namespace of the host).
type Record struct {
	Node        string
	GPUs        []int
	Job         uint64
	Incarnation uint64
	Start, End  int64
	Rank        int
	// Done marks the rank's last record, written as it exited normally.
	Done bool
	// Where is "file:line", for reports.
	Where string
}

// Replica is what one agent reported once the cluster was quiet.
type Replica struct {
	Node   string     `json:"node"`
	Status api.Status `json:"status"`
	Jobs   []api.Job  `json:"jobs"`
	// Nodes are the replica's node records: their memory bounds what jobs
	// may hold at once (invariant 1 for memory).
	Nodes []api.Node `json:"nodes,omitempty"`
	// Err is why the replica could not be read; the check is then
	// inconclusive.
	Err string `json:"err,omitempty"`
}

// Recordfile is the file ranks on node append their records to.
func Recordfile(dir, node string) string { return filepath.Join(dir, node+".rec") }

// RankScript is the shell script each rank runs (argv: $1 the records
// directory, $2 how many 200 ms ticks, $3 "slow" to ignore SIGTERM the way
// a job saving a checkpoint does, so it dies only by SIGKILL). It appends a
// record at start, one every tick and a "done" one at a normal exit.
const RankScript = `d="$1"; n="$2"
if [ "$3" = slow ]; then trap '' TERM; fi
f="$d/$SLURMD_NODENAME.rec"
g="${CUDA_VISIBLE_DEVICES:--}"
s=$(date +%s%N)
i=0
while [ "$i" -lt "$n" ]; do
	echo "$SLURMD_NODENAME $g $SHOAL_JOB_ID $SHOAL_INCARNATION $s $(date +%s%N) $RANK tick" >>"$f"
	sleep 0.2
	i=$((i+1))
done
echo "$SLURMD_NODENAME $g $SHOAL_JOB_ID $SHOAL_INCARNATION $s $(date +%s%N) $RANK done" >>"$f"
`

// maxRecordLines bounds how many lines ReadRecords takes from one file.
const maxRecordLines = 10_000_000

// ReadRecords reads every *.rec file in dir. A malformed line is an error
// naming the file and line: a check over records it could not read would
// be inconclusive.
func ReadRecords(dir string) ([]Record, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.rec"))
	if err != nil {
		return nil, fmt.Errorf("list records in %s: %w", dir, err)
	}
	sort.Strings(files)
	var out []Record
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("read records: %w", err)
		}
		recs, err := parseRecords(f, filepath.Base(path))
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

func parseRecords(r io.Reader, name string) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		if line > maxRecordLines {
			return nil, fmt.Errorf("records %s: more than %d lines", name, maxRecordLines)
		}
		text := sc.Text()
		rec, err := ParseRecord(text)
		if err != nil {
			// Each record is one write(2) to an O_APPEND file, so even a
			// rank killed mid-line cannot leave a torn one.
			return nil, fmt.Errorf("records %s:%d %q: %w", name, line, text, err)
		}
		rec.Where = fmt.Sprintf("%s:%d", name, line)
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("records %s: %w", name, err)
	}
	return out, nil
}

// ParseRecord parses "node gpus job incarnation start_ns end_ns rank kind";
// gpus is a comma-separated list or "-" for none.
func ParseRecord(line string) (Record, error) {
	f := strings.Fields(line)
	if len(f) != 8 {
		return Record{}, fmt.Errorf("%d fields, want 8: node gpus job incarnation start_ns end_ns rank tick|done", len(f))
	}
	r := Record{Node: f[0]}
	if f[1] != "-" {
		for _, g := range strings.Split(f[1], ",") {
			v, err := strconv.Atoi(g)
			if err != nil || v < 0 {
				return Record{}, fmt.Errorf("gpus %q: want comma-separated GPU indices or -", f[1])
			}
			r.GPUs = append(r.GPUs, v)
		}
	}
	var err error
	if r.Job, err = strconv.ParseUint(f[2], 10, 64); err != nil {
		return Record{}, fmt.Errorf("job %q: %w", f[2], err)
	}
	if r.Incarnation, err = strconv.ParseUint(f[3], 10, 64); err != nil {
		return Record{}, fmt.Errorf("incarnation %q: %w", f[3], err)
	}
	if r.Start, err = strconv.ParseInt(f[4], 10, 64); err != nil {
		return Record{}, fmt.Errorf("start_ns %q: %w", f[4], err)
	}
	if r.End, err = strconv.ParseInt(f[5], 10, 64); err != nil {
		return Record{}, fmt.Errorf("end_ns %q: %w", f[5], err)
	}
	if r.End < r.Start {
		return Record{}, fmt.Errorf("end_ns %d before start_ns %d", r.End, r.Start)
	}
	if r.Rank, err = strconv.Atoi(f[6]); err != nil {
		return Record{}, fmt.Errorf("rank %q: %w", f[6], err)
	}
	switch f[7] {
	case "tick":
	case "done":
		r.Done = true
	default:
		return Record{}, fmt.Errorf("kind %q: want tick or done", f[7])
	}
	return r, nil
}
