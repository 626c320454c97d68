package exec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/exec/internal/exectest"
	"github.com/shoal-sched/shoal/exec/task"
)

// TestReadLogVerifies writes an output file as a task would, then changes
// what its path names in each way a job could, and reads it back.
func TestReadLogVerifies(t *testing.T) {
	exectest.MustBeRoot(t)
	tests := []struct {
		name    string
		swap    func(t *testing.T, path, secret string)
		want    string // data read, when wantErr is nil
		wantErr error  // errors.Is
		errText string // or a text the error has
	}{
		{name: "unchanged", swap: func(*testing.T, string, string) {}, want: "task output\n"},
		{name: "appended to", swap: func(t *testing.T, path, _ string) {
			appendTo(t, path, "more\n")
		}, want: "task output\nmore\n"},
		{name: "symlink to a secret", swap: func(t *testing.T, path, sec string) {
			replace(t, path, func(tmp string) error { return os.Symlink(sec, tmp) })
		}, errText: "symbolic link"},
		// Opened as the job's user, the secret is refused before its
		// identity is compared.
		{name: "hard link to a secret", swap: func(t *testing.T, path, sec string) {
			replace(t, path, func(tmp string) error { return os.Link(sec, tmp) })
		}, wantErr: os.ErrPermission},
		{name: "another file", swap: func(t *testing.T, path, _ string) {
			replace(t, path, func(tmp string) error { return os.WriteFile(tmp, []byte(exectest.SecretText), 0o644) })
		}, wantErr: ErrReplaced},
		{name: "a FIFO", swap: func(t *testing.T, path, _ string) {
			replace(t, path, func(tmp string) error { return syscall.Mkfifo(tmp, 0o666) })
		}, wantErr: ErrReplaced},
		{name: "removed", swap: func(t *testing.T, path, _ string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, wantErr: os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := exectest.UserDir(t)
			sec := exectest.Secret(t, dir, exectest.SecretText)
			path := filepath.Join(dir, "slurm-1.out")
			f, o, err := task.OpenOutput("stdout", path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, exectest.Nobody)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.WriteString("task output\n"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			tt.swap(t, path, sec)

			lf := outputLogFile(LogFile{Stream: "stdout", Path: path}, &task.OutputRecord{Files: []task.OpenedOutput{o}})
			done := make(chan struct{})
			var data []byte
			go func() {
				defer close(done)
				data, _, _, err = ReadLog(lf, 0, 1<<20)
			}()
			select {
			case <-done:
			case <-time.After(waitBound):
				t.Fatal("ReadLog blocked")
			}
			if strings.Contains(string(data), "secret-hash") {
				t.Fatalf("ReadLog returned the secret: %q", data)
			}
			switch {
			case tt.wantErr != nil:
				if !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v; want %v", err, tt.wantErr)
				}
			case tt.errText != "":
				if err == nil || !strings.Contains(err.Error(), tt.errText) {
					t.Errorf("err = %v; want one with %q", err, tt.errText)
				}
			case err != nil:
				t.Errorf("err = %v; want %q", err, tt.want)
			case string(data) != tt.want:
				t.Errorf("data = %q; want %q", data, tt.want)
			}
		})
	}
}

