package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/localcluster"
)

// requireCgroups skips without root or a cgroup hierarchy with the
// controllers need, and fails instead in CI (CI=true): there the
// confinement must be proven, not assumed.
func requireCgroups(t *testing.T, need cgroup.Controller) {
	t.Helper()
	why := ""
	if os.Geteuid() != 0 {
		why = "not root"
	} else if r, err := cgroup.Detect("probe"); err != nil {
		why = err.Error()
	} else if r.Has&need != need {
		why = fmt.Sprintf("cgroup v%d has %s; the test needs %s", r.Version, r.Has, need)
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI=true and no usable cgroup hierarchy: %s", why)
	}
	t.Skip(why)
}

// TestCgroupEnforcement: real agents confine each job to what it was
// given (DESIGN, the trust boundary: "between a job and what it was not
// given (cgroups: CPUs, memory, GPU devices)"). A job past its --mem is
// OOM-killed and ends OUT_OF_MEMORY; a job's rank runs on the CPU its
// allocation names; a daemon it leaves behind (setsid) dies with it; and
// the usage its node counted reaches sacct.
func TestCgroupEnforcement(t *testing.T) {
	requireCgroups(t, cgroup.CPUSet|cgroup.Memory|cgroup.CPUAcct)
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1, ExtraArgs: []string{"--memory", "4G"}})
	a := c.Agents[0]

	oom := submit(t, a, "--mem", "32M", "--", "sh", "-c", "dd if=/dev/zero of=/dev/null bs=256M count=1; echo survived")
	if j := waitState(t, a, oom, "OUT_OF_MEMORY", ""); j.Tasks[0].MemMiB != 32 {
		t.Errorf("job %d: %d MiB on its node; want 32", oom, j.Tasks[0].MemMiB)
	}

	work := submit(t, a, "-c", "1", "--mem", "512M", "--", "sh", "-c",
		`grep Cpus_allowed_list /proc/self/status; setsid sleep 300 & echo daemon=$!
timeout 60 sh -c 'n=$(( $(getconf CLK_TCK) * 6 / 10 )); while :; do read -r s </proc/$$/stat; set -- ${s##*) }; [ $(( ${12} + ${13} )) -ge $n ] && break; done'
dd if=/dev/zero of=/dev/null bs=64M count=1 2>/dev/null; exit 0`)
	j := waitState(t, a, work, "COMPLETED", "")
	logs := mustShoal(t, a, "logs", fmt.Sprint(work))

	// The rank ran on the host CPU its position maps to, and only there.
	positions, err := cluster.ParseCPUList(j.Tasks[0].CPUs)
	if err != nil || len(positions) != 1 {
		t.Fatalf("job %d: CPUs %q (%v); want one", work, j.Tasks[0].CPUs, err)
	}
	host, err := cgroup.HostCPUs()
	if err != nil {
		t.Fatal(err)
	}
	ids, _, err := cgroup.MapCPUs(positions, cgroup.Canonical(host))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Cpus_allowed_list:\t" + cluster.CPUList(ids); !strings.Contains(logs, want) {
		t.Errorf("job %d's rank: %q; want %q", work, logs, want)
	}

	// The daemon left the rank's process group and session: the cgroup
	// still held it, and it was killed before the exit was reported.
	m := regexp.MustCompile(`daemon=(\d+)`).FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("job %d printed no daemon pid: %q", work, logs)
	}
	if pid, _ := strconv.Atoi(m[1]); processAlive(pid) {
		t.Errorf("daemon %d of job %d outlived it", pid, work)
	}

	// The usage: about 0.6 s of CPU (the loop runs until its own utime
	// and stime reach that, however loaded the box), at least the 64 MiB
	// dd held.
	u := j.Tasks[0].Usage
	if u == nil {
		t.Fatalf("job %d: no usage reported", work)
	}
	if cpu := u.TotalCPU(); cpu < 400*time.Millisecond || cpu > 5*time.Second {
		t.Errorf("job %d: TotalCPU %s; want about 0.6s", work, cpu)
	}
	if u.MaxRSS < 64<<20 || u.MaxRSS > 512<<20 {
		t.Errorf("job %d: MaxRSS %d; want 64 MiB to 512 MiB", work, u.MaxRSS)
	}
	shims := newSlurmShims(t, a)
	got := shims.must("sacct", "-X", "-n", "-P", "-j", fmt.Sprint(work),
		"--format=JobID,MaxRSS,TotalCPU,AllocCPUS,ReqMem,AllocTRES,State")
	re := regexp.MustCompile(`^` + fmt.Sprint(work) + `\|\d+(\.\d\d)?[KMG]\|00:0\d\.\d{3}\|1\|512M\|cpu=1,mem=512M,node=1\|COMPLETED$`)
	if !re.MatchString(got) {
		t.Errorf("sacct: %q; want it to match %s", got, re)
	}

	// A batch script's srun step: an OOM kill in the step ends the step
	// OUT_OF_MEMORY, and its usage and the batch step's reach sacct.
	dir := t.TempDir()
	out := mustShoal(t, a, "batch", "--parsable", "--chdir", dir, "--mem", "64M", "-o", "batch.out", "--wrap",
		`srun sh -c 'dd if=/dev/zero of=/dev/null bs=256M count=1'; echo step=$?; srun sh -c 'dd if=/dev/zero of=/dev/null bs=16M count=1'`)
	var batch uint64
	if _, err := fmt.Sscan(out, &batch); err != nil {
		t.Fatalf("batch printed %q", out)
	}
	waitState(t, a, batch, "COMPLETED", "")
	rows := shims.must("sacct", "-n", "-P", "-j", fmt.Sprint(batch), "--format=JobID,State,MaxRSS")
	want := regexp.MustCompile(`^` + fmt.Sprint(batch) + `\|COMPLETED\|\n` +
		fmt.Sprint(batch) + `\.batch\|COMPLETED\|\d+(\.\d\d)?[KM]\n` +
		fmt.Sprint(batch) + `\.0\|OUT_OF_MEMORY\|\d+(\.\d\d)?[KM]\n` +
		fmt.Sprint(batch) + `\.1\|COMPLETED\|\d+(\.\d\d)?[KM]$`)
	if !want.MatchString(rows) {
		t.Errorf("sacct of a batch job with an OOM step:\n%s\nwant it to match %s", rows, want)
	}

	// Two srun -n1 --exact steps of a -n2 job, running at once (each
	// waits, at most 120 s, for the other), are each confined to one of
	// the job's CPUs, the two together the job's.
	wait := `grep Cpus_allowed_list /proc/self/status > $0.cpus; i=0; while [ ! -e $1.cpus ] && [ $i -lt 600 ]; do sleep 0.2; i=$((i+1)); done`
	out = mustShoal(t, a, "batch", "--parsable", "--chdir", dir, "-n2", "-o", "steps.out", "--wrap",
		`srun -n1 --exact sh -c '`+wait+`' one two & srun -n1 --exact sh -c '`+wait+`' two one & wait`)
	var steps uint64
	if _, err := fmt.Sscan(out, &steps); err != nil {
		t.Fatalf("batch printed %q", out)
	}
	j = waitState(t, a, steps, "COMPLETED", "")
	positions, err = cluster.ParseCPUList(j.Tasks[0].CPUs)
	if err != nil || len(positions) != 2 {
		t.Fatalf("job %d: CPUs %q (%v); want two", steps, j.Tasks[0].CPUs, err)
	}
	ids, _, err = cgroup.MapCPUs(positions, cgroup.Canonical(host))
	if err != nil {
		t.Fatal(err)
	}
	var seen []int
	for _, name := range []string{"one", "two"} {
		data, _ := os.ReadFile(filepath.Join(dir, name+".cpus"))
		_, list, _ := strings.Cut(strings.TrimSpace(string(data)), "\t")
		cpus, err := cluster.ParseCPUList(list)
		if err != nil || len(cpus) != 1 {
			t.Errorf("step %s of job %d: %q; want one CPU", name, steps, data)
			continue
		}
		seen = append(seen, cpus...)
	}
	slices.Sort(seen)
	if got := cluster.CPUList(slices.Compact(seen)); got != cluster.CPUList(ids) {
		t.Errorf("job %d's two --exact steps ran on CPUs %s; want one each of the job's %s", steps, got, cluster.CPUList(ids))
	}
}

// The CPU layout an agent is given (--sockets, --cores-per-socket,
// --threads-per-core, as slurm.conf's) reaches the leader, which places
// CPUs by socket with it; --cpus defaults to their product.
func TestCPULayoutFlags(t *testing.T) {
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1, CPUs: 8,
		ExtraArgs: []string{"--sockets", "2", "--cores-per-socket", "2", "--threads-per-core", "2"}})
	eventually(t, 20*time.Second, "the node's layout registered", func() error {
		n := nodesByName(t, c.Agents[0])["n1"]
		if n.Sockets != 2 || n.CoresPerSocket != 2 || n.ThreadsPerCore != 2 || n.CPUs != 8 {
			return fmt.Errorf("n1: %d CPUs, %d:%d:%d", n.CPUs, n.Sockets, n.CoresPerSocket, n.ThreadsPerCore)
		}
		return nil
	})
}
