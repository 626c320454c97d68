// Package datadir is an agent's data directory: created with the modes
// the agent trusts, locked against a second agent, and bound to one node
// name (a raft server's identity). It is the first piece of the agent's
// composition (config, data dir, start, shutdown) taken out of package
// node.
package datadir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir is an agent's locked data directory.
type Dir struct {
	path string
	lock *os.File
}

// ErrLocked is returned when another agent holds the data dir.
var ErrLocked = errors.New("data dir is locked by another agent")

// Open creates and locks dir and checks that it belongs to name:
// an agent restarted under another name on the same dir is refused, since
// its raft state would claim to be a different server.
func Open(dir, name string) (*Dir, error) {
	if err := os.MkdirAll(dir, 0o711); err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	// The agent trusts what it finds here (its raft log, its keys, task
	// records it runs as root from): a directory another user owns could
	// be swapped under it.
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	} else if owner := st.Sys().(*syscall.Stat_t).Uid; int(owner) != os.Geteuid() {
		return nil, fmt.Errorf("--data-dir %s: owned by uid %d, not this agent's user (uid %d): refusing a directory another user controls", dir, owner, os.Geteuid())
	}
	// Searchable, not listable: jobs of every user reach the socket and the
	// srun shims in it by path; raft and task records keep their own 0700
	// directories.
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	probe := filepath.Join(dir, ".write-test")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		return nil, fmt.Errorf("--data-dir %s: not writable: %w", dir, err)
	}
	_ = os.Remove(probe)
	f, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: open lock: %w", dir, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		holder, _ := os.ReadFile(filepath.Join(dir, "LOCK"))
		return nil, fmt.Errorf("--data-dir %s: %w (pid %s)", dir, ErrLocked, strings.TrimSpace(string(holder)))
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	d := &Dir{path: dir, lock: f}
	idFile := filepath.Join(dir, "node-name")
	prev, err := os.ReadFile(idFile)
	switch {
	case err == nil && strings.TrimSpace(string(prev)) != name:
		d.Close()
		return nil, fmt.Errorf("--name %q: data dir %s belongs to node %q; start it with --name %s or use another --data-dir",
			name, dir, strings.TrimSpace(string(prev)), strings.TrimSpace(string(prev)))
	case errors.Is(err, os.ErrNotExist):
		if err := os.WriteFile(idFile, []byte(name+"\n"), 0o600); err != nil {
			d.Close()
			return nil, fmt.Errorf("--data-dir %s: record node name: %w", dir, err)
		}
	case err != nil:
		d.Close()
		return nil, fmt.Errorf("--data-dir %s: read node name: %w", dir, err)
	}
	return d, nil
}

// SocketPath is the agent's Unix socket in the dir.
func (d *Dir) SocketPath() string { return filepath.Join(d.path, "shoal.sock") }

// Close releases the lock; another agent may open the dir.
func (d *Dir) Close() {
	if d.lock != nil {
		_ = unix.Flock(int(d.lock.Fd()), unix.LOCK_UN)
		d.lock.Close()
		d.lock = nil
	}
}
