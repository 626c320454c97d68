package slurm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The peer's nodes (../shared/peers/slurm): n1 to n4, each of 16 CPUs
// and 8 GPUs.
const (
	peerCPUs = 16
	peerGPUs = 8
)

// layoutCase is one line of layout_golden.txt: `[hold HOLD ;] JOB [::
// STEP]`, a tab, and Slurm's layout: per node in node order its name,
// "=" and its ranks, nodes separated by " | " ("n1=0,1,2,3 | n2=4"), or
// "refused".
type layoutCase struct {
	hold, job, step []string
	want            string
}

func readLayoutGolden(t *testing.T) []layoutCase {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "layout_golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []layoutCase
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args, want, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("golden line %q: want ARGS<TAB>LAYOUT", line)
		}
		var c layoutCase
		c.want = want
		if rest, ok := strings.CutPrefix(args, "hold "); ok {
			hold, job, ok := strings.Cut(rest, " ; ")
			if !ok {
				t.Fatalf("golden line %q: want hold ARGS ; JOB", line)
			}
			c.hold, args = strings.Fields(hold), job
		}
		job, step, _ := strings.Cut(args, " :: ")
		c.job, c.step = strings.Fields(job), strings.Fields(step)
		cases = append(cases, c)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return cases
}

// parsedLayout is Slurm's answer: the nodes in order and their ranks.
func parsedLayout(t *testing.T, want string) (names []string, ranks [][]int) {
	t.Helper()
	for part := range strings.SplitSeq(want, " | ") {
		name, list, ok := strings.Cut(part, "=")
		if !ok {
			t.Fatalf("layout %q: want NODE=RANKS", want)
		}
		var rs []int
		for r := range strings.SplitSeq(list, ",") {
			n, err := strconv.Atoi(r)
			if err != nil {
				t.Fatalf("layout %q: %v", want, err)
			}
			rs = append(rs, n)
		}
		names, ranks = append(names, name), append(ranks, rs)
	}
	return names, ranks
}

func formatLayout(names []string, ranks [][]int) string {
	parts := make([]string, len(names))
	for i, n := range names {
		s := make([]string, len(ranks[i]))
		for l, r := range ranks[i] {
			s[l] = strconv.Itoa(r)
		}
		parts[i] = n + "=" + strings.Join(s, ",")
	}
	return strings.Join(parts, " | ")
}

