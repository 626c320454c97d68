package test

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestSbcast: sbcast copies a file to every node of a running job, as
// the job's user, with its mode; an existing file is refused without -f;
// the job's tasks then read it. (The loopback cluster's nodes share one
// file system: -f lets the second node's copy replace the first's.)
func TestSbcast(t *testing.T) {
	_, sh := startWithShims(t, localcluster.Options{Nodes: 2})
	work := t.TempDir()
	id := sh.allocation("-N2", "--chdir", work)

	data := make([]byte, 3<<20)
	rand.Read(data)
	src := filepath.Join(work, "tool")
	if err := os.WriteFile(src, data, 0o750); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := os.Chtimes(src, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(t.TempDir(), "tool.copy")
	r := sh.run("sbcast", "-j", fmt.Sprint(id), "-f", "-p", "-v", src, dest)
	if r.code != 0 || !strings.Contains(r.stderr, "to n1:"+dest) || !strings.Contains(r.stderr, "to n2:"+dest) {
		t.Fatalf("sbcast: exit %d, stderr %s; want copies to n1 and n2", r.code, r.stderr)
	}
	got, err := os.ReadFile(dest)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("copy: %d bytes, %v; want the %d sent", len(got), err, len(data))
	}
	if fi, err := os.Stat(dest); err != nil || fi.Mode().Perm() != 0o750 || !fi.ModTime().Equal(mtime) {
		t.Errorf("copy: %v, mode %v, mtime %v; want 0750 and %v", err, fi.Mode().Perm(), fi.ModTime(), mtime)
	}

	// Without -f an existing file is refused.
	r = sh.run("sbcast", "-j", fmt.Sprint(id), src, dest)
	if r.code != 1 || !strings.Contains(r.stderr, "exists") {
		t.Errorf("sbcast onto an existing file: exit %d, stderr %s; want 1 and the file exists", r.code, r.stderr)
	}

	// The tasks read it.
	sum := sha256.Sum256(data)
	r = sh.srunIn(nil, []string{"SLURM_JOB_ID=" + fmt.Sprint(id)}, "-N2", "-n2", "--chdir", work, "sh", "-c", "sha256sum "+dest+" | cut -d' ' -f1")
	want := hex.EncodeToString(sum[:])
	if r.code != 0 || r.stdout != want+"\n"+want+"\n" {
		t.Errorf("tasks' sha256sum: exit %d, stdout %q, stderr %s; want %s twice", r.code, r.stdout, r.stderr, want)
	}

	// The copy is written as the job's user: a job of nobody's cannot
	// write where nobody may not, even when root runs sbcast.
	if os.Geteuid() != 0 {
		t.Fatal("needs root: sbatch --uid is root's")
	}
	other := sh.allocation("--uid=nobody", "--gid=nogroup", "-N1", "--chdir", "/tmp", "-o", "/dev/null")
	rootOnly := t.TempDir() // 0700, root's
	r = sh.run("sbcast", "-j", fmt.Sprint(other), src, filepath.Join(rootOnly, "x"))
	if _, err := os.Stat(filepath.Join(rootOnly, "x")); r.code != 1 || !strings.Contains(r.stderr, "permission denied") || err == nil {
		t.Errorf("sbcast to nobody's job into a root-only directory: exit %d, stderr %s, file: %v; want refused", r.code, r.stderr, err)
	}
	sh.must("scancel", fmt.Sprint(other))

	// srun --bcast: the program copied to each node before the step, and
	// run from there: to a file, or per node in the working directory.
	prog := filepath.Join(work, "prog.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"$0 $1 on $SLURMD_NODENAME\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	inJob := []string{"SLURM_JOB_ID=" + fmt.Sprint(id)}
	copyTo := filepath.Join(t.TempDir(), "prog.copy")
	r = sh.srunIn(nil, inJob, "-N2", "-n2", "--chdir", work, "--bcast="+copyTo, prog, "arg")
	if want := []string{copyTo + " arg on n1", copyTo + " arg on n2"}; r.code != 0 || !sameLines(r.stdout, want) {
		t.Errorf("srun --bcast=FILE: exit %d, stdout %q, stderr %s; want %q", r.code, r.stdout, r.stderr, want)
	}
	r = sh.srunIn(nil, inJob, "-N2", "-n2", "--chdir", work, "--bcast", prog, "arg")
	per := func(n string) string { return filepath.Join(work, fmt.Sprintf("slurm_bcast_%d_%s", id, n)) }
	if want := []string{per("n1") + " arg on n1", per("n2") + " arg on n2"}; r.code != 0 || !sameLines(r.stdout, want) {
		t.Errorf("srun --bcast: exit %d, stdout %q, stderr %s; want %q", r.code, r.stdout, r.stderr, want)
	}
}

// sameLines reports whether out holds the lines want, in any order.
func sameLines(out string, want []string) bool {
	got := strings.Split(strings.TrimSpace(out), "\n")
	slices.Sort(got)
	w := slices.Clone(want)
	slices.Sort(w)
	return slices.Equal(got, w)
}
