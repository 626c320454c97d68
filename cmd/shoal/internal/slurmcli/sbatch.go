package slurmcli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/exitcode"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
	"github.com/shoal-sched/shoal/slurm"
)

// Sbatch submits a batch job from sbatch's command line and prints
// "Submitted batch job N", or N with --parsable.
func Sbatch(ctx context.Context, connect Connect, args []string, out io.Writer) error {
	req, opts, warnings, err := request.Batch(args)
	if err != nil {
		return err
	}
	request.PrintWarnings("sbatch", warnings)
	if connect, err = AsCaller(connect, opts); err != nil {
		return err
	}
	c, err := connect()
	if err != nil {
		return err
	}
	if opts.TestOnly {
		return testOnly(ctx, c, "sbatch", req, os.Stderr)
	}
	res, err := c.Submit(ctx, req, request.SubmitRetry)
	if err != nil {
		return err
	}
	request.PrintWarnings("sbatch", res.Warnings)
	if opts.Parsable {
		fmt.Fprintln(out, res.ID)
	} else {
		fmt.Fprintf(out, "Submitted batch job %d\n", res.ID)
	}
	if opts.Wait {
		return waitBatch(ctx, c, res.ID, req.Array != nil)
	}
	return nil
}

// testOnly is --test-only: check the job as a submit would and say when
// and where it could start, as Slurm's "Job N to start at ..." line, with
// no job submitted.
func testOnly(ctx context.Context, c *api.Client, cmd string, req api.SubmitRequest, w io.Writer) error {
	est, err := c.TestOnly(ctx, req)
	if err != nil {
		return err
	}
	start := est.Start
	if t, err := time.Parse(time.RFC3339, est.Start); err == nil {
		start = t.Local().Format("2006-01-02T15:04:05")
	}
	part := cmp.Or(est.Partition, ShoalPartition)
	fmt.Fprintf(w, "%s: Job %d to start at %s using %d processors on nodes %s in partition %s\n",
		cmd, est.Job, start, est.CPUs, slurm.CompressHostlist(est.Nodes), part)
	return nil
}

// waitBatch is sbatch --wait: wait until the job (every element of an
// array) has ended and exit with its exit code, the highest of an array's,
// or 1 when one ended by a signal or without an exit of its own.
func waitBatch(ctx context.Context, c *api.Client, id uint64, array bool) error {
	worst := 0
	for {
		jobs, err := waitTargets(ctx, c, id, array)
		if err != nil {
			return err
		}
		live := false
		worst = 0
		for _, j := range jobs {
			switch {
			case !cluster.JobState(j.State).Terminal():
				live = true
			case j.ExitCode > 128 || (j.State != "COMPLETED" && j.ExitCode == 0):
				worst = max(worst, 1) // a signal, a cancel, a lost node: Slurm says 1
			default:
				worst = max(worst, j.ExitCode)
			}
		}
		if !live {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if worst != 0 {
		return exitcode.Code(worst)
	}
	return nil
}

// waitTargets is the job, or every element of array id.
func waitTargets(ctx context.Context, c *api.Client, id uint64, array bool) ([]api.Job, error) {
	if !array {
		j, err := c.Job(ctx, id)
		return []api.Job{j}, err
	}
	all, err := c.Jobs(ctx, true)
	if err != nil {
		return nil, err
	}
	var out []api.Job
	for _, j := range all {
		if j.ArrayJobID == id {
			out = append(out, j)
		}
	}
	return out, nil
}

// idLookup resolves users and groups, by name or number.
type idLookup interface {
	user(nameOrID string) (name string, uid, gid int, err error)
	group(nameOrID string) (gid int, err error)
}

// AsCaller is connect for the identity sbatch's, srun's or salloc's
// --uid/--gid ask for (asIdentity): connect itself when neither is
// given, else one whose clients declare that user and group, so the job
// (or step) is theirs and runs as them. A caller that is not root is
// refused with Slurm's words before anything is sent.
func AsCaller(connect Connect, opts slurm.Options) (Connect, error) {
	if opts.AsUser == "" && opts.AsGroup == "" {
		return connect, nil
	}
	id, err := asIdentity(opts.AsUser, opts.AsGroup, os.Geteuid(), systemIDs{})
	if err != nil {
		return nil, err
	}
	return func() (*api.Client, error) {
		c, err := connect()
		if err != nil {
			return nil, err
		}
		return c.WithIdentity(id), nil
	}, nil
}

// asIdentity is the identity --uid/--gid submit as, for a caller
// of effective uid euid: only root may submit as another user or group,
// as Slurm's sbatch says; the group defaults to the user's primary one,
// the user to the caller (root). The agent believes a declared identity
// only from root on its socket.
func asIdentity(asUser, asGroup string, euid int, ids idLookup) (api.Identity, error) {
	if euid != 0 {
		opt := "--uid"
		if asUser == "" {
			opt = "--gid"
		}
		return api.Identity{}, fmt.Errorf("%s only permitted by root user", opt)
	}
	id := api.Identity{User: "root"}
	if asUser != "" {
		name, uid, gid, err := ids.user(asUser)
		if err != nil {
			return id, fmt.Errorf("--uid %q: %w", asUser, err)
		}
		id = api.Identity{User: name, UID: uid, GID: gid}
	}
	if asGroup != "" {
		gid, err := ids.group(asGroup)
		if err != nil {
			return id, fmt.Errorf("--gid %q: %w", asGroup, err)
		}
		id.GID = gid
	}
	return id, nil
}

// systemIDs looks users and groups up in the system's databases.
type systemIDs struct{}

func (systemIDs) user(v string) (string, int, int, error) {
	u, err := user.Lookup(v)
	if _, numeric := strconv.Atoi(v); err != nil && numeric == nil {
		u, err = user.LookupId(v)
	}
	if err != nil {
		return "", 0, 0, fmt.Errorf("no such user")
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return "", 0, 0, fmt.Errorf("user %s has non-numeric ids %s:%s", u.Username, u.Uid, u.Gid)
	}
	return u.Username, uid, gid, nil
}

func (systemIDs) group(v string) (int, error) {
	g, err := user.LookupGroup(v)
	if _, numeric := strconv.Atoi(v); err != nil && numeric == nil {
		g, err = user.LookupGroupId(v)
	}
	if err != nil {
		return 0, fmt.Errorf("no such group")
	}
	gid, err := strconv.Atoi(g.Gid)
	if err != nil {
		return 0, fmt.Errorf("group %s has a non-numeric id %s", g.Name, g.Gid)
	}
	return gid, nil
}
