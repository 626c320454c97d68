package slurm

import (
	"slices"
	"strings"
	"testing"
)

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{"n[1-3,7]", []string{"n1", "n2", "n3", "n7"}},
		{"gpu-a[1-2]-b[3-4]", []string{"gpu-a1-b3", "gpu-a1-b4", "gpu-a2-b3", "gpu-a2-b4"}},
		{"node[01-04]", []string{"node01", "node02", "node03", "node04"}},
		{"a1,b[2-3]", []string{"a1", "b2", "b3"}},
		{"n[098-102]", []string{"n098", "n099", "n100", "n101", "n102"}},
		{"n]1", []string{"n]1"}},
		{"n[1-2]\tm1\nx", []string{"n1", "n2", "m1", "x"}},
		{"n[7]", []string{"n7"}},
		{"[1-2]", []string{"1", "2"}},
		{"n[18446744073709551615]", []string{"n18446744073709551615"}},
		{"", nil},
		{" , ,", nil},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			got, err := ExpandHostlist(tt.expr)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ExpandHostlist(%q) = %q, %v; want %q, nil", tt.expr, got, err, tt.want)
			}
		})
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	tests := []struct {
		expr string
		want string // a part of the error that names the bad part
	}{
		{"n[3-1]", `range "3-1": low bound above high bound`},
		{"n[1-8:2]", `range "1-8:2": not a number`},
		{"n[a-c]", `range "a-c": not a number`},
		{"n[]", `range "": missing number`},
		{"n[1,]", `range "": missing number`},
		{"n[1-]", `range "1-": missing number`},
		{"n[1--2]", `range "1--2": not a number`},
		{"n[1-2", `"n[1-2": unclosed or nested '['`},
		{"n[[1-2]]", `unclosed or nested '['`},
		{"n[1- 3]", `range "1- 3": whitespace inside brackets`},
		{"n[1-2]]", `"n[1-2]]": ']' without '['`},
		{"n[1-3]b", `text "b" after the last ']'`},
		{"n[1-3].cluster", `text ".cluster" after the last ']'`},
		{"n[1-65537]", "more than 65536 hosts"},
		{"n[99999999999999999999]", "not a number"},
		{"a[1-1024]b[1-1024]c[1-2]", "more than 1048576 names"},
		{"n[1-65536],m[1-65536],o[1-65536],p[1-65536],q[1-65536],r[1-65536],s[1-65536],t[1-65536],u[1-65536],v[1-65536],w[1-65536],x[1-65536],y[1-65536],z[1-65536],a[1-65536],b[1-65536],c[1-1]", "more than 1048576 names"},
		{strings.Repeat("x", 2000) + "[1-65536]", "bytes in all"},
	}
	for _, tt := range tests {
		t.Run(clip(tt.expr), func(t *testing.T) {
			got, err := ExpandHostlist(tt.expr)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ExpandHostlist(%q) = %d names, %v; want error containing %q", clip(tt.expr), len(got), err, tt.want)
			}
		})
	}
}

func TestCompressHostlist(t *testing.T) {
	tests := []struct {
		names []string
		want  string
	}{
		{[]string{"n1", "n2", "n3"}, "n[1-3]"},
		{[]string{"n1", "n3", "n2"}, "n[1,3,2]"},
		{[]string{"n8", "n9", "n10", "n11"}, "n[8-11]"},
		{[]string{"n09", "n10"}, "n[09-10]"},
		{[]string{"n99", "n100"}, "n[99-100]"},
		{[]string{"n1", "n02"}, "n[1,02]"},
		{[]string{"n1", "n1"}, "n[1,1]"},
		{[]string{"a", "a1", "a2"}, "a,a[1-2]"},
		{[]string{"n1", "m1", "n2"}, "n1,m1,n2"},
		{[]string{"x", "y"}, "x,y"},
		{[]string{"n18446744073709551615", "n0"}, "n[18446744073709551615,0]"},
		{[]string{"n99999999999999999999"}, "n99999999999999999999"},
		{nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := CompressHostlist(tt.names); got != tt.want {
				t.Errorf("CompressHostlist(%q) = %q; want %q", tt.names, got, tt.want)
			}
		})
	}
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{
		"n1", "n[1-4]", "n[1,3,5-7]", "n[10-12,1-3]", "n[001-010]", "n[01-3]", "n[1-03]",
		"n01,n1", "n[0-2],n[00-02]", "a[1-2]b[3-4]c[5-6]", "gpu-a[1-2]-b[3-4]", "10.0.0.[1-3]",
		"n[1-3]b", "n[1-8:2]", "n1,,n2", "n[1-2] n[5-6]", "n[1-", "n[3-1]", "n[[1-2]]",
		"n[4294967295]", "[1-3]", "", "n[8-12]", "n[99-100]",
		"n][1-2]", "n[1-3],n[2-4]", "n3,n1,n2,n1", "n[1-2][3-4]",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		names, err := ExpandHostlist(expr)
		if err != nil {
			return
		}
		if len(names) <= 1000 {
			// hostlistsorted keeps the names, sorted.
			sorted, err := ExpandHostlist(SortedHostlist(names))
			if err != nil || len(sorted) != len(names) {
				t.Fatalf("ExpandHostlist(SortedHostlist(ExpandHostlist(%q))) = %d names, %v; want %d", expr, len(sorted), err, len(names))
			}
		}
		c := CompressHostlist(names)
		again, err := ExpandHostlist(c)
		if err != nil {
			t.Fatalf("ExpandHostlist(CompressHostlist(ExpandHostlist(%q))) = ExpandHostlist(%q): error %v", expr, c, err)
		}
		if !slices.Equal(again, names) {
			t.Fatalf("ExpandHostlist(%q) = %q; want %q (CompressHostlist gave %q)", c, again, names, c)
		}
	})
}

func TestTasksPerNode(t *testing.T) {
	tests := []struct {
		counts []int
		want   string
	}{
		{[]int{2, 2}, "2(x2)"},
		{[]int{2, 1}, "2,1"},
		{[]int{3, 1}, "3,1"},
		{[]int{1}, "1"},
		{[]int{3, 3, 1, 1, 1, 2}, "3(x2),1(x3),2"},
		{[]int{1, 2, 1}, "1,2,1"},
		{nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := TasksPerNode(tt.counts); got != tt.want {
				t.Errorf("TasksPerNode(%v) = %q; want %q", tt.counts, got, tt.want)
			}
		})
	}
}

func TestCompareNodeNames(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"n2", "n10", -1},
		{"n10", "n2", 1},
		{"n2", "n2", 0},
		{"n01", "n1", -1}, // same number: as strings
		{"gpu1", "n1", -1},
		{"n", "n1", -1},
		{"a9b", "a10b", 1}, // the number must be trailing
		{"n99999999999999999999999", "n2", 1},
	}
	for _, tc := range tests {
		if got := CompareNodeNames(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareNodeNames(%q, %q) = %d; want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestUniqueHosts(t *testing.T) {
	for _, tt := range []struct{ in, want []string }{
		{nil, []string{}},
		{[]string{"n1"}, []string{"n1"}},
		{[]string{"n2", "n1", "n2", "n3", "n1"}, []string{"n2", "n1", "n3"}},
	} {
		if got := UniqueHosts(slices.Clone(tt.in)); !slices.Equal(got, tt.want) {
			t.Errorf("UniqueHosts(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
