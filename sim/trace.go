package sim

import (
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
)

// Bounds on a trace, so a corrupt or hostile file cannot describe an
// absurd workload or overflow time arithmetic.
const (
	// MaxJobs is the most rows a trace may have.
	MaxJobs = 10_000_000
	// MaxSeconds bounds submit times, durations and limits (about 31
	// years), so every time fits a time.Duration.
	MaxSeconds = 1_000_000_000
	// MaxGPUs bounds num_gpus of one job.
	MaxGPUs = 1 << 20
	// maxIDBytes bounds a job_id.
	maxIDBytes = 256
)

// Job is one row of a trace. Optional fields are 0 (or empty) when the
// trace leaves them out.
type Job struct {
	ID       string
	Submit   int64 // seconds from the start of the trace
	Duration int64 // seconds the job ran
	GPUs     int   // total GPUs, >= 1
	// GPUsPerNode and Nodes are both set or both 0: when the trace gives
	// one of them, the loader derives the other (it must divide num_gpus
	// exactly).
	GPUsPerNode int
	Nodes       int
	User        string
	Status      string
	TimeLimit   int64 // seconds requested; 0 when not given
}

// columns of the trace format; the first four are required.
var columns = []string{"job_id", "submit_time", "duration_s", "num_gpus",
	"gpus_per_node", "num_nodes", "user", "status", "time_limit_s"}

const requiredColumns = 4

// Load reads a trace file, gzipped when its name ends in .gz or its
// content starts with the gzip magic bytes.
func Load(path string) ([]Job, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	magic, _ := br.Peek(2)
	if strings.HasSuffix(path, ".gz") || bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	jobs, err := Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return jobs, nil
}

// Parse reads a trace in the CSV format of ../shared/traces/README.md:
// one header line naming the columns (in any order; unknown ones are
// ignored), then one row per job. Rows are returned sorted by submit
// time, ties in file order. An error names the line, the column and the
// accepted values.
func Parse(r io.Reader) ([]Job, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("empty trace: want a header line")
	}
	if err != nil {
		return nil, fmt.Errorf("header: %w", err)
	}
	col := make([]int, len(columns)) // column -> field index, -1 when absent
	for i := range col {
		col[i] = -1
	}
	for fi, name := range header {
		name = strings.TrimSpace(strings.TrimPrefix(name, "\ufeff"))
		ci := slices.Index(columns, name)
		if ci < 0 {
			continue
		}
		if col[ci] >= 0 {
			return nil, fmt.Errorf("header: column %q twice", name)
		}
		col[ci] = fi
	}
	for ci := range requiredColumns {
		if col[ci] < 0 {
			return nil, fmt.Errorf("header: column %q missing; want at least %s", columns[ci], strings.Join(columns[:requiredColumns], ","))
		}
	}
	var jobs []Job
	seen := make(map[string]int)
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		line, _ := cr.FieldPos(0)
		if len(jobs) == MaxJobs {
			return nil, fmt.Errorf("line %d: more than %d jobs", line, MaxJobs)
		}
		j, err := parseRow(rec, col)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if first, dup := seen[j.ID]; dup {
			return nil, fmt.Errorf("line %d: job_id %q: already on line %d", line, j.ID, first)
		}
		seen[j.ID] = line
		jobs = append(jobs, j)
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return cmp.Compare(a.Submit, b.Submit) })
	return jobs, nil
}

// parseRow reads one record; col maps columns to field indices.
func parseRow(rec []string, col []int) (Job, error) {
	field := func(ci int) string {
		if col[ci] < 0 {
			return ""
		}
		return strings.TrimSpace(rec[col[ci]])
	}
	var j Job
	j.ID = field(0)
	switch {
	case j.ID == "":
		return j, errors.New("job_id: empty")
	case len(j.ID) > maxIDBytes:
		return j, fmt.Errorf("job_id: %d bytes, want at most %d", len(j.ID), maxIDBytes)
	}
	var err error
	if j.Submit, err = integer(field(1), "submit_time", 0, MaxSeconds, false); err != nil {
		return j, err
	}
	if j.Duration, err = integer(field(2), "duration_s", 0, MaxSeconds, false); err != nil {
		return j, err
	}
	gpus, err := integer(field(3), "num_gpus", 1, MaxGPUs, false)
	if err != nil {
		return j, err
	}
	gpn, err := integer(field(4), "gpus_per_node", 1, cluster.MaxGPUsPerNode, true)
	if err != nil {
		return j, err
	}
	nodes, err := integer(field(5), "num_nodes", 1, cluster.MaxNodesPerJob, true)
	if err != nil {
		return j, err
	}
	if j.TimeLimit, err = integer(field(8), "time_limit_s", 0, MaxSeconds, true); err != nil {
		return j, err
	}
	switch {
	case gpn > 0 && nodes > 0 && gpn*nodes != gpus:
		return j, fmt.Errorf("gpus_per_node %d x num_nodes %d: want num_gpus %d", gpn, nodes, gpus)
	case gpn > 0 && nodes == 0:
		if gpus%gpn != 0 {
			return j, fmt.Errorf("gpus_per_node %d: does not divide num_gpus %d", gpn, gpus)
		}
		nodes = gpus / gpn
	case nodes > 0 && gpn == 0:
		if gpus%nodes != 0 {
			return j, fmt.Errorf("num_nodes %d: does not divide num_gpus %d", nodes, gpus)
		}
		gpn = gpus / nodes
	}
	j.GPUs, j.GPUsPerNode, j.Nodes = int(gpus), int(gpn), int(nodes)
	j.User, j.Status = field(6), field(7)
	return j, nil
}

// integer parses a base-10 integer field in [lo, hi]; an empty optional
// field is 0.
func integer(s, name string, lo, hi int64, optional bool) (int64, error) {
	if s == "" {
		if optional {
			return 0, nil
		}
		return 0, fmt.Errorf("%s: empty, want an integer from %d to %d", name, lo, hi)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s %q: want an integer from %d to %d", name, s, lo, hi)
	}
	return n, nil
}
