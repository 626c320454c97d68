package stepd

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// A --pty rank runs on the supervisor's terminal: a client of pty.sock
// sets its size and types to it, reads its output, and sees the
// connection end once the rank is gone and the terminal closed.
func TestPtyServer(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the socket is bound in the task directory, the cwd
	p, slave, err := openPty(slog.New(slog.DiscardHandler), os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	p.serve()
	if fi, err := os.Stat(task.PtySock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	cmd := osexec.Command("sh", "-c", `read line; echo "got=$line size=$(stty size)"; exit 4`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	ptyAttr(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-waited
	}()

	c, err := task.DialPty(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // bounds the test, not the code
	msg := task.AppendPtyResize(nil, 33, 101)
	msg = task.AppendPtyData(msg, []byte("hello\r"))
	if _, err := c.Write(msg); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "got=hello size=33 101") {
		line, err := r.ReadString('\n')
		seen.WriteString(line)
		if err != nil {
			t.Fatalf("output ended before the answer: %v\n%q", err, seen.String())
		}
	}
	if err := <-waited; cmd.ProcessState.ExitCode() != 4 {
		t.Fatalf("rank: %v, want exit 4", err)
	}
	waited <- nil // for the deferred kill
	p.close()
	if rest, err := io.ReadAll(r); err != nil {
		t.Fatalf("after the rank's end: %v (read %q), want the end of the connection", err, rest)
	}
	if _, err := os.Stat(task.PtySock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}
