package cgroup

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// Recorded from a hybrid host (this test machine): v1 controllers, an
// empty cgroup2 at /sys/fs/cgroup/unified, cpu and cpuacct mounted apart.
const mountinfoHybrid = `23 1 0:21 / / rw,relatime - overlay overlay rw
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

const procCgroupHybrid = `9:name=systemd:/
8:pids:/
7:blkio:/
6:freezer:/
5:devices:/
4:memory:/process_api/8052
3:cpuset:/
2:cpuacct:/
1:cpu:/
0::/
`

// A systemd v1 host: cpu and cpuacct co-mounted, the agent in a unit.
const mountinfoCoMounted = `25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid - cgroup cgroup rw,cpu,cpuacct
26 24 0:23 / /sys/fs/cgroup/memory rw,nosuid - cgroup cgroup rw,memory
27 24 0:24 / /sys/fs/cgroup/my\040dir rw,nosuid - cgroup cgroup rw,pids
`

const procCgroupCoMounted = `3:pids:/system.slice/shoal.service
2:memory:/system.slice/shoal.service
1:cpu,cpuacct:/system.slice/shoal.service
`

// A v2 host, and a container whose mount shows its own cgroup as root.
const mountinfoV2 = `30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate
`
const mountinfoContainer = `40 30 0:33 /kubepods/pod1 /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory
`

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo, cgroup string
		want                    Root
		wantErr                 bool
	}{
		{name: "hybrid uses v1", mountinfo: mountinfoHybrid, cgroup: procCgroupHybrid, want: Root{Version: 1,
			Has: All, Dirs: map[string]string{
				"cpuset": "/sys/fs/cgroup/cpuset/shoal_n1", "memory": "/sys/fs/cgroup/memory/process_api/8052/shoal_n1",
				"pids": "/sys/fs/cgroup/pids/shoal_n1", "devices": "/sys/fs/cgroup/devices/shoal_n1",
				"freezer": "/sys/fs/cgroup/freezer/shoal_n1", "cpuacct": "/sys/fs/cgroup/cpuacct/shoal_n1"}}},
		{name: "co-mounted and escaped", mountinfo: mountinfoCoMounted, cgroup: procCgroupCoMounted, want: Root{Version: 1,
			Has: Memory | Pids | CPUAcct, Dirs: map[string]string{
				"cpuacct": "/sys/fs/cgroup/cpu,cpuacct/system.slice/shoal.service/shoal_n1",
				"memory":  "/sys/fs/cgroup/memory/system.slice/shoal.service/shoal_n1",
				"pids":    "/sys/fs/cgroup/my dir/system.slice/shoal.service/shoal_n1"}}},
		{name: "v2", mountinfo: mountinfoV2, cgroup: "0::/system.slice/shoal.service\n", want: Root{Version: 2,
			Dirs: map[string]string{"": "/sys/fs/cgroup/system.slice/shoal.service/shoal_n1"}}},
		{name: "container root", mountinfo: mountinfoContainer, cgroup: "4:memory:/kubepods/pod1/c2\n", want: Root{Version: 1,
			Has: Memory, Dirs: map[string]string{"memory": "/sys/fs/cgroup/memory/c2/shoal_n1"}}},
		{name: "nothing mounted", mountinfo: "23 1 0:21 / / rw - ext4 /dev/sda rw\n", cgroup: "0::/\n", wantErr: true},
		{name: "v2 without v2 line", mountinfo: mountinfoV2, cgroup: "1:memory:/\n", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mounts, err := parseMountinfo([]byte(tc.mountinfo))
			if err != nil {
				t.Fatal(err)
			}
			own, err := parseProcCgroup([]byte(tc.cgroup))
			if err != nil {
				t.Fatal(err)
			}
			got, err := plan(mounts, own, TreeName("n1"))
			if (err != nil) != tc.wantErr {
				t.Fatalf("plan = %+v, %v; want error %v", got, err, tc.wantErr)
			}
			if !tc.wantErr && !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan = %+v; want %+v", got, tc.want)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func([]byte) error
		in   string
	}{
		{"mountinfo without separator", func(b []byte) error { _, err := parseMountinfo(b); return err }, "1 2 3:4 / /x rw\n"},
		{"mountinfo short", func(b []byte) error { _, err := parseMountinfo(b); return err }, "1 2 / - cgroup\n"},
		{"cgroup without path", func(b []byte) error { _, err := parseProcCgroup(b); return err }, "4:memory\n"},
		{"cgroup relative path", func(b []byte) error { _, err := parseProcCgroup(b); return err }, "4:memory:x\n"},
		{"cgroup bad id", func(b []byte) error { _, err := parseProcCgroup(b); return err }, "x:memory:/\n"},
		{"flat keyed three fields", func(b []byte) error { _, err := parseFlatKeyed(b); return err }, "user 1 2\n"},
		{"flat keyed not a number", func(b []byte) error { _, err := parseFlatKeyed(b); return err }, "user -1\n"},
		{"pids", func(b []byte) error { _, err := parsePIDs(b); return err }, "12\n0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.fn([]byte(tc.in)); err == nil {
				t.Errorf("parse(%q) = nil error; want one", tc.in)
			}
		})
	}
}

func TestStatFiles(t *testing.T) {
	// Recorded files of the kernel, v1 and v2.
	oom := "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"
	m, err := parseFlatKeyed([]byte(oom))
	if err != nil || m["oom_kill"] != 2 || m["under_oom"] != 0 {
		t.Errorf("parseFlatKeyed(oom_control) = %v, %v; want oom_kill 2", m, err)
	}
	ev := "low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\noom_group_kill 0\n"
	if m, err := parseFlatKeyed([]byte(ev)); err != nil || m["oom_kill"] != 1 || m["max"] != 12 {
		t.Errorf("parseFlatKeyed(memory.events) = %v, %v; want oom_kill 1, max 12", m, err)
	}
	u, s, err := parseCPUAcctStat([]byte("user 51\nsystem 3\n"))
	if err != nil || u != 510*time.Millisecond || s != 30*time.Millisecond {
		t.Errorf("parseCPUAcctStat = %v, %v, %v; want 510ms, 30ms", u, s, err)
	}
	if _, _, err := parseCPUAcctStat([]byte("user 1\n")); err == nil {
		t.Error("parseCPUAcctStat without system: no error")
	}
	cpu := "usage_usec 523412\nuser_usec 500001\nsystem_usec 23411\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"
	u, s, err = parseCPUStat([]byte(cpu))
	if err != nil || u != 500001*time.Microsecond || s != 23411*time.Microsecond {
		t.Errorf("parseCPUStat = %v, %v, %v; want 500.001ms, 23.411ms", u, s, err)
	}
	if v, err := parseValue([]byte("max\n")); err != nil || v != ^uint64(0) {
		t.Errorf("parseValue(max) = %d, %v; want the largest", v, err)
	}
}

// TestScaleCPUTimes: v1's tick-sampled user and system split is scaled
// to the measured total as the kernel's cputime_adjust does, the total
// kept exactly.
func TestScaleCPUTimes(t *testing.T) {
	const ms = time.Millisecond
	for _, tc := range []struct {
		total, user, system time.Duration
		wantUser, wantSys   time.Duration
	}{
		{537 * ms, 48 * ms, 352 * ms, 537*ms - 472560*time.Microsecond, 472560 * time.Microsecond},
		{500 * ms, 300 * ms, 300 * ms, 250 * ms, 250 * ms},
		{500 * ms, 0, 0, 500 * ms, 0},
		{500 * ms, 10 * ms, 0, 500 * ms, 0},
		{500 * ms, 0, 10 * ms, 0, 500 * ms},
		{0, 10 * ms, 10 * ms, 0, 0},
		{1<<63 - 1, 1<<63 - 1, 1<<63 - 1, (1<<63 - 1) - (1<<63-1)/2, (1<<63 - 1) / 2},
	} {
		u, s := scaleCPUTimes(tc.total, tc.user, tc.system)
		if u != tc.wantUser || s != tc.wantSys || (tc.total > 0 && u+s != tc.total) {
			t.Errorf("scaleCPUTimes(%s, %s, %s) = %s, %s; want %s, %s", tc.total, tc.user, tc.system, u, s, tc.wantUser, tc.wantSys)
		}
	}
}

// twoSockets is a 2-socket, 2-core, 2-thread host numbered as Linux does
// on most servers: thread 0 of every core first.
var twoSockets = []HostCPU{
	{0, 0, 0}, {1, 0, 1}, {2, 1, 0}, {3, 1, 1},
	{4, 0, 0}, {5, 0, 1}, {6, 1, 0}, {7, 1, 1},
}

// adjacentThreads numbers a core's threads next to each other (some
// AMD and cloud hosts): positions must still go thread 0 of all cores
// first.
var adjacentThreads = []HostCPU{
	{0, 0, 0}, {1, 0, 0}, {2, 0, 1}, {3, 0, 1},
}

func TestCanonicalAndLayout(t *testing.T) {
	for _, tc := range []struct {
		name             string
		cpus             []HostCPU
		canon            []int
		sock, cores, thr int
	}{
		{"two sockets", twoSockets, []int{0, 1, 2, 3, 4, 5, 6, 7}, 2, 2, 2},
		{"adjacent threads", adjacentThreads, []int{0, 2, 1, 3}, 1, 2, 2},
		{"cpuset with part of a core", adjacentThreads[:3], []int{0, 2, 1}, 1, 3, 1},
		{"one cpu", []HostCPU{{3, 0, 7}}, []int{3}, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Canonical(tc.cpus); !slices.Equal(got, tc.canon) {
				t.Errorf("Canonical = %v; want %v", got, tc.canon)
			}
			s, c, th := Layout(tc.cpus)
			if s != tc.sock || c != tc.cores || th != tc.thr {
				t.Errorf("Layout = %d, %d, %d; want %d, %d, %d", s, c, th, tc.sock, tc.cores, tc.thr)
			}
		})
	}
}

func TestMapCPUs(t *testing.T) {
	canon := Canonical(adjacentThreads) // 0 2 1 3
	for _, tc := range []struct {
		name      string
		positions []int
		want      []int
		approx    bool
		wantErr   bool
	}{
		{name: "none", positions: nil, want: nil},
		{name: "first core's threads", positions: []int{0, 2}, want: []int{0, 1}},
		{name: "thread 0 of both cores", positions: []int{0, 1}, want: []int{0, 2}},
		{name: "simulated node bigger than host", positions: []int{4, 5, 9}, want: []int{0, 2}, approx: true},
		{name: "negative", positions: []int{-1}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, approx, err := MapCPUs(tc.positions, canon)
			if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) || approx != tc.approx {
				t.Errorf("MapCPUs(%v) = %v, %v, %v; want %v, %v, error %v", tc.positions, got, approx, err, tc.want, tc.approx, tc.wantErr)
			}
		})
	}
	if _, _, err := MapCPUs([]int{0}, nil); err == nil {
		t.Error("MapCPUs onto no host CPU: no error")
	}
}

func TestValidPath(t *testing.T) {
	for _, p := range []string{"/abs", "../x", "..", "a/../../b", "a//b"} {
		if validPath(p) == nil {
			t.Errorf("validPath(%q) = nil; want an error", p)
		}
	}
	for _, p := range []string{"", "job_1.0", "job_1.0/task"} {
		if err := validPath(p); err != nil {
			t.Errorf("validPath(%q) = %v; want nil", p, err)
		}
	}
}

func FuzzParseMountinfo(f *testing.F) {
	f.Add([]byte(mountinfoHybrid))
	f.Add([]byte(mountinfoCoMounted))
	f.Fuzz(func(t *testing.T, b []byte) {
		ms, err := parseMountinfo(b)
		if err != nil {
			return
		}
		own, err := parseProcCgroup([]byte(procCgroupHybrid))
		if err != nil {
			t.Fatal(err)
		}
		if r, err := plan(ms, own, "shoal_x"); err == nil && r.Version != 1 && r.Version != 2 {
			t.Fatalf("plan version %d", r.Version)
		}
	})
}

func FuzzParseProcCgroup(f *testing.F) {
	f.Add([]byte(procCgroupHybrid))
	f.Add([]byte(procCgroupCoMounted))
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := parseProcCgroup(b)
		if err != nil {
			return
		}
		for _, c := range cs {
			if c.path == "" || c.path[0] != '/' {
				t.Fatalf("path %q accepted", c.path)
			}
		}
	})
}

func FuzzParseFlatKeyed(f *testing.F) {
	f.Add([]byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"))
	f.Add([]byte("usage_usec 1\nuser_usec max\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = parseFlatKeyed(b)
		_, _, _ = parseCPUStat(b)
		_, _, _ = parseCPUAcctStat(b)
		_, _ = parsePIDs(b)
	})
}

// The device program's jumps all land on its "allow" exit, the only
// fall-through is "deny", and only GPU minors in range are allowed.
func TestGPUFilter(t *testing.T) {
	for _, tc := range []struct {
		allowed []int
		checks  []int32 // the minors compared
	}{
		{nil, nil},
		{[]int{0}, []int32{0}},
		{[]int{3, 1, 1, 300, -1}, []int32{1, 3}},
	} {
		prog := gpuFilter(tc.allowed)
		allowAt := len(prog) - 2
		if prog[allowAt].op != opMovK || prog[allowAt].imm != 1 || prog[allowAt-2].imm != 0 || prog[len(prog)-1].op != opExit {
			t.Fatalf("gpuFilter(%v): no deny then allow at the end: %+v", tc.allowed, prog)
		}
		var checks []int32
		for i, in := range prog {
			switch in.op {
			case opJneK, opJeqK, opJgtK:
				if target := i + 1 + int(in.off); target != allowAt {
					t.Errorf("gpuFilter(%v): jump at %d lands on %d; want %d", tc.allowed, i, target, allowAt)
				}
				if in.op == opJeqK {
					checks = append(checks, in.imm)
				}
			}
		}
		if !slices.Equal(checks, tc.checks) {
			t.Errorf("gpuFilter(%v) allows minors %v; want %v", tc.allowed, checks, tc.checks)
		}
		if len(encodeInsns(prog)) != 8*len(prog) {
			t.Errorf("encodeInsns: not 8 bytes an instruction")
		}
	}
}
