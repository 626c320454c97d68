package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// dataDir is an agent's locked data directory.
type dataDir struct {
	path string
	lock *os.File
}

// ErrDataDirLocked is returned when another agent holds the data dir.
var ErrDataDirLocked = errors.New("data dir is locked by another agent")

// openDataDir creates and locks dir and checks that it belongs to name:
// an agent restarted under another name on the same dir is refused, since
// its raft state would claim to be a different server.
func openDataDir(dir, name string) (*dataDir, error) {
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
		return nil, fmt.Errorf("--data-dir %s: %w (pid %s)", dir, ErrDataDirLocked, strings.TrimSpace(string(holder)))
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	d := &dataDir{path: dir, lock: f}
	idFile := filepath.Join(dir, "node-name")
	prev, err := os.ReadFile(idFile)
	switch {
	case err == nil && strings.TrimSpace(string(prev)) != name:
		d.close()
		return nil, fmt.Errorf("--name %q: data dir %s belongs to node %q; start it with --name %s or use another --data-dir",
			name, dir, strings.TrimSpace(string(prev)), strings.TrimSpace(string(prev)))
	case errors.Is(err, os.ErrNotExist):
		if err := os.WriteFile(idFile, []byte(name+"\n"), 0o600); err != nil {
			d.close()
			return nil, fmt.Errorf("--data-dir %s: record node name: %w", dir, err)
		}
	case err != nil:
		d.close()
		return nil, fmt.Errorf("--data-dir %s: read node name: %w", dir, err)
	}
	return d, nil
}

func (d *dataDir) socketPath() string { return filepath.Join(d.path, "shoal.sock") }

func (d *dataDir) close() {
	if d.lock != nil {
		_ = unix.Flock(int(d.lock.Fd()), unix.LOCK_UN)
		d.lock.Close()
		d.lock = nil
	}
}
