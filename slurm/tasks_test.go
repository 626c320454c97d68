package slurm

import (
	"reflect"
	"testing"
)

// TestLayout checks Layout against Debian's Slurm 22.05 (the peer): srun
// -n N -m DIST in an exclusive allocation of 2 or 3 idle nodes, printing
// SLURM_PROCID, SLURM_NODEID and SLURM_DISTRIBUTION.
func TestLayout(t *testing.T) {
	tests := []struct {
		dist         string
		ntasks, nods int
		want         [][]int
		name         string // SLURM_DISTRIBUTION
	}{
		{"", 5, 2, [][]int{{0, 1, 2}, {3, 4}}, "block"},
		{"block", 5, 2, [][]int{{0, 1, 2}, {3, 4}}, "block"},
		{"cyclic", 5, 2, [][]int{{0, 2, 4}, {1, 3}}, "cyclic"},
		{"plane=2", 5, 2, [][]int{{0, 1, 4}, {2, 3}}, "plane"},
		{"cyclic:fcyclic", 5, 2, [][]int{{0, 2, 4}, {1, 3}}, "cyclic:fcyclic"},
		{"block:block", 5, 2, [][]int{{0, 1, 2}, {3, 4}}, "block:block"},
		{"block", 7, 3, [][]int{{0, 1, 2}, {3, 4}, {5, 6}}, "block"},
		{"cyclic", 7, 3, [][]int{{0, 3, 6}, {1, 4}, {2, 5}}, "cyclic"},
		{"plane=2", 7, 3, [][]int{{0, 1, 6}, {2, 3}, {4, 5}}, "plane"},
		{"plane=3", 7, 3, [][]int{{0, 1, 2}, {3, 4, 5}, {6}}, "plane"},
		{"*:cyclic", 7, 3, [][]int{{0, 1, 2}, {3, 4}, {5, 6}}, "block:cyclic"},
		{"plane=3", 4, 2, [][]int{{0, 1, 2}, {3}}, "plane"},
		// No more tasks than nodes: Slurm's default is cyclic.
		{"", 2, 2, [][]int{{0}, {1}}, "cyclic"},
		{"", 1, 1, [][]int{{0}}, "cyclic"},
		{"", 4, 2, [][]int{{0, 1}, {2, 3}}, "block"},
	}
	for _, tt := range tests {
		d, err := ParseDistribution(tt.dist)
		if tt.dist == "" {
			d, err = Distribution{}, nil
		}
		if err != nil {
			t.Errorf("ParseDistribution(%q): %v", tt.dist, err)
			continue
		}
		if got := Layout(tt.ntasks, tt.nods, d); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Layout(%d, %d, %q) = %v; Slurm: %v", tt.ntasks, tt.nods, tt.dist, got, tt.want)
		}
		if got := d.Name(tt.ntasks, tt.nods); got != tt.name {
			t.Errorf("%q: SLURM_DISTRIBUTION = %q; Slurm: %q", tt.dist, got, tt.name)
		}
		if back, err := ParseDistribution(d.String()); d.String() != "" && (err != nil || back != d) {
			t.Errorf("%q: String %q reads back as %+v, %v", tt.dist, d.String(), back, err)
		}
	}
	if got := LayoutCounts(5, 2, Distribution{}); !reflect.DeepEqual(got, []int{3, 2}) {
		t.Errorf("LayoutCounts(5, 2) = %v; want [3 2]", got)
	}
	if Layout(3, 0, Distribution{}) != nil {
		t.Errorf("Layout on no nodes: want nil")
	}
}

// TestParseDistributionRefuses names the bad part.
func TestParseDistributionRefuses(t *testing.T) {
	for _, v := range []string{"arbitrary", "plane=0", "plane=x", "diagonal", "block:spiral", "block:block:block:block", "block,Pack", "cyclic,NoPack"} {
		if _, err := ParseDistribution(v); err == nil {
			t.Errorf("ParseDistribution(%q) accepted", v)
		}
	}
}

func FuzzParseDistribution(f *testing.F) {
	for _, s := range []string{"block", "cyclic:fcyclic", "plane=4", "*:*:*", "arbitrary"} {
		f.Add(s, 7, 3)
	}
	f.Fuzz(func(t *testing.T, v string, ntasks, nodes int) {
		d, err := ParseDistribution(v)
		if err != nil || ntasks < 0 || ntasks > 1000 || nodes < 1 || nodes > 100 {
			return
		}
		// Every rank runs exactly once, each node's in increasing order,
		// and LayoutCounts agrees.
		seen := make([]bool, ntasks)
		counts := LayoutCounts(ntasks, nodes, d)
		for n, ranks := range Layout(ntasks, nodes, d) {
			if len(ranks) != counts[n] {
				t.Fatalf("Layout(%d, %d, %q): node %d runs %d, LayoutCounts says %d", ntasks, nodes, v, n, len(ranks), counts[n])
			}
			for i, r := range ranks {
				if r < 0 || r >= ntasks || seen[r] || i > 0 && r <= ranks[i-1] {
					t.Fatalf("Layout(%d, %d, %q): node %d ranks %v", ntasks, nodes, v, n, ranks)
				}
				seen[r] = true
			}
		}
		for r, ok := range seen {
			if !ok {
				t.Fatalf("Layout(%d, %d, %q) runs no rank %d", ntasks, nodes, v, r)
			}
		}
	})
}
