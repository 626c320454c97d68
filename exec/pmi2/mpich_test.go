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

// buildLibPMI2 builds testdata/pmi2client.c against Slurm's libpmi2, a
// client of PMI-2's wire protocol (MPICH's simple PMI-2 client); without
// Debian's libpmi2-0-dev (.ci/run installs it) the test fails.
func buildLibPMI2(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/include/slurm/pmi2.h"); err != nil {
		t.Fatalf("needs Slurm's libpmi2 (Debian's libpmi2-0-dev; .ci/run installs it): %v", err)
	}
	src, err := filepath.Abs(filepath.Join("testdata", "pmi2client.c"))
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "pmi2client")
	if out, err := osexec.Command("gcc", "-o", prog, src, "-lpmi2").CombinedOutput(); err != nil {
		t.Fatalf("gcc -lpmi2: %v\n%s", err, out)
	}
	return prog
}

// layouts are the steps TestMPICH and TestLibPMI2 run: node i runs the
// global ranks ranks[i].
var layouts = []struct {
	name  string
	ranks [][]int
}{
	{"one node", [][]int{{0, 1}}},
	{"two nodes", [][]int{{0, 1}, {2, 3}}},
	{"two nodes cyclic", [][]int{{0, 2}, {1}}},
	{"three nodes uneven", [][]int{{0, 1}, {2, 3}, {4}}},
}

// TestMPICH runs a real MPICH program (Debian's, whose library speaks
// PMI-1 over PMI_FD) as the ranks of one step: on one node, and on
// several nodes whose servers fence through package pmix's coordinator
// and members over a Unix socket, as the supervisors do through the
// agents. Each rank checks its rank and size, that MPI's ranks on its
// node (from PMI_process_mapping) are those on its node, all-reduces and
// says so.
func TestMPICH(t *testing.T) {
	prog := buildMPICH(t)
	for _, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			runStep(t, tc.ranks, func(size int, _ string) []string { return []string{prog, fmt.Sprint(size)} })
		})
	}
}

// TestLibPMI2 runs a client of PMI-2's wire protocol (Slurm's libpmi2)
// as the ranks of one step, on the layouts of TestMPICH: init, the job
// id, the process mapping, a node attribute waited for, puts with ';',
// two fences, every rank's value got, finalize.
func TestLibPMI2(t *testing.T) {
	prog := buildLibPMI2(t)
	for _, tc := range layouts {
		t.Run(tc.name, func(t *testing.T) {
			runStep(t, tc.ranks, func(size int, mapping string) []string { return []string{prog, fmt.Sprint(size), mapping} })
		})
	}
}

// runStep runs argv(size, mapping) as every rank of the step whose node
// i runs ranks[i], each node with its own server, and checks that every
// rank printed its line and exited 0.
func runStep(t *testing.T, ranks [][]int, argv func(size int, mapping string) []string) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	size := 0
	for _, rs := range ranks {
		size += len(rs)
	}
	sock := filepath.Join(t.TempDir(), "pmix.sock")
	var fencers []pmix.Fencer
	if len(ranks) == 1 {
		f, err := pmix.NewFencer(testJob(t, 0, ranks...).Job, nil, log)
		if err != nil {
			t.Fatal(err)
		}
		fencers = append(fencers, f)
	} else {
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		fencers = append(fencers, pmix.NewCoordinator("shoal.7.1.0", len(ranks), ln, log))
		for n := 1; n < len(ranks); n++ {
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
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	for n := range ranks {
		job := testJob(t, n, ranks...)
		s, err := Start(Config{Job: job, Fencer: fencers[n], Log: log,
			OnFail: func(err error) { mu.Lock(); fails = append(fails, err); mu.Unlock() }})
		if err != nil {
			t.Fatal(err)
		}
		servers = append(servers, s)
		for local, rank := range ranks[n] {
			args := argv(size, job.Mapping)
			cmd := osexec.Command(args[0], args[1:]...)
			cmd.Env = append(os.Environ(), s.Env(local, 3)...)
			cmd.Env = append(cmd.Env, fmt.Sprintf("SLURM_PROCID=%d", rank), fmt.Sprintf("SLURM_LOCALID=%d", local), fmt.Sprintf("TEST_NODE=n%d", n+1))
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
	mu.Lock()
	defer mu.Unlock()
	var lines, want []string
	for l := range strings.Lines(out.String()) {
		if strings.HasPrefix(l, "rank ") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	slices.Sort(lines)
	for n, rs := range ranks {
		for _, r := range rs {
			want = append(want, fmt.Sprintf("rank %d of %d on n%d sum %d", r, size, n+1, size*(size+1)/2))
		}
	}
	slices.Sort(want)
	if !slices.Equal(lines, want) || len(fails) > 0 {
		t.Errorf("ranks said %q, want %q; failures %v\n%s", lines, want, fails, out.String())
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
