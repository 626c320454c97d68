package test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestSallocNoShell: salloc --no-shell returns 0 once the allocation is
// granted and leaves the job (named no-shell, as Slurm names it) holding
// it, so srun --jobid runs on it until scancel ends it.
func TestSallocNoShell(t *testing.T) {
	a, sh := startWithShims(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	r := sh.run("salloc", "--no-shell", "--gpus-per-node=1")
	var id uint64
	_, granted, _ := strings.Cut(r.stderr, "salloc: Granted")
	if _, err := fmt.Sscanf(granted, " job allocation %d", &id); r.code != 0 || err != nil {
		t.Fatalf("salloc --no-shell: exit %d, stderr %q; want 0 and Granted job allocation N", r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "Relinquishing") {
		t.Errorf("salloc --no-shell released its allocation:\n%s", r.stderr)
	}
	if got := sh.must("squeue", "-h", "-j", fmt.Sprint(id), "-o", "%T %j"); got != "RUNNING no-shell" {
		t.Errorf("squeue after salloc --no-shell: %q; want RUNNING no-shell", got)
	}
	if out := sh.must("srun", "--jobid", fmt.Sprint(id), "--overlap", "sh", "-c", "echo in $SLURM_JOB_ID"); out != fmt.Sprintf("in %d", id) {
		t.Errorf("srun --jobid %d in the held allocation printed %q", id, out)
	}
	sh.must("scancel", fmt.Sprint(id))
	if j := waitJob(t, a, id, 30*time.Second); j.State != "CANCELLED" {
		t.Errorf("job %d after scancel: %s; want CANCELLED", id, j.State)
	}
}

// TestSallocKillCommand: salloc -K sends its command SIGTERM (or the
// signal given) when the allocation is revoked, here by scancel, where
// salloc without -K sends SIGHUP.
func TestSallocKillCommand(t *testing.T) {
	_, sh := startWithShims(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	for _, tt := range []struct{ opt, sig string }{{"--kill-command", "TERM"}, {"-KUSR1", "USR1"}} {
		marker := filepath.Join(t.TempDir(), "marker")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		// The command writes its job id, then waits (at most 120 s) for
		// the signal, which it records.
		cmd := osexec.CommandContext(ctx, filepath.Join(sh.dir, "salloc"), tt.opt, "sh", "-c",
			`trap 'echo got-`+tt.sig+` >"$0"; exit 0' `+tt.sig+`; echo "$SLURM_JOB_ID" >"$0.id"; i=0; while [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done`, marker)
		cmd.Env = append(os.Environ(), sh.env...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			cancel()
			t.Fatal(err)
		}
		var id uint64
		eventually(t, 30*time.Second, "the command's job id", func() error {
			b, err := os.ReadFile(marker + ".id")
			if err != nil {
				return err
			}
			id, err = strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			return err
		})
		sh.must("scancel", fmt.Sprint(id))
		err := cmd.Wait()
		cancel()
		got, _ := os.ReadFile(marker)
		if err != nil || strings.TrimSpace(string(got)) != "got-"+tt.sig {
			t.Errorf("salloc %s, job %d cancelled: %v, the command recorded %q; want exit 0 after got-%s\nstderr: %s", tt.opt, id, err, got, tt.sig, stderr.String())
		}
		if !strings.Contains(stderr.String(), fmt.Sprintf("salloc: Job allocation %d has been revoked", id)) {
			t.Errorf("salloc %s: stderr lacks the revoke line:\n%s", tt.opt, stderr.String())
		}
	}
}