// replace puts what mk creates at a temporary name over path, atomically.
func replace(t *testing.T, path string, mk func(tmp string) error) {
	t.Helper()
	tmp := path + ".new"
	if err := mk(tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// TestReadLogBirth: a file that took over the task's file's inode number
// (freed when the task's was removed) is another file: it was born later.
func TestReadLogBirth(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	f, o, err := task.OpenOutput("stdout", path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if o.ID.Birth == 0 {
		t.Logf("the file system of %s records no birth times: only device and inode tell files apart", dir)
		return
	}
	lf := outputLogFile(LogFile{Stream: "stdout", Path: path}, &task.OutputRecord{Files: []task.OpenedOutput{o}})
	if _, _, _, err := ReadLog(lf, 0, 100); err != nil {
		t.Fatalf("ReadLog of the file itself: %v", err)
	}
	o.ID.Birth--
	lf = outputLogFile(LogFile{Stream: "stdout", Path: path}, &task.OutputRecord{Files: []task.OpenedOutput{o}})
	if _, _, _, err := ReadLog(lf, 0, 100); !errors.Is(err, ErrReplaced) {
		t.Errorf("ReadLog of a file born at another time: %v; want %v", err, ErrReplaced)
	}
}

// TestReadLogAsUser: the file the task wrote is read back as the job's
// user, so one the user cannot read (made root's and 0600 since) is not
// returned even though it is the same inode.
func TestReadLogAsUser(t *testing.T) {
	exectest.MustBeRoot(t)
	dir := exectest.UserDir(t)
	path := filepath.Join(dir, "out")
	f, o, err := task.OpenOutput("stdout", path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, exectest.Nobody)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := os.Chown(path, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	lf := outputLogFile(LogFile{Stream: "stdout", Path: path}, &task.OutputRecord{Files: []task.OpenedOutput{o}})
	if _, _, _, err := ReadLog(lf, 0, 1<<20); !errors.Is(err, os.ErrPermission) {
		t.Errorf("ReadLog of a file its user cannot read: %v; want permission denied", err)
	}
}

// TestReadLogRecords covers the record's verdicts and the rank files.
func TestReadLogRecords(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	lf := LogFile{Stream: "stdout", Path: path}

	// No record: never read.
	if _, _, _, err := ReadLog(outputLogFile(lf, nil), 0, 100); err == nil || !strings.Contains(err.Error(), "no record") {
		t.Errorf("ReadLog without a record: %v; want an error", err)
	}
	other := &task.OutputRecord{Files: []task.OpenedOutput{{Stream: "stdout", Path: path + "x"}}}
	if _, _, _, err := ReadLog(outputLogFile(lf, other), 0, 100); err == nil {
		t.Error("ReadLog with a record of another path: no error")
	}
	failed := &task.OutputRecord{Files: []task.OpenedOutput{{Stream: "stdout", Path: path, Error: "as uid 7: open: permission denied"}}}
	if _, _, _, err := ReadLog(outputLogFile(lf, failed), 0, 100); err == nil || !strings.Contains(err.Error(), "could not open it: as uid 7") {
		t.Errorf("ReadLog of a failed open: %v; want its error", err)
	}

	// A rank file (no record needed: the task directory is the agent's).
	tests := []struct {
		offset, limit   int64
		want            string
		wantOff, wantSz int64
	}{
		{0, 100, "0123456789", 0, 10},
		{4, 100, "456789", 4, 10},
		{0, 3, "789", 7, 10},           // the tail
		{20, 100, "0123456789", 0, 10}, // past the end: truncated since
		{10, 100, "", 10, 10},
	}
	for _, tt := range tests {
		data, off, size, err := ReadLog(lf, tt.offset, tt.limit)
		if err != nil || string(data) != tt.want || off != tt.wantOff || size != tt.wantSz {
			t.Errorf("ReadLog(%d, %d) = %q, %d, %d, %v; want %q, %d, %d", tt.offset, tt.limit, data, off, size, err,
				tt.want, tt.wantOff, tt.wantSz)
		}
	}
	link := filepath.Join(dir, "rank-0.out")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	if data, _, _, err := ReadLog(LogFile{Path: link}, 0, 100); err == nil || !errors.Is(err, syscall.ELOOP) {
		t.Errorf("ReadLog of a rank file that is a link = %q, %v; want ELOOP", data, err)
	}
	fifo := filepath.Join(dir, "rank-1.out")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if data, _, _, err := ReadLog(LogFile{Path: fifo}, 0, 100); err != nil || len(data) != 0 {
		t.Errorf("ReadLog of a FIFO = %q, %v; want nothing, without blocking", data, err)
	}
}

// userBatch is a batch launch of script run as nobody in a directory it
// may write.
func userBatch(t *testing.T, id cluster.JobID, script string) Launch {
	l := batchLaunch(t, id, script)
	l.Spec.WorkDir = exectest.UserDir(t)
	l.Spec.User, l.Spec.UID, l.Spec.GID = "nobody", int(exectest.Nobody.Uid), int(exectest.Nobody.Gid)
	return l
}

// TestBatchOutputRootFile: a job of an unprivileged user asking for a
// root file as its output fails to start, leaves the file alone, and its
// logs say why without a byte of the file.
func TestBatchOutputRootFile(t *testing.T) {
	exectest.MustBeRoot(t)
	e := newTestExec(t, t.TempDir(), time.Second)
	for i, target := range []string{"secret", "link"} {
		job := cluster.JobID(60 + i)
		l := userBatch(t, job, "#!/bin/sh\necho pwned\n")
		sec := exectest.Secret(t, l.Spec.WorkDir, exectest.SecretText)
		out := sec
		if target == "link" { // a link the user planted to the root file
			out = filepath.Join(l.Spec.WorkDir, "out")
			if err := os.Symlink(sec, out); err != nil {
				t.Fatal(err)
			}
		}
		l.Stdout, l.Stderr = out, out
		err := e.Start(t.Context(), l)
		if !errors.Is(err, ErrStartFailed) {
			t.Errorf("%s: Start = %v; want a start failure", target, err)
		}
		if x := waitExit(t, e, job); x.Cause != task.CauseStartFail {
			t.Errorf("%s: exit %+v; want cause start", target, x)
		}
		if got := exectest.ReadFile(t, sec); got != exectest.SecretText {
			t.Errorf("%s: the root file became %q", target, got)
		}
		files, err := e.LogFiles(job)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 {
			t.Fatalf("%s: LogFiles = %+v; want the output file", target, files)
		}
		data, _, _, err := ReadLog(files[0], 0, 1<<20)
		want := map[string]string{"secret": "permission denied", "link": "symbolic link"}[target]
		if len(data) != 0 || err == nil || !strings.Contains(err.Error(), "the job could not open it") ||
			!strings.Contains(err.Error(), want) {
			t.Errorf("%s: ReadLog = %q, %v; want no data and an error with %q", target, data, err, want)
		}
	}
}

// TestBatchOutputSwapped: the output file of a finished job is replaced
// with a link to a root file, then with a copy of it: neither is read.
func TestBatchOutputSwapped(t *testing.T) {
	exectest.MustBeRoot(t)
	e := newTestExec(t, t.TempDir(), time.Second)
	l := userBatch(t, 62, "#!/bin/sh\necho \"mine $(id -u)\"\n")
	out := filepath.Join(l.Spec.WorkDir, "slurm-62.out")
	l.Stdout, l.Stderr = out, out
	if err := e.Start(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	if x := waitExit(t, e, 62); x.ExitCode != 0 {
		t.Fatalf("exit %+v", x)
	}
	if got := readLog(t, e, 62, 0, "stdout"); got != "mine 65534\n" {
		t.Fatalf("output = %q; want the task's", got)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(out, &st); err != nil || st.Uid != exectest.Nobody.Uid {
		t.Errorf("output file owner %d (%v); want the job's user", st.Uid, err)
	}
	sec := exectest.Secret(t, l.Spec.WorkDir, exectest.SecretText)
	for _, swap := range []func(tmp string) error{
		func(tmp string) error { return os.Symlink(sec, tmp) },
		// A new file, readable by the user, perhaps on the inode number
		// the task's file freed (ext4 hands it out again at once).
		func(tmp string) error { return os.WriteFile(tmp, []byte(exectest.SecretText), 0o644) },
		func(tmp string) error { return os.WriteFile(tmp, []byte(exectest.SecretText), 0o600) },
	} {
		replace(t, out, swap)
		files, err := e.LogFiles(62)
		if err != nil || len(files) != 1 {
			t.Fatalf("LogFiles = %+v, %v", files, err)
		}
		data, _, _, err := ReadLog(files[0], 0, 1<<20)
		if len(data) != 0 || err == nil {
			t.Errorf("ReadLog of a swapped output = %q, %v; want an error and no data", data, err)
		}
	}
}
