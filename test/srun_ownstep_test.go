package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestSrunOwnStep: srun outside an allocation with -o/-e, an --input
// file or --bcast runs its command as step 0 of an allocation of its own,
// as Slurm's srun always does: each task writes the file its pattern
// names, reads its input file, runs the broadcast copy; srun releases the
// allocation.
func TestSrunOwnStep(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 2})
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "in.txt"), []byte("from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	r := sh.run("srun", "-N2", "-n3", "--chdir", work, "-o", "out-%j-%t.txt", "-e", "err-%t.txt", "sh", "-c", `echo "out $SLURM_PROCID $SLURM_STEP_ID"; echo "err $SLURM_PROCID" >&2`)
	if r.code != 0 || r.stdout != "" {
		t.Errorf("srun -o/-e: exit %d, stdout %q; want 0 and nothing\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	var job uint64
	for rank := range 3 {
		matches, _ := filepath.Glob(filepath.Join(work, fmt.Sprintf("out-*-%d.txt", rank)))
		if len(matches) != 1 {
			t.Fatalf("task %d: output files %q; want one", rank, matches)
		}
		if _, err := fmt.Sscanf(filepath.Base(matches[0]), "out-%d-", &job); err != nil {
			t.Fatalf("%s: %v", matches[0], err)
		}
		for file, want := range map[string]string{matches[0]: fmt.Sprintf("out %d 0", rank), filepath.Join(work, fmt.Sprintf("err-%d.txt", rank)): fmt.Sprintf("err %d", rank)} {
			b, err := os.ReadFile(file)
			if got := strings.TrimSpace(string(b)); err != nil || got != want {
				t.Errorf("%s: %q, %v; want %q", file, got, err, want)
			}
		}
	}
	// The allocation is released once the step ended.
	if j := waitJob(t, a, job, 60*time.Second); j.State != "COMPLETED" {
		t.Errorf("job %d: %s; want COMPLETED (released)", job, j.State)
	}

	if out := sh.must("srun", "-N2", "--chdir", work, "--input=in.txt", "cat"); out != "from-file\nfrom-file" {
		t.Errorf("srun --input=in.txt cat: %q; want the file from each task", out)
	}
	if out := sh.must("srun", "-N1", "--chdir", work, "--bcast=bcast-echo", "echo", "copied"); out != "copied" {
		t.Errorf("srun --bcast echo: %q", out)
	}

	// srun's hooks, as Debian's Slurm runs them: --prolog and --epilog
	// here with the command as arguments, --task-prolog in each task
	// (its "export", "unset" and "print" lines read), --task-epilog after
	// each, in the task's first environment.
	scripts := map[string]string{
		"p.sh":  "#!/bin/sh\necho \"prolog $*\" >&2\nexit ${PRC:-0}\n",
		"e.sh":  "#!/bin/sh\necho \"epilog $*\" >&2\n",
		"tp.sh": "#!/bin/sh\necho \"export FOO=bar$SLURM_PROCID\"\necho \"print hello $SLURM_PROCID\"\necho \"unset GONE\"\n",
		// Into work, not the submit dir: salloc's is the test's own
		// directory, the checkout.
		"te.sh": "#!/bin/sh\necho \"task-epilog $SLURM_PROCID FOO=$FOO\" >> \"" + work + "/te-$SLURM_PROCID.log\"\n",
	}
	for name, body := range scripts {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hooks := []string{"--prolog=" + filepath.Join(work, "p.sh"), "--epilog=" + filepath.Join(work, "e.sh"),
		"--task-prolog=" + filepath.Join(work, "tp.sh"), "--task-epilog=" + filepath.Join(work, "te.sh")}
	shEnv := newSlurmShims(t, a, "GONE=here")
	for _, where := range []string{"own job", "step"} {
		args := append([]string{"-N2", "--chdir", work}, hooks...)
		args = append(args, "sh", "-c", `echo "task $SLURM_PROCID FOO=$FOO GONE=${GONE-unset}"; exit 0`)
		var r cliResult
		if where == "step" {
			shEnv.env = append(shEnv.env, "PATH="+shEnv.dir+":/usr/bin:/bin")
			r = shEnv.run("salloc", append([]string{"-N2", "srun"}, args...)...)
		} else {
			r = shEnv.run("srun", args...)
		}
		for _, w := range []string{"hello 0\n", "hello 1\n", "task 0 FOO=bar0 GONE=unset\n", "task 1 FOO=bar1 GONE=unset\n"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%s: stdout lacks %q:\n%s", where, w, r.stdout)
			}
		}
		for _, w := range []string{"prolog sh -c ", "epilog sh -c "} {
			if !strings.Contains(r.stderr, w) {
				t.Errorf("%s: stderr lacks %q:\n%s", where, w, r.stderr)
			}
		}
		if r.code != 0 {
			t.Errorf("%s: exit %d\nstderr: %s", where, r.code, r.stderr)
		}
		for rank := range 2 {
			b, err := os.ReadFile(filepath.Join(work, fmt.Sprintf("te-%d.log", rank)))
			if want := fmt.Sprintf("task-epilog %d FOO=\n", rank); err != nil || !strings.HasSuffix(string(b), want) {
				t.Errorf("%s: task %d epilog log %q, %v; want it to end %q", where, rank, b, err, want)
			}
		}
	}
	// A failing prolog aborts the step before it starts, as Slurm's.
	r = newSlurmShims(t, a, "PRC=5").run("srun", append([]string{"-N1", "--chdir", work}, hooks[0], "echo", "ran")...)
	if strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, "srun prolog failed rc = 5. Aborting step.") {
		t.Errorf("failing --prolog: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}
