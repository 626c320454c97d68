package pmi2

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/exec/pmix"
)

// buildMPICH builds testdata/allreduce.c with MPICH's mpicc; without
// Debian's mpich and libmpich-dev (.ci/run installs them) the test
// fails.
func buildMPICH(t *testing.T) string {
	t.Helper()
	mpicc, err := osexec.LookPath("mpicc.mpich")
	if err != nil {
		t.Fatalf("needs MPICH's mpicc.mpich (Debian's mpich and libmpich-dev; .ci/run installs them): %v", err)
	}
	src, err := filepath.Abs(filepath.Join("testdata", "allreduce.c"))
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "allreduce")
	if out, err := osexec.Command(mpicc, "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("mpicc.mpich: %v\n%s", err, out)
	}
	return prog
}

// testJob is the step of ranks[i] on node i, seen from node self.
func testJob(t *testing.T, self int, ranks ...[]int) Job {
	t.Helper()
	j := pmix.Job{Nspace: "shoal.7.1.0", ID: "7.0", Node: self, Ranks: ranks}
	for i, rs := range ranks {
		j.Nodes = append(j.Nodes, fmt.Sprintf("n%d", i+1))
		j.Size += len(rs)
	}
	m, err := ProcessMapping(ranks)
	if err != nil {
		t.Fatal(err)
	}
	return Job{Job: j, Mapping: m}
}

// TestMPICH runs a real MPICH program (Debian's, whose library speaks
// PMI-1 over PMI_FD) as the ranks of one step: on one node, and on two
// nodes whose servers fence through package pmix's coordinator and
// member over a Unix socket, as the supervisors do through the agents.
// Each rank checks its rank and size, that MPI's ranks on its node (from
// PMI_process_mapping) are those on its node, all-reduces and says so.
func TestMPICH(t *testing.T) {
	prog := buildMPICH(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name  string
		ranks [][]int
	}{
		{"one node", [][]int{{0, 1}}},
		{"two nodes", [][]int{{0, 1}, {2, 3}}},
		{"two nodes cyclic", [][]int{{0, 2}, {1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size := 0
			for _, rs := range tc.ranks {
				size += len(rs)
			}
			sock := filepath.Join(t.TempDir(), "pmix.sock")
			var fencers []pmix.Fencer
			if len(tc.ranks) == 1 {
				f, err := pmix.NewFencer(testJob(t, 0, tc.ranks...).Job, nil, log)
				if err != nil {
					t.Fatal(err)
				}
				fencers = append(fencers, f)
			} else {
				ln, err := net.Listen("unix", sock)
				if err != nil {
					t.Fatal(err)
				}
				fencers = append(fencers, pmix.NewCoordinator("shoal.7.1.0", len(tc.ranks), ln, log))
				for n := 1; n < len(tc.ranks); n++ {
					fencers = append(fencers, pmix.NewMember("shoal.7.1.0", n, func(ctx context.Context) (io.ReadWriteCloser, error) {
						var d net.Dialer
						return d.DialContext(ctx, "unix", sock)
					}, log))
				}
			}
			var mu sync.Mutex
			var fails []error
			var out bytes.Buffer
			var cmds []*osexec.Cmd
			var servers []*Server
			for n := range tc.ranks {
				s, err := Start(Config{Job: testJob(t, n, tc.ranks...), Fencer: fencers[n], Log: log,
					OnFail: func(err error) { mu.Lock(); fails = append(fails, err); mu.Unlock() }})
				if err != nil {
					t.Fatal(err)
				}
				servers = append(servers, s)
				for local, rank := range tc.ranks[n] {
					cmd := osexec.Command(prog, fmt.Sprint(size))
					cmd.Env = append(os.Environ(), s.Env(local, 3)...)
					cmd.Env = append(cmd.Env, fmt.Sprintf("SLURM_PROCID=%d", rank), fmt.Sprintf("TEST_NODE=n%d", n+1))
					cmd.ExtraFiles = []*os.File{s.File(local)}
					cmd.Stdout, cmd.Stderr = &lockedWriter{mu: &mu, w: &out}, &lockedWriter{mu: &mu, w: &out}
					if err := cmd.Start(); err != nil {
						t.Fatal(err)
					}
					s.Started(local)
					cmds = append(cmds, cmd)
				}
			}
			waited := make(chan error, len(cmds))
			for _, c := range cmds {
				go func() { waited <- c.Wait() }()
			}
			timeout := time.After(2 * time.Minute) // a bound on a hang, not a measure
			for range cmds {
				select {
				case err := <-waited:
					if err != nil {
						t.Errorf("rank: %v", err)
					}
				case <-timeout:
					for _, c := range cmds {
						c.Process.Kill()
					}
					t.Fatalf("ranks hung\n%s", out.String())
				}
			}
			for _, s := range servers {
				s.Close()
			}
			var lines []string
			for l := range strings.Lines(out.String()) {
				if strings.HasPrefix(l, "rank ") {
					lines = append(lines, strings.Fields(l)[1])
				}
			}
			slices.Sort(lines)
			var want []string
			for r := range size {
				want = append(want, fmt.Sprint(r))
			}
			slices.Sort(want)
			if !slices.Equal(lines, want) || len(fails) > 0 {
				t.Errorf("ranks %q said, want %q; failures %v\n%s", lines, want, fails, out.String())
			}
		})
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
