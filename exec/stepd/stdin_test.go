package stepd

import (
	"io"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/exec/task"
)

// openStdinHere opens a stdin server in a fresh task directory, made the
// cwd (the sockets are bound there); it returns the directory.
func openStdinHere(t *testing.T) (string, *stdinServer) {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	s, err := openStdin(slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return dir, s
}

// startRank starts argv as a rank reading one of s's pipes; what it
// writes is gathered in the builder.
func startRank(t *testing.T, s *stdinServer, argv ...string) (*osexec.Cmd, *strings.Builder) {
	t.Helper()
	r, err := s.pipe()
	if err != nil {
		t.Fatal(err)
	}
	out := new(strings.Builder)
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout = r, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	return cmd, out
}

// Ranks that read srun's stdin get what one raw client of stdin.sock
// (an agent of the previous protocol) sends, each its own copy, and its
// end as their EOF; a rank that does not read does not stop the others,
// and the sockets go with close.
func TestStdinServer(t *testing.T) {
	dir, s := openStdinHere(t)
	var cmds []*osexec.Cmd
	var outs []*strings.Builder
	for _, script := range []string{"cat", "cat", "exec 0<&-; sleep 0.1"} {
		cmd, out := startRank(t, s, "sh", "-c", script)
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	s.serve()
	if fi, err := os.Stat(task.StdinSock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v; want mode 0600", err)
	}
	c, err := task.DialStdin(dir, false)
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
	for _, name := range []string{task.StdinSock, task.StdinResumeSock} {
		if _, err := os.Stat(name); !os.IsNotExist(err) {
			t.Errorf("socket %s left behind: %v", name, err)
		}
	}
}

// A resumable connection that breaks, mid-frame too, leaves the ranks'
// input open: the next one is told how much was delivered, sends from
// there, and its end frame is the ranks' EOF (StdinDone comes back,
// and to a connection after it).
func TestStdinServerResume(t *testing.T) {
	dir, s := openStdinHere(t)
	var cmds []*osexec.Cmd
	var outs []*strings.Builder
	for range 2 {
		cmd, out := startRank(t, s, "cat")
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	s.serve()
	data := []byte(strings.Repeat("0123456789abcdef", 64<<10)) // 1 MiB
	dial := func() net.Conn {
		t.Helper()
		c, err := task.DialStdin(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // bounds the test
		return c
	}
	// Acknowledgements are read as they come, as srun does.
	counts := func(c net.Conn) (first uint64, last chan uint64) {
		t.Helper()
		first, err := task.ReadStdinCount(c)
		if err != nil {
			t.Fatal(err)
		}
		last = make(chan uint64, 1)
		go func() {
			var v uint64
			for {
				n, err := task.ReadStdinCount(c)
				if err != nil {
					last <- v
					return
				}
				v = n
			}
		}()
		return first, last
	}
	// Three whole frames and half of a fourth, then the connection breaks.
	c := dial()
	if from, _ := counts(c); from != 0 {
		t.Fatalf("first connection told %d; want 0", from)
	}
	frames := task.AppendStdinData(nil, data[:3*task.MaxStdinData+100])
	if _, err := c.Write(frames[:len(frames)-50]); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// The next one resumes where the whole frames ended.
	c = dial()
	from, last := counts(c)
	if from != 3*task.MaxStdinData {
		t.Fatalf("second connection told %d; want %d (three whole frames)", from, 3*task.MaxStdinData)
	}
	if _, err := c.Write(task.AppendStdinEnd(task.AppendStdinData(nil, data[from:]))); err != nil {
		t.Fatal(err)
	}
	if v := <-last; v != task.StdinDone {
		t.Errorf("last count %d; want StdinDone", v)
	}
	c.Close()
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("rank %d: %v", i, err)
		}
		if got := outs[i].String(); got != string(data) {
			t.Errorf("rank %d read %d bytes; want the %d sent, once", i, len(got), len(data))
		}
	}
	// After the end, a connection is told so.
	c = dial()
	if from, _ := counts(c); from != task.StdinDone {
		t.Errorf("connection after the end told %d; want StdinDone", from)
	}
	c.Close()
	s.close()
}

// A resumable connection that breaks and is not made again within the
// wait ends the ranks' input (srun gone).
func TestStdinServerResumeExpires(t *testing.T) {
	dir, s := openStdinHere(t)
	s.resumeWait = 100 * time.Millisecond
	cmd, out := startRank(t, s, "cat")
	s.serve()
	c, err := task.DialStdin(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := task.ReadStdinCount(c); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(task.AppendStdinData(nil, []byte("partial\n"))); err != nil {
		t.Fatal(err)
	}
	c.Close()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil || out.String() != "partial\n" {
			t.Errorf("rank: %v, read %q; want partial and its EOF", err, out.String())
		}
	case <-time.After(time.Minute): // bounds the test
		cmd.Process.Kill()
		t.Error("the rank's input never ended")
	}
	s.close()
}

// A task whose ranks end before srun attaches: close ends the server,
// with no connection and pipes nobody reads.
func TestStdinServerUnused(t *testing.T) {
	_, s := openStdinHere(t)
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

// Ranks that end while a resumable connection is served: close tells the
// client StdinDone, so srun stops sending to this node.
func TestStdinServerRanksGone(t *testing.T) {
	dir, s := openStdinHere(t)
	r, err := s.pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // a rank that never reads, and is gone
	s.serve()
	c, err := task.DialStdin(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second)) // bounds the test
	if from, err := task.ReadStdinCount(c); err != nil || from != 0 {
		t.Fatalf("first count %d, %v; want 0", from, err)
	}
	s.close()
	if v, err := task.ReadStdinCount(c); err != nil || v != task.StdinDone {
		t.Errorf("after the ranks' end: count %d, %v; want StdinDone", v, err)
	}
}
