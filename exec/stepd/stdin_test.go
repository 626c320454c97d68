package stepd

import (
	"io"
	"log/slog"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// Ranks that read srun's stdin get what one client of stdin.sock sends,
// each its own copy, and its end as their EOF; a rank that does not read
// does not stop the others, and the socket goes once used.
func TestStdinServer(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir) // the socket is bound in the task directory, the cwd
	s, err := openStdin(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	var cmds []*osexec.Cmd
	var outs []*strings.Builder
	for _, script := range []string{"cat", "cat", "exec 0<&-; sleep 0.1"} {
		r, err := s.pipe()
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		cmd := osexec.Command("sh", "-c", script)
		cmd.Stdin, cmd.Stdout = r, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r.Close()
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	s.serve()
	if fi, err := os.Stat(task.StdinSock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v; want mode 0600", err)
	}
	c, err := task.DialStdin(dir)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // bounds the test, not the code
	data := strings.Repeat("0123456789abcdef", 64<<10)  // 1 MiB: more than a pipe holds
	if _, err := io.WriteString(c, data); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("rank %d: %v", i, err)
		}
	}
	for i := range 2 {
		if got := outs[i].String(); got != data {
			t.Errorf("rank %d read %d bytes; want the %d sent", i, len(got), len(data))
		}
	}
	s.close()
	if _, err := os.Stat(task.StdinSock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}

// A task whose ranks end before srun attaches: close ends the server,
// with no connection and pipes nobody reads.
func TestStdinServerUnused(t *testing.T) {
	t.Chdir(t.TempDir())
	s, err := openStdin(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	s.serve()
	s.close()
	if _, err := os.Stat(task.StdinSock); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
}
