package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

// errBcastOutside refuses srun --bcast for a job of srun's own: its
// tasks start as soon as it has nodes, before a copy could land.
var errBcastOutside = errors.New("--bcast: not supported by Shoal for srun --pty outside an allocation (its task starts as soon as it has nodes); run it as a step (salloc, then srun --pty --bcast)")

// bcastCommand is srun --bcast: the step's program is copied to every
// node of job's allocation before the step starts, and command is
// returned to run the copies. --bcast=FILE copies it to FILE (relative
// to the step's working directory workDir); --bcast or --bcast=DIR/
// copies it to slurm_bcast_<job>_<node> in DIR (default: workDir), one
// name per node as Slurm's (which also names the step, unknown before
// it starts), and runs each node's through /bin/sh.
func bcastCommand(ctx context.Context, c *api.Client, job uint64, opts slurm.Options, command []string, workDir string) ([]string, error) {
	if !opts.Set["bcast"] {
		return command, nil
	}
	prog, err := osexec.LookPath(command[0])
	if err != nil {
		return nil, fmt.Errorf("--bcast: %w", err)
	}
	if prog, err = filepath.Abs(prog); err != nil {
		return nil, fmt.Errorf("--bcast: %w", err)
	}
	fi, err := os.Stat(prog)
	if err != nil {
		return nil, fmt.Errorf("--bcast: %w", err)
	}
	j, err := c.Job(ctx, job)
	if err != nil {
		return nil, fmt.Errorf("--bcast: job %d: %w", job, err)
	}
	dest, perNode := opts.Bcast, false
	if dest == "" || strings.HasSuffix(dest, "/") {
		if dest == "" {
			dest = workDir
		}
		dest, perNode = filepath.Join(dest, fmt.Sprintf("slurm_bcast_%d_", job)), true
	}
	if !filepath.IsAbs(dest) {
		dest = filepath.Join(workDir, dest)
	}
	for _, node := range j.Nodes {
		f := api.BcastFile{Node: node, Path: dest, Mode: uint32(fi.Mode().Perm()), Force: true}
		if perNode {
			f.Path += node
		}
		if err := bcastTo(ctx, c, job, prog, f); err != nil {
			return nil, fmt.Errorf("--bcast: %w", err)
		}
	}
	if perNode {
		return append([]string{"/bin/sh", "-c", `exec "$0$SLURMD_NODENAME" "$@"`, dest}, command[1:]...), nil
	}
	return append([]string{dest}, command[1:]...), nil
}
