package slurm

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestLayoutGolden checks BlockCounts against how Debian's Slurm laid
// out jobs of their own on its idle 16-CPU nodes (layout_golden.txt, made
// by make_layout_golden.sh): each node can hold 16 / -c tasks, the ranks
// run in blocks in node order.
func TestLayoutGolden(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "layout_golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const nodeCPUs = 16
	cases := 0
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
		opts, _, err := ParseArgs(Srun, append(strings.Fields(args), "true"))
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		cpt := max(opts.CPUsPerTask, 1)
		if want == "refused" {
			if opts.NTasks*cpt <= opts.Nodes.Min*nodeCPUs {
				t.Errorf("%s: Slurm refused it, but %d tasks of %d CPUs fit %d nodes", args, opts.NTasks, cpt, opts.Nodes.Min)
			}
			continue
		}
		caps := slices.Repeat([]int{nodeCPUs / cpt}, opts.Nodes.Min)
		var got []string
		rank := 0
		for _, c := range BlockCounts(opts.NTasks, caps) {
			var ranks []string
			for range c {
				ranks = append(ranks, strconv.Itoa(rank))
				rank++
			}
			got = append(got, strings.Join(ranks, ","))
		}
		if g := strings.Join(got, " | "); g != want {
			t.Errorf("srun %s: %s; Slurm: %s", args, g, want)
		}
		cases++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cases < 10 {
		t.Errorf("%d cases: want the golden file's", cases)
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
