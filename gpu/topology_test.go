package gpu

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNVLinkPeers(t *testing.T) {
	bus := []string{"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0"}
	to := func(i int) link { return link{remoteBusID: bus[i]} }
	sw := func(b string, typed bool) link { return link{remoteBusID: b, toSwitch: typed} }
	tests := []struct {
		name  string
		links [][]link
		want  [][]int
	}{
		{"no nvlink", [][]link{nil, nil, nil, nil}, [][]int{nil, nil, nil, nil}},
		{"bridged pairs, reported by both ends",
			[][]link{{to(1), to(1)}, {to(0)}, {to(3)}, {to(2)}},
			[][]int{{1}, {0}, {3}, {2}}},
		{"one end reports the link", [][]link{{to(2)}, nil, nil, nil}, [][]int{{2}, nil, {0}, nil}},
		{"nvswitch by device type",
			[][]link{{sw("0000:c1:00.0", true)}, {sw("0000:c2:00.0", true)}, {sw("0000:c1:00.0", true)}, {sw("0000:c3:00.0", true)}},
			[][]int{{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}}},
		{"unknown remote is a switch; gpu without links stays out",
			[][]link{{sw("0000:c1:00.0", false)}, {sw("0000:c2:00.0", false)}, nil, {to(2)}},
			[][]int{{1}, {0}, {3}, {2}}},
		{"self link ignored", [][]link{{to(0)}, nil, nil, nil}, [][]int{nil, nil, nil, nil}},
		{"fewer link lists than devices", [][]link{{to(1)}}, [][]int{{1}, {0}, nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := nvlinkPeers(bus, tt.links)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("nvlinkPeers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeBusID(t *testing.T) {
	tests := []struct{ in, want string }{
		{"00000000:3B:00.0", "0000:3b:00.0"},
		{"0000:3b:00.0", "0000:3b:00.0"},
		{"00000001:C1:1F.7\x00\x00", "0001:c1:1f.7"},
		{"0000:3b:00.8", ""},
		{"3b:00.0", ""},
		{"00010000:3b:00.0", ""},
		{"0000:3g:00.0", ""},
		{"", ""},
		{"000000000:3b:00.0", ""},
	}
	for _, tt := range tests {
		if got := normalizeBusID(tt.in); got != tt.want {
			t.Errorf("normalizeBusID(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzNormalizeBusID(f *testing.F) {
	for _, s := range []string{"00000000:3B:00.0", "0000:3b:00.0", ":", "a:b:c.d", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := normalizeBusID(s)
		if got == "" {
			return
		}
		if again := normalizeBusID(got); again != got || len(got) != 12 {
			t.Fatalf("normalizeBusID(%q) = %q, not a fixed point (%q)", s, got, again)
		}
	})
}

func TestBusIDString(t *testing.T) {
	var b [32]uint8
	copy(b[:], "00000000:3B:00.0")
	if got := busIDString(b[:]); got != "00000000:3B:00.0" {
		t.Errorf("busIDString = %q", got)
	}
}

func TestParseNUMANode(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  bool
	}{
		{"0\n", 0, false},
		{"1", 1, false},
		{"-1\n", -1, false},
		{"-2", -1, true},
		{"", -1, true},
		{"x", -1, true},
	}
	for _, tt := range tests {
		got, err := parseNUMANode(tt.in)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("parseNUMANode(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}
