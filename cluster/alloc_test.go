package cluster

import "testing"

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{3}, "3"},
		{[]int{0, 1, 2, 3}, "0-3"},
		{[]int{0, 1, 2, 3, 8, 10, 11}, "0-3,8,10-11"},
	} {
		if got := CPUList(tc.in); got != tc.want {
			t.Errorf("CPUList(%v) = %q; want %q", tc.in, got, tc.want)
		}
	}
}
