package cgroup

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Parsers of the kernel's text. Each takes the file's bytes and is pure,
// so it is tested on recorded text and fuzzed (testdata/fuzz).

// maxCPUID bounds the CPU ids this package looks at: Linux's NR_CPUS
// tops out at 8192.
const maxCPUID = 1 << 13

// mount is one line of /proc/self/mountinfo, the fields this package uses.
type mount struct {
	root    string   // the part of the filesystem mounted (field 4)
	point   string   // the mount point (field 5)
	fsType  string   // after the " - " separator
	options []string // super options, comma-separated (cgroup v1 controllers)
}

// parseMountinfo parses /proc/self/mountinfo (proc(5)): ID PARENT MAJ:MIN
// ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS. Paths
// have spaces and the like escaped as \040 octal.
func parseMountinfo(b []byte) ([]mount, error) {
	var out []mount
	for n, line := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			return nil, fmt.Errorf("mountinfo line %d: no \" - \" separator", n+1)
		}
		f := strings.Fields(pre)
		g := strings.Fields(post)
		if len(f) < 6 || len(g) < 3 {
			return nil, fmt.Errorf("mountinfo line %d: %d and %d fields, want at least 6 and 3", n+1, len(f), len(g))
		}
		out = append(out, mount{root: unescapeOctal(f[3]), point: unescapeOctal(f[4]),
			fsType: g[0], options: strings.Split(g[2], ",")})
	}
	return out, nil
}

// unescapeOctal undoes the kernel's \ooo escapes of mount paths.
func unescapeOctal(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// procCgroup is one line of /proc/<pid>/cgroup: ID:CONTROLLERS:PATH, the
// v2 line being 0::PATH.
type procCgroup struct {
	id          int
	controllers []string // empty for v2; "name=systemd" style kept as is
	path        string
}

func parseProcCgroup(b []byte) ([]procCgroup, error) {
	var out []procCgroup
	for n, line := range strings.Split(string(b), "\n") {
		if line == "" {
			continue
		}
		id, rest, ok1 := strings.Cut(line, ":")
		ctrl, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("cgroup line %d: want ID:CONTROLLERS:PATH", n+1)
		}
		i, err := strconv.Atoi(id)
		if err != nil || i < 0 {
			return nil, fmt.Errorf("cgroup line %d: id %.20q: want a number", n+1, id)
		}
		if !strings.HasPrefix(path, "/") {
			return nil, fmt.Errorf("cgroup line %d: path %.40q: want an absolute path", n+1, path)
		}
		c := procCgroup{id: i, path: path}
		if ctrl != "" {
			c.controllers = strings.Split(ctrl, ",")
		}
		out = append(out, c)
	}
	return out, nil
}

// parseFlatKeyed parses the "key value" lines of memory.stat, cpu.stat,
// cpuacct.stat, memory.events and memory.oom_control. Values are
// unsigned integers; "max" reads as the largest.
func parseFlatKeyed(b []byte) (map[string]uint64, error) {
	m := map[string]uint64{}
	for n, line := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: %d fields, want \"key value\"", n+1, len(f))
		}
		v, err := parseValue(f[1])
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", n+1, f[0], err)
		}
		m[string(f[0])] = v
	}
	return m, nil
}

// parseValue parses one number of a cgroup file, "max" as the largest.
func parseValue(b []byte) (uint64, error) {
	s := string(bytes.TrimSpace(b))
	if s == "max" {
		return ^uint64(0), nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("value %.24q: want a number or max", s)
	}
	return v, nil
}

// parsePIDs parses cgroup.procs: one pid a line.
func parsePIDs(b []byte) ([]int, error) {
	var pids []int
	for f := range bytes.FieldsSeq(b) {
		pid, err := strconv.Atoi(string(f))
		if err != nil || pid <= 0 {
			return nil, fmt.Errorf("pid %.24q: want a positive number", f)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// parseCPUTimes reads the user and system CPU times of a flat-keyed file
// (v2's cpu.stat, v1's cpuacct.stat): the counters userKey and systemKey,
// each in units of unit.
func parseCPUTimes(b []byte, userKey, systemKey string, unit time.Duration) (user, system time.Duration, err error) {
	m, err := parseFlatKeyed(b)
	if err != nil {
		return 0, 0, err
	}
	u, ok1 := m[userKey]
	s, ok2 := m[systemKey]
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("want %s and %s lines", userKey, systemKey)
	}
	if most := uint64(1<<63-1) / uint64(unit); u > most || s > most {
		return 0, 0, fmt.Errorf("%s or %s out of range", userKey, systemKey)
	}
	return time.Duration(u) * unit, time.Duration(s) * unit, nil
}
