package slurmcli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

var sbcastOpts = []slurm.Option{
	{Long: "force", Short: 'f', Arg: slurm.NoArg},
	{Long: "preserve", Short: 'p', Arg: slurm.NoArg},
	{Long: "jobid", Short: 'j', Arg: slurm.NeedArg},
	// Hints of how to move the bytes: each node's agent receives the
	// whole file from srun's agent here.
	{Long: "compress", Short: 'C', Arg: slurm.OptArg},
	{Long: "fanout", Short: 'F', Arg: slurm.NeedArg},
	{Long: "size", Short: 's', Arg: slurm.NeedArg},
	{Long: "timeout", Short: 't', Arg: slurm.NeedArg},
	optVerbose,
	{Long: "exclude", Arg: slurm.NeedArg, Unsupported: "Shoal copies no shared libraries (--send-libs)"},
	{Long: "send-libs", Arg: slurm.OptArg, Unsupported: "Shoal copies the file alone, not its shared libraries"},
	optHelp,
	optUsage,
}

// Sbcast is sbcast: it copies SOURCE to DEST on every node of the job's
// allocation (-j, else SLURM_JOB_ID), as the job's user, with SOURCE's
// permission bits (and, with -p, its modification time); a DEST that
// exists is refused unless -f. A relative DEST is taken from the current
// directory.
func Sbcast(ctx context.Context, connect Connect, args []string, stdout, stderr io.Writer) error {
	vals, rest, err := cliArgs("sbcast", sbcastOpts, args, stderr)
	if err != nil {
		return err
	}
	var force, preserve, verbose bool
	jobRef := jobIDEnv()
	for _, v := range vals {
		switch v.Opt.Long {
		case "force":
			force = true
		case "preserve":
			preserve = true
		case "verbose":
			verbose = true
		case "jobid":
			jobRef, _, _ = strings.Cut(v.Value, ".") // a step's nodes are its job's
		}
	}
	if len(rest) != 2 {
		return slurmErrorf("Need two file names, have %d names", len(rest))
	}
	if jobRef == "" {
		return slurmErrorf("Need a job id, from -j or SLURM_JOB_ID")
	}
	job, err := slurm.ParseJobID(jobRef)
	if err != nil {
		return slurmErrorf("Invalid job id %s", jobRef)
	}
	src, dest := rest[0], rest[1]
	if !filepath.IsAbs(dest) {
		wd, err := os.Getwd()
		if err != nil {
			return err
		}
		dest = filepath.Join(wd, dest)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return slurmErrorf("Can't open `%s`: %v", src, errors.Unwrap(err))
	}
	if !fi.Mode().IsRegular() {
		return slurmErrorf("%s: not a regular file", src)
	}
	c, err := connect()
	if err != nil {
		return err
	}
	j, err := c.Job(ctx, job)
	if err != nil {
		return fmt.Errorf("job %d: %w", job, err)
	}
	if j.State != "RUNNING" {
		return slurmErrorf("Job %d is %s: sbcast copies to a running job's nodes", job, j.State)
	}
	var mtime int64
	if preserve {
		mtime = fi.ModTime().Unix()
	}
	for _, node := range j.Nodes {
		if err := bcastTo(ctx, c, job, src, api.BcastFile{Node: node, Path: dest, Mode: uint32(fi.Mode().Perm()), Force: force, MTime: mtime}); err != nil {
			return err
		}
		if verbose {
			fmt.Fprintf(stderr, "sbcast: %s to %s:%s (%d bytes)\n", src, node, dest, fi.Size())
		}
	}
	return nil
}

// bcastTo copies src to f on one node.
func bcastTo(ctx context.Context, c *api.Client, job uint64, src string, f api.BcastFile) error {
	in, err := os.Open(src)
	if err != nil {
		return slurmErrorf("Can't open `%s`: %v", src, errors.Unwrap(err))
	}
	defer in.Close()
	if err := c.Bcast(ctx, job, f, in); err != nil {
		var se *api.StatusError
		if errors.As(err, &se) {
			return slurmErrorf("%s", se.Message)
		}
		return err
	}
	return nil
}
