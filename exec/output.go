package exec

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/shoal-sched/shoal/exec/task"
)

// ErrReplaced is returned by ReadLog when an output file's path no longer
// names the file the task opened.
var ErrReplaced = errors.New("not the file the task opened (replaced since)")

// openVerified opens path for reading as o's user, never through a
// symbolic link, and only if it is still the file o records.
func openVerified(o task.OpenedOutput) (*os.File, error) {
	// O_NONBLOCK: a FIFO swapped in must not block the agent.
	f, err := task.OpenAsUser(o.Path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_NOCTTY, o.User.Cred())
	if err != nil {
		return nil, task.NoLink(o.Path, err)
	}
	id, err := task.Identify(f)
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
		err = task.NoLink(f.Path, err)
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
func outputLogFile(lf LogFile, rec *task.OutputRecord) LogFile {
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