func parseLayoutArgs(t *testing.T, args []string) Options {
	t.Helper()
	opts, _, err := ParseArgs(Srun, append(slices.Clone(args), "true"))
	if err != nil {
		t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return opts
}

// jobRooms is what each of the nodes Slurm chose had free for a job
// asking opts, after a holding job asking hold (nil: none).
func jobRooms(t *testing.T, names []string, opts Options, hold []string) []NodeRoom {
	t.Helper()
	held := map[string]int{}
	if hold != nil {
		h := parseLayoutArgs(t, hold)
		if len(h.NodeList) != 1 {
			t.Fatalf("hold %q: want -w NODE", hold)
		}
		held[h.NodeList[0]] = max(h.NTasks, 1) * max(h.CPUsPerTask, 1)
	}
	rooms := make([]NodeRoom, len(names))
	for i, n := range names {
		r := NodeRoom{CPUs: peerCPUs - held[n], Named: slices.Contains(opts.NodeList, n), MaxTasks: opts.NTasksPerNode}
		switch {
		case opts.GPUsPerTask > 0:
			r.MaxTasks = peerGPUs / opts.GPUsPerTask
		case opts.NTasksPerGPU > 0:
			// Slurm 22.05 spreads such a job's tasks evenly.
			r.MaxTasks = (opts.NTasks + len(names) - 1) / len(names)
		}
		rooms[i] = r
	}
	return rooms
}

// TestLayoutGolden checks Spread and Deal against how Debian's Slurm
// laid out jobs and steps on its 16-CPU, 8-GPU nodes (layout_golden.txt,
// made by make_layout_golden.sh): a job's tasks over the CPUs it was
// given on the nodes Slurm chose (free CPUs, -w first; an exclusive
// job's whole nodes), in its -m; a step's over its job's CPUs. Which nodes Slurm chose is taken from the
// golden (Shoal's placement chooses its own).
func TestLayoutGolden(t *testing.T) {
	cases := 0
	for _, c := range readLayoutGolden(t) {
		name := strings.Join(c.job, " ")
		if len(c.step) > 0 {
			name += " :: " + strings.Join(c.step, " ")
		}
		t.Run(name, func(t *testing.T) {
			cases++
			opts := parseLayoutArgs(t, c.job)
			ntasks := opts.NTasks
			if ntasks == 0 {
				ntasks = max(opts.NTasksPerNode, 1) * opts.Nodes.Min
			}
			cpt := max(opts.CPUsPerTask, 1)
			if c.want == "refused" {
				room := 0
				for range opts.Nodes.Min {
					most := peerCPUs / cpt
					if opts.GPUsPerTask > 0 {
						most = min(most, peerGPUs/opts.GPUsPerTask)
					}
					room += most
				}
				if ntasks <= room {
					t.Errorf("Slurm refused it, but %d tasks fit %d nodes (room for %d)", ntasks, opts.Nodes.Min, room)
				}
				return
			}
			names, _ := parsedLayout(t, c.want)
			caps := Spread(jobRooms(t, names, opts, c.hold), ntasks, cpt)
			if opts.Exclusive {
				// Whole nodes: the tasks over all their CPUs.
				caps = slices.Repeat([]int{peerCPUs / cpt}, len(names))
			}
			counts := DealCounts(ntasks, caps, opts.Distribution)
			var got [][]int
			if len(c.step) == 0 {
				got = Deal(ntasks, counts, opts.Distribution)
			} else {
				// The step runs on its first nodes of the job's, its
				// tasks over the job's CPUs there (its tasks' CPUs, or
				// the whole node's).
				st := parseLayoutArgs(t, c.step)
				stepCPT := max(st.CPUsPerTask, 1)
				nodes := len(names)
				if st.Nodes.Min > 0 {
					nodes = st.Nodes.Min
				}
				nodes = min(nodes, st.NTasks)
				stepCaps := make([]int, nodes)
				for i := range stepCaps {
					jobCPUs := counts[i] * cpt
					if opts.Exclusive {
						jobCPUs = peerCPUs
					}
					stepCaps[i] = jobCPUs / stepCPT
				}
				got = Deal(st.NTasks, stepCaps, st.Distribution)
			}
			if g := formatLayout(names[:len(got)], got); g != c.want {
				t.Errorf("Shoal: %s\nSlurm: %s (free %v, caps %v)", g, c.want, jobRooms(t, names, opts, c.hold), caps)
			}
		})
	}
	if cases < 70 {
		t.Errorf("%d cases: want the golden file's", cases)
	}
}

func TestSpread(t *testing.T) {
	idle := func(n int) []NodeRoom { return slices.Repeat([]NodeRoom{{CPUs: 16}}, n) }
	for _, tc := range []struct {
		name   string
		nodes  []NodeRoom
		n, cpt int
		want   []int
	}{
		{"idle", idle(2), 5, 1, []int{4, 1}},
		{"idle, room for all", idle(2), 20, 1, []int{16, 4}},
		{"idle 3", idle(3), 7, 1, []int{5, 1, 1}},
		{"-c4, whole tasks", idle(2), 3, 4, []int{2, 1}},
		{"-c4, at least one task", idle(3), 5, 4, []int{4, 1, 1}},
		{"-c3", idle(2), 9, 3, []int{5, 4}},
		{"busy first", []NodeRoom{{CPUs: 2}, {CPUs: 16}}, 5, 1, []int{2, 3}},
		{"named first", []NodeRoom{{CPUs: 16}, {CPUs: 16, Named: true}}, 5, 1, []int{1, 4}},
		{"gpus bound", []NodeRoom{{CPUs: 16, MaxTasks: 8}, {CPUs: 16, MaxTasks: 8}}, 12, 1, []int{8, 4}},
		{"no tasks", idle(2), 0, 1, []int{1, 1}},
		{"no nodes", nil, 3, 1, nil},
	} {
		if got := Spread(tc.nodes, tc.n, tc.cpt); !slices.Equal(got, tc.want) {
			t.Errorf("%s: Spread(%v, %d, %d) = %v; want %v", tc.name, tc.nodes, tc.n, tc.cpt, got, tc.want)
		}
	}
}

func TestDeal(t *testing.T) {
	plane := func(n int) Distribution { return Distribution{Kind: DistPlane, Plane: n} }
	cyclic := Distribution{Kind: DistCyclic}
	for _, tc := range []struct {
		n    int
		caps []int
		d    Distribution
		want string
	}{
		{5, []int{4, 1}, Distribution{}, "[[0 1 2 3] [4]]"},
		{5, []int{4, 4}, Distribution{}, "[[0 1 2] [3 4]]"},
		{5, []int{4, 1}, cyclic, "[[0 2 3 4] [1]]"},
		{5, []int{4, 4}, cyclic, "[[0 2 4] [1 3]]"},
		{5, []int{4, 1}, plane(2), "[[0 1 3 4] [2]]"},
		{5, []int{8, 8}, plane(4), "[[0 1 2 3] [4]]"},
		{11, []int{8, 8}, plane(3), "[[0 1 2 6 7 8] [3 4 5 9 10]]"},
		{5, []int{4, 1, 1}, Distribution{}, "[[0 1 2] [3] [4]]"},
		{7, []int{2, 2}, Distribution{}, "[[0 1 2 3] [4 5 6]]"}, // oversubscribed: round robin
		{7, []int{2, 2}, cyclic, "[[0 2 4 6] [1 3 5]]"},
		{6, []int{1, 1}, plane(2), "[[0 2 3] [1 4 5]]"},
		{3, []int{0, 0}, Distribution{}, "[[0 1] [2]]"},
		{0, []int{2}, Distribution{}, "[[]]"},
		{2, nil, Distribution{}, "[]"},
		{-1, []int{2}, Distribution{}, "[]"},
	} {
		if got := fmt.Sprint(Deal(tc.n, tc.caps, tc.d)); got != tc.want {
			t.Errorf("Deal(%d, %v, %v) = %s; want %s", tc.n, tc.caps, tc.d, got, tc.want)
		}
	}
	// With room for every task, Deal is Layout.
	for _, d := range []Distribution{{}, cyclic, plane(2), plane(3)} {
		for nodes := 1; nodes <= 4; nodes++ {
			for n := 0; n <= 13; n++ {
				if got, want := Deal(n, slices.Repeat([]int{n}, nodes), d), Layout(n, nodes, d); fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("Deal(%d, room for all on %d, %v) = %v; Layout: %v", n, nodes, d, got, want)
				}
			}
		}
	}
}

func TestBlockCounts(t *testing.T) {
	for _, tc := range []struct {
		n    int
		caps []int
		want []int
	}{
		{5, []int{16, 16}, []int{4, 1}},
		{5, []int{3, 3}, []int{3, 2}},
		{7, []int{3, 3, 3}, []int{3, 3, 1}},
		{2, []int{4, 4, 4}, []int{1, 1, 0}},
		{5, []int{0, 4}, []int{1, 4}},       // a node that holds none still gets pass 3's
		{10, []int{2, 2}, []int{5, 5}},      // oversubscribed: round robin
		{9, []int{2, 1, 1}, []int{4, 3, 2}}, // the rest round robin
		{0, []int{2, 2}, []int{0, 0}},
		{3, nil, nil},
		{-1, []int{1}, nil},
	} {
		if got := BlockCounts(tc.n, tc.caps); !slices.Equal(got, tc.want) {
			t.Errorf("BlockCounts(%d, %v) = %v; want %v", tc.n, tc.caps, got, tc.want)
		}
	}
}
