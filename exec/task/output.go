package task

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Output files at paths a job chose (a batch script's --output and
// --error) are the job's, not the agent's. The supervisor runs as root and
// the agent reads them back for `shoal logs` as root, so each step is
// checked against the job's user:
//
//   - the supervisor opens (creates, truncates) the file as the job's user
//     (OpenAsUser), never through a symbolic link at the path (O_NOFOLLOW),
//     and records the file it got — device, inode and birth time — in the
//     task directory (output.json), before the first fork;
//   - the agent reads one back only as that user, again without following
//     a link, and only if the path still names the recorded file.
//
// So `--output /etc/shadow` fails the task (its user cannot open the
// file), and a link or another file put at the path after the task opened
// it is refused: `shoal logs` never returns a file the job did not write.
// The agent's own rank files, in a task directory only it can enter, are
// read without a link too.

// OutputsFile records, in a task directory, the output files the
// supervisor opened at paths the job chose.
const OutputsFile = "output.json"

// FileID is a file's identity: its device and inode, and its birth time
// where the file system records one (statx's btime; ext4, xfs, btrfs and
// tmpfs do): an inode number freed and given to a new file is the same
// device and inode, not the same birth.
type FileID struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Birth int64  `json:"birth,omitempty"` // ns since the epoch; 0: unknown
}

// UserIDs are the ids a file was opened with.
type UserIDs struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// Cred is u as a credential for OpenAsUser; nil for nil.
func (u *UserIDs) Cred() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}

// idsOf is the UserIDs of c; nil for nil.
func idsOf(c *syscall.Credential) *UserIDs {
	if c == nil {
		return nil
	}
	return &UserIDs{UID: c.Uid, GID: c.Gid, Groups: c.Groups}
}

// OpenedOutput is one output file at a path the job chose, as the
// supervisor opened it.
type OpenedOutput struct {
	Stream string `json:"stream"` // "stdout" or "stderr" (both: "stdout")
	Path   string `json:"path"`
	// User is whom it was opened as; nil: the supervisor's own ids (the
	// job's user is the agent's).
	User *UserIDs `json:"user,omitempty"`
	// ID is the file opened.
	ID FileID `json:"id"`
	// Error, when set, is why the open failed; nothing is read back then.
	Error string `json:"error,omitempty"`
}

// OutputRecord is the content of OutputsFile.
type OutputRecord struct {
	Files []OpenedOutput `json:"files"`
}

// Identify returns the identity of the open file f.
func Identify(f *os.File) (FileID, error) {
	rc, err := f.SyscallConn() // not Fd, which would make f blocking
	if err != nil {
		return FileID{}, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	var stx unix.Statx_t
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &stx)
	}); err != nil {
		return FileID{}, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	if errors.Is(serr, unix.ENOSYS) { // a kernel before statx (4.11)
		fi, err := f.Stat()
		if err != nil {
			return FileID{}, err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return FileID{}, fmt.Errorf("stat %s: no device and inode", f.Name())
		}
		return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
	}
	if serr != nil {
		return FileID{}, fmt.Errorf("stat %s: %w", f.Name(), serr)
	}
	id := FileID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino}
	if stx.Mask&unix.STATX_BTIME != 0 {
		id.Birth = stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)
	}
	return id, nil
}

// NoLink makes the error of an O_NOFOLLOW open that met a symbolic link
// say so.
func NoLink(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s is a symbolic link, which an output file may not be: %w", path, err)
	}
	return err
}

// OpenAsUser opens path with flags as the job's user would: on a thread of
// its own that takes the user's ids before the open and dies after it, so
// a root agent neither creates, truncates nor reads a file the user could
// not. A file it creates belongs to the user. With cred nil it is
// os.OpenFile. (The runtime starts no thread from a locked one, so the
// ids never spread to another thread.)
func OpenAsUser(path string, flags int, cred *syscall.Credential) (*os.File, error) {
	if cred == nil {
		return os.OpenFile(path, flags, 0o644)
	}
	type result struct {
		f   *os.File
		err error
	}
	res := make(chan result, 1)
	go func() {
		// Never unlocked: the thread, whose ids no longer are the agent's,
		// ends with this goroutine instead of running others.
		runtime.LockOSThread()
		// Raw system calls change the ids of this thread only (the
		// syscall package's wrappers change every thread's).
		groups := cred.Groups
		if len(groups) == 0 {
			groups = []uint32{cred.Gid}
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETGROUPS, uintptr(len(groups)), uintptr(unsafe.Pointer(&groups[0])), 0); e != 0 {
			res <- result{err: fmt.Errorf("setgroups: %w", e)}
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESGID, uintptr(cred.Gid), uintptr(cred.Gid), uintptr(cred.Gid)); e != 0 {
			res <- result{err: fmt.Errorf("setresgid %d: %w", cred.Gid, e)}
			return
		}
		if _, _, e := syscall.RawSyscall(syscall.SYS_SETRESUID, uintptr(cred.Uid), uintptr(cred.Uid), uintptr(cred.Uid)); e != 0 {
			res <- result{err: fmt.Errorf("setresuid %d: %w", cred.Uid, e)}
			return
		}
		f, err := os.OpenFile(path, flags, 0o644)
		res <- result{f, err}
	}()
	r := <-res
	return r.f, r.err
}

// OpenOutput opens path, a file the job chose, for writing with flags
// as cred (nil: this process's own ids), never through a symbolic link at
// path, and returns it with the record of what was opened. On failure the
// record carries the error too.
func OpenOutput(stream, path string, flags int, cred *syscall.Credential) (*os.File, OpenedOutput, error) {
	o := OpenedOutput{Stream: stream, Path: path, User: idsOf(cred)}
	fail := func(err error) (*os.File, OpenedOutput, error) {
		if cred != nil {
			err = fmt.Errorf("as uid %d: %w", cred.Uid, err)
		}
		o.Error = err.Error()
		return nil, o, err
	}
	f, err := OpenAsUser(path, flags|syscall.O_NOFOLLOW, cred)
	if err != nil {
		return fail(NoLink(path, err))
	}
	if o.ID, err = Identify(f); err != nil {
		f.Close()
		return fail(err)
	}
	return f, o, nil
}
