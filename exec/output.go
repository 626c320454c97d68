package exec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// Output files at paths a job chose (a batch script's --output and
// --error) are the job's, not the agent's. The supervisor runs as root and
// the agent reads them back for `shoal logs` as root, so each step is
// checked against the job's user:
//
//   - the supervisor opens (creates, truncates) the file as the job's user
//     (openAsUser), never through a symbolic link at the path (O_NOFOLLOW),
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

// outputsFile records, in a task directory, the output files the
// supervisor opened at paths the job chose.
const outputsFile = "output.json"

// ErrReplaced is returned by ReadLog when an output file's path no longer
// names the file the task opened.
var ErrReplaced = errors.New("not the file the task opened (replaced since)")

// fileID is a file's identity: its device and inode, and its birth time
// where the file system records one (statx's btime; ext4, xfs, btrfs and
// tmpfs do): an inode number freed and given to a new file is the same
// device and inode, not the same birth.
type fileID struct {
	Dev   uint64 `json:"dev"`
	Ino   uint64 `json:"ino"`
	Birth int64  `json:"birth,omitempty"` // ns since the epoch; 0: unknown
}

// userIDs are the ids a file was opened with.
type userIDs struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// cred is u as a credential for openAsUser; nil for nil.
func (u *userIDs) cred() *syscall.Credential {
	if u == nil {
		return nil
	}
	return &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
}

func idsOf(c *syscall.Credential) *userIDs {
	if c == nil {
		return nil
	}
	return &userIDs{UID: c.Uid, GID: c.Gid, Groups: c.Groups}
}

// openedOutput is one output file at a path the job chose, as the
// supervisor opened it.
type openedOutput struct {
	Stream string `json:"stream"` // "stdout" or "stderr" (both: "stdout")
	Path   string `json:"path"`
	// User is whom it was opened as; nil: the supervisor's own ids (the
	// job's user is the agent's).
	User *userIDs `json:"user,omitempty"`
	// ID is the file opened.
	ID fileID `json:"id"`
	// Error, when set, is why the open failed; nothing is read back then.
	Error string `json:"error,omitempty"`
}

// outputRecord is the content of outputsFile.
type outputRecord struct {
	Files []openedOutput `json:"files"`
}

// identify returns the identity of the open file f.
func identify(f *os.File) (fileID, error) {
	rc, err := f.SyscallConn() // not Fd, which would make f blocking
	if err != nil {
		return fileID{}, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	var stx unix.Statx_t
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = unix.Statx(int(fd), "", unix.AT_EMPTY_PATH, unix.STATX_BASIC_STATS|unix.STATX_BTIME, &stx)
	}); err != nil {
		return fileID{}, fmt.Errorf("stat %s: %w", f.Name(), err)
	}
	if errors.Is(serr, unix.ENOSYS) { // a kernel before statx (4.11)
		fi, err := f.Stat()
		if err != nil {
			return fileID{}, err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fileID{}, fmt.Errorf("stat %s: no device and inode", f.Name())
		}
		return fileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
	}
	if serr != nil {
		return fileID{}, fmt.Errorf("stat %s: %w", f.Name(), serr)
	}
	id := fileID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino}
	if stx.Mask&unix.STATX_BTIME != 0 {
		id.Birth = stx.Btime.Sec*1e9 + int64(stx.Btime.Nsec)
	}
	return id, nil
}

// noLink makes the error of an O_NOFOLLOW open that met a symbolic link
// say so.
func noLink(path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return fmt.Errorf("%s is a symbolic link, which an output file may not be: %w", path, err)
	}
	return err
}

// openOutputFile opens path, a file the job chose, for writing with flags
// as cred (nil: this process's own ids), never through a symbolic link at
// path, and returns it with the record of what was opened. On failure the
// record carries the error too.
func openOutputFile(stream, path string, flags int, cred *syscall.Credential) (*os.File, openedOutput, error) {
	o := openedOutput{Stream: stream, Path: path, User: idsOf(cred)}
	fail := func(err error) (*os.File, openedOutput, error) {
		if cred != nil {
			err = fmt.Errorf("as uid %d: %w", cred.Uid, err)
		}
		o.Error = err.Error()
		return nil, o, err
	}
	f, err := openAsUser(path, flags|syscall.O_NOFOLLOW, cred)
	if err != nil {
		return fail(noLink(path, err))
	}
	if o.ID, err = identify(f); err != nil {
		f.Close()
		return fail(err)
	}
	return f, o, nil
}

// openVerified opens path for reading as o's user, never through a
// symbolic link, and only if it is still the file o records.
func openVerified(o openedOutput) (*os.File, error) {
	// O_NONBLOCK: a FIFO swapped in must not block the agent.
	f, err := openAsUser(o.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, o.User.cred())
	if err != nil {
		return nil, noLink(o.Path, err)
	}
	id, err := identify(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if id != o.ID {
		f.Close()
		return nil, fmt.Errorf("output file %s: %w: device %d inode %d born %d, the task's was device %d inode %d born %d",
			o.Path, ErrReplaced, id.Dev, id.Ino, id.Birth, o.ID.Dev, o.ID.Ino, o.ID.Birth)
	}
	return f, nil
}

// ReadLog reads f from offset on, at most limit bytes (the tail, if more
// is there), and returns the bytes, where they start, and the file's size.
// An offset past the end (a file truncated by a rerun) reads from 0.
//
// A file at a path the job chose is read as the job's user, and only if
// the path still names the file the task opened (else the error wraps
// ErrReplaced); no file is read through a symbolic link. Only regular
// files are read: /dev/null, a FIFO or a device reads as empty (reading
// one would take data from it).
func ReadLog(f LogFile, offset, limit int64) ([]byte, int64, int64, error) {
	if f.unreadable != "" {
		return nil, 0, 0, errors.New(f.unreadable)
	}
	var file *os.File
	var err error
	if f.output != nil {
		file, err = openVerified(*f.output)
	} else {
		// A rank file in the agent's own task directory.
		file, err = os.OpenFile(f.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
		err = noLink(f.Path, err)
	}
	if err != nil {
		return nil, 0, 0, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, 0, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, 0, nil
	}
	size := fi.Size()
	if offset > size || offset < 0 {
		offset = 0
	}
	if limit >= 0 && size-offset > limit {
		offset = size - limit
	}
	buf := make([]byte, size-offset)
	n, err := file.ReadAt(buf, offset)
	if err != nil && n < len(buf) && !errors.Is(err, io.EOF) {
		return nil, 0, 0, fmt.Errorf("read %s: %w", f.Path, err)
	}
	return buf[:n], offset, offset + int64(n), nil
}

// outputLogFile completes lf, an output file at a path the job chose,
// with what the supervisor recorded of opening it (rec, nil when it wrote
// no record): ReadLog reads it only as recorded, and nothing of it
// without a record or after a failed open.
func outputLogFile(lf LogFile, rec *outputRecord) LogFile {
	if rec != nil {
		for i := range rec.Files {
			o := rec.Files[i]
			if o.Path != lf.Path {
				continue
			}
			if o.Error != "" {
				lf.unreadable = fmt.Sprintf("output file %s: the job could not open it: %s", lf.Path, o.Error)
			} else {
				lf.output = &o
			}
			return lf
		}
	}
	lf.unreadable = fmt.Sprintf("output file %s: no record of the task opening it: not read", lf.Path)
	return lf
}
