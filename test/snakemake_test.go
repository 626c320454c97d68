package test

import (
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// snakefile is a small workflow in the shape real ones have: a fan-out
// over samples (make, then count each), a fan-in (summary), a rule with
// two threads (sbatch --cpus-per-task=2) and one that asks for a GPU the
// way Snakemake 7's Slurm executor lets a rule ask for one (slurm_extra).
// Each output says which Slurm job made it. broken and slow are built
// only when asked for: broken fails, slow runs until cancelled.
const snakefile = `SAMPLES = ["a", "b", "c"]

rule all:
    input: "summary.txt"

rule make:
    output: "raw/{s}.txt"
    shell: "echo sample {wildcards.s} > {output}"

rule count:
    input: "raw/{s}.txt"
    output: "counts/{s}.txt"
    threads: 2
    resources: slurm_extra="--gres=gpu:1"
    shell: "tr a-z A-Z < {input} > {output}; echo job $SLURM_JOB_ID cpus $SLURM_CPUS_PER_TASK gpus $CUDA_VISIBLE_DEVICES >> {output}"

rule summary:
    input: expand("counts/{s}.txt", s=SAMPLES)
    output: "summary.txt"
    shell: "cat {input} > {output}"

rule broken:
    output: "broken.txt"
    shell: "echo trying; exit 3"

rule slow:
    output: "slow.txt"
    shell: "sleep 600; touch {output}"
`

// TestSnakemakeSlurmExecutor: a real Snakemake workflow (Debian's
// snakemake 7.21) runs unchanged through its built-in Slurm executor
// (snakemake --slurm) on Shoal's Slurm commands. The executor checks
// its account with sacctmgr -s, submits every rule with sbatch (-J, -o,
// -A, -p, -t, --mem, --cpus-per-task, --gres, -D, --wrap) and parses
// "Submitted batch job N", polls sacct -P -n -o JobIdRaw,State -j N, and
// inside each job runs the rule as an srun step (srun -n1
// --cpu-bind=q). The test checks every output, that every rule ran as a
// Shoal job that sacct shows COMPLETED under the executor's job name,
// account and partition (the GPU rule's with a GPU), and that a failing
// rule is seen FAILED through sacct and fails snakemake, and that
// interrupting snakemake cancels its running job (scancel).
func TestSnakemakeSlurmExecutor(t *testing.T) {
	t.Parallel() // mostly waits, touches nothing global (harness_test.go)
	snakemake := "/usr/bin/snakemake"
	requireFile(t, snakemake, "snakemake")
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	a, sh := startWithShims(t, localcluster.Options{Nodes: 2, GPUsPerNode: 2})

	// The account the executor is told to use must be one of the
	// user's associations (sacctmgr -n -s list user $USER), and the
	// partition one sinfo knows.
	setPolicy(t, a, fmt.Sprintf(`{"accounts": {"bio": {"shares": 10, "users": {%q: 1}}},
		"partitions": {"work": {"default": true, "max_time": "1:00:00"}}}`, me.Username))

	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "Snakefile"), []byte(snakefile), 0o644); err != nil {
		t.Fatal(err)
	}
	// As a user runs it, with the Slurm commands on PATH; the jobs get
	// the same PATH (sbatch --export=ALL), so the rule's snakemake finds
	// srun too. The executor polls every 30 s by default; one check a
	// second keeps the test short and the polls many.
	env := append([]string{"PATH=" + sh.dir + ":" + os.Getenv("PATH"), "USER=" + me.Username}, sh.env...)
	command := func(ctx context.Context, resources []string, targets ...string) *osexec.Cmd {
		// The targets first: --default-resources takes every word after it.
		args := append(append(targets, "--slurm", "--jobs", "4", "--max-status-checks-per-second", "1",
			"--default-resources", "runtime=10", "mem_mb=1000"), resources...)
		cmd := osexec.CommandContext(ctx, snakemake, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), env...)
		return cmd
	}
	runSnakemake := func(resources ...string) func(targets ...string) cliResult {
		return func(targets ...string) cliResult {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			return runCmd(t, command(ctx, resources, targets...))
		}
	}

	r := runSnakemake("slurm_account=bio", "slurm_partition=work")()
	if r.code != 0 {
		t.Fatalf("snakemake --slurm: exit %d\nstdout: %s\nstderr: %s\n%s", r.code, r.stdout, r.stderr, snakeJobLogs(t, sh, work))
	}
	read := func(name string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(work, name))
		if err != nil {
			t.Fatalf("workflow output: %v\nsnakemake said:\n%s", err, r.stderr)
		}
		return string(data)
	}
	countLine := regexp.MustCompile(`^job (\d+) cpus 2 gpus (\d)$`)
	var summary strings.Builder
	var countJobs []string
	for _, s := range []string{"a", "b", "c"} {
		if got, want := read("raw/"+s+".txt"), "sample "+s+"\n"; got != want {
			t.Errorf("raw/%s.txt = %q; want %q", s, got, want)
		}
		got := read("counts/" + s + ".txt")
		summary.WriteString(got)
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		if len(lines) != 2 || lines[0] != "SAMPLE "+strings.ToUpper(s) || !countLine.MatchString(lines[1]) {
			t.Errorf("counts/%s.txt = %q; want SAMPLE %s and its job, 2 CPUs and one GPU", s, got, strings.ToUpper(s))
			continue
		}
		countJobs = append(countJobs, countLine.FindStringSubmatch(lines[1])[1])
	}
	if got := read("summary.txt"); got != summary.String() {
		t.Errorf("summary.txt = %q; want the counts joined, %q", got, summary.String())
	}

	// Every rule but the local target ran as a Shoal job that ended
	// COMPLETED, named as the executor names it, in the account and
	// partition it was given; the count jobs are those that wrote the
	// counts, each with a GPU.
	jobs := map[string][]string{} // rule -> job ids
	for _, line := range strings.Split(sh.must("sacct", "-X", "-P", "-n", "-o", "JobIDRaw,JobName,State,Account,Partition,AllocTRES"), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 6 {
			t.Fatalf("sacct line %q: want 6 fields", line)
		}
		rule, _, ok := strings.Cut(strings.TrimPrefix(f[1], "snakejob_"), "_")
		if !ok || !strings.HasPrefix(f[1], "snakejob_") {
			t.Errorf("sacct: job %s named %q; want snakejob_RULE_N", f[0], f[1])
			continue
		}
		jobs[rule] = append(jobs[rule], f[0])
		if f[2] != "COMPLETED" || f[3] != "bio" || f[4] != "work" {
			t.Errorf("sacct: %q; want COMPLETED in account bio and partition work", line)
		}
		if hasGPU := strings.Contains(f[5], "gres/gpu=1"); hasGPU != (rule == "count") {
			t.Errorf("sacct: %q: the GPU in AllocTRES is %v; want it only for count's jobs", line, hasGPU)
		}
	}
	slices.Sort(jobs["count"])
	slices.Sort(countJobs)
	if len(jobs["make"]) != 3 || len(jobs["summary"]) != 1 || !slices.Equal(jobs["count"], countJobs) || len(jobs) != 3 {
		t.Errorf("sacct's jobs by rule: %v; want 3 make, 1 summary and the count jobs that wrote the counts, %v", jobs, countJobs)
	}

	// A failing rule: its job ends FAILED, the executor reads that from
	// sacct and snakemake fails. Without a partition the executor takes
	// the default one, starred in sinfo -o %P.
	r = runSnakemake("slurm_account=bio")("broken.txt")
	if r.code == 0 || !strings.Contains(r.stderr, "SLURM status is: 'FAILED'") {
		t.Errorf("snakemake broken.txt: exit %d; want non-zero, with the job's status FAILED\nstderr: %s", r.code, r.stderr)
	}
	got := sh.must("sacct", "-X", "-P", "-n", "--name", "snakejob_broken_0", "-o", "JobIDRaw,State,ExitCode,Partition")
	id, rest, _ := strings.Cut(got, "|")
	if rest != "FAILED|1:0|work" {
		t.Fatalf("sacct --name snakejob_broken_0: %q; want the job FAILED with exit code 1 in partition work", got)
	}
	// Its output went where the executor asked (-o .../%j.log, relative
	// to -D), where snakemake points the user.
	log := filepath.Join(".snakemake", "slurm_logs", "rule_broken", id+".log")
	if data := read(log); !strings.Contains(data, "trying") || !strings.Contains(r.stderr, log) {
		t.Errorf("%s:\n%s\nwant the rule's output, and snakemake's error to name it:\n%s", log, data, r.stderr)
	}

	// Ctrl-C: snakemake cancels the jobs it is waiting for with scancel
	// before it exits.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := command(ctx, []string{"slurm_account=bio", "slurm_partition=work"}, "slow.txt")
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slow := ""
	eventually(t, 2*time.Minute, "the slow rule's job to run", func() error {
		got := strings.TrimSpace(sh.run("squeue", "-h", "-t", "R", "-n", "snakejob_slow_0", "-o", "%i").stdout)
		if got == "" {
			return fmt.Errorf("not running yet; snakemake said:\n%s", out.String())
		}
		slow = got
		return nil
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Errorf("snakemake slow.txt interrupted: exit 0; want non-zero\n%s", out.String())
	}
	eventually(t, time.Minute, "the slow rule's job to end cancelled", func() error {
		got := sh.must("sacct", "-X", "-P", "-n", "-j", slow, "-o", "State")
		if !strings.HasPrefix(got, "CANCELLED") {
			return fmt.Errorf("sacct -j %s: %q; want CANCELLED", slow, got)
		}
		return nil
	})
}

// snakeJobLogs is what a failed run leaves to look at: sacct's view of
// every job and step, and every job's log the executor asked for.
func snakeJobLogs(t *testing.T, sh *slurmShims, work string) string {
	t.Helper()
	var b strings.Builder
	r := sh.run("sacct", "-a", "-o", "JobID,JobName%24,State,ExitCode,Elapsed,NodeList,AllocTRES%40")
	fmt.Fprintf(&b, "sacct:\n%s%s", r.stdout, r.stderr)
	logs, _ := filepath.Glob(filepath.Join(work, ".snakemake", "slurm_logs", "*", "*.log"))
	for _, l := range logs {
		data, _ := os.ReadFile(l)
		fmt.Fprintf(&b, "---- %s ----\n%s", l, data)
	}
	return b.String()
}
