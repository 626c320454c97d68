package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/task"
	"github.com/shoal-sched/shoal/worker"
)

// Bcast writes what body holds to file f on a node of job id's allocation
// (sbcast), for who (the job's owner or root): here when f names this
// node, else, unless a peer asked (forwarded), through that node's
// agent.
func (r relayAPI) Bcast(ctx context.Context, id cluster.JobID, f api.BcastFile, body io.Reader, who cluster.Identity, forwarded bool) error {
	v, j, err := r.relayJob(id, "copy a file to the nodes of", who, forwarded)
	if err != nil {
		return err
	}
	here, err := worker.BcastHere(j, f.Node, r.cfg.Name, forwarded)
	switch {
	case err != nil:
		return err
	case here:
		return writeBcast(j, f, body)
	}
	return r.relayPeer(v, f.Node, who, func(c *api.Client) error { return c.Bcast(ctx, uint64(id), f, body) })
}

// writeBcast writes r to f.Path here as job j's user (who must be able
// to create it), with f's mode and, when set, modification time. Without
// f.Force an existing file is refused, as sbcast without -f.
func writeBcast(j *cluster.Job, f api.BcastFile, r io.Reader) error {
	// The mode's setuid, setgid and sticky bits are not carried: the
	// file is the user's, as a copy they made would be.
	flags := os.O_WRONLY | os.O_CREATE | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	if f.Force {
		flags |= os.O_TRUNC
	} else {
		flags |= os.O_EXCL
	}
	out, err := task.OpenAsUser(f.Path, flags, userCred(j.Spec.UID, j.Spec.GID))
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return conflict(fmt.Errorf("%s on %s: the file exists (sbcast -f replaces it)", f.Path, f.Node))
		}
		return invalid(fmt.Errorf("%s: %w", f.Path, err))
	}
	_, err = io.Copy(out, r)
	if err == nil {
		err = out.Chmod(os.FileMode(f.Mode & 0o777))
	}
	if err == nil && f.MTime != 0 {
		tv := []syscall.Timeval{{Sec: f.MTime}, {Sec: f.MTime}}
		err = syscall.Futimes(int(out.Fd()), tv)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.Path, err)
	}
	return nil
}

// userCred is the credential to act as uid with its groups, nil where
// the agent is not root or the user is root (act as the agent).
func userCred(uid, gid int) *syscall.Credential {
	if os.Geteuid() != 0 || uid == 0 {
		return nil
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(gid)}}
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.ParseUint(g, 10, 32); err == nil && uint32(n) != uint32(gid) {
					cred.Groups = append(cred.Groups, uint32(n))
				}
			}
		}
	}
	return cred
}
