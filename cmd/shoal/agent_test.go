package main

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/agent"
	"github.com/shoal-sched/shoal/cgroup"
	"github.com/shoal-sched/shoal/topology"
)

func TestParseMemory(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"64000", 64000, false},
		{"64000M", 64000, false},
		{"512G", 512 * 1024, false},
		{"512g", 512 * 1024, false},
		{"1T", 1024 * 1024, false},
		{"2048K", 2, false},
		// As Slurm (and sbatch --mem): K rounds up to whole MiB. The
		// agent's own parser rounded down (1500K was 1 MiB, 1K was 0).
		{"1500K", 2, false},
		{"1K", 1, false},
		{"32GB", 32 * 1024, false},
		{" 80G ", 80 * 1024, false},
		{"", 0, true},
		{"G", 0, true},
		{"-5G", 0, true},
		{"1.5T", 0, true},
		{"12X", 0, true},
		{"99999999999999999T", 0, true},
	}
	for _, tc := range tests {
		got, err := parseMemory("--memory", tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseMemory(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--memory") {
			t.Errorf("parseMemory(%q) error %q does not name the flag", tc.in, err)
		}
	}
}

// FuzzParseMemory: never panics; what it accepts is within 2^53 MiB
// (slurm.ParseMemory's bound).
func FuzzParseMemory(f *testing.F) {
	for _, s := range []string{"64000", "512G", "1T", "2048K", "", "9G9", "18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseMemory("--memory", s)
		if err != nil {
			return
		}
		if v > 1<<53 {
			t.Fatalf("parseMemory(%q) = %d; over the bound", s, v)
		}
	})
}

func TestCPULayout(t *testing.T) {
	// Two sockets of two cores of two threads.
	host := []cgroup.HostCPU{{ID: 0, Package: 0, Core: 0}, {ID: 1, Package: 0, Core: 1}, {ID: 2, Package: 1, Core: 0},
		{ID: 3, Package: 1, Core: 1}, {ID: 4, Package: 0, Core: 0}, {ID: 5, Package: 0, Core: 1},
		{ID: 6, Package: 1, Core: 0}, {ID: 7, Package: 1, Core: 1}}
	for _, tc := range []struct {
		name           string
		cpus, s, c, th int
		host           []cgroup.HostCPU
		want           [4]int
	}{
		{"nothing given: the host's", 0, 0, 0, 0, host, [4]int{8, 2, 2, 2}},
		{"the host's count: its layout", 8, 0, 0, 0, host, [4]int{8, 2, 2, 2}},
		{"a simulated count: no layout", 16, 0, 0, 0, host, [4]int{16, 0, 0, 0}},
		{"sockets alone: one core of one thread each", 0, 4, 0, 0, host, [4]int{4, 4, 1, 1}},
		{"full layout, no cpus: their product", 0, 2, 8, 2, host, [4]int{32, 2, 8, 2}},
		{"full layout and cpus: kept for validation", 12, 2, 8, 2, host, [4]int{12, 2, 8, 2}},
		{"negative kept for validation", 0, -1, 2, 1, host, [4]int{-2, -1, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, s, co, th := cpuLayout(tc.cpus, tc.s, tc.c, tc.th, tc.host)
			if got := [4]int{c, s, co, th}; got != tc.want {
				t.Errorf("cpuLayout(%d, %d, %d, %d) = %v; want %v", tc.cpus, tc.s, tc.c, tc.th, got, tc.want)
			}
		})
	}
}

func TestTopologySources(t *testing.T) {
	tests := []struct {
		mode, bind, advertise string
		wantLLDP              *topology.LLDP // nil: no sources
		wantErr               bool
	}{
		{"off", "10.0.0.5", "", nil, false},
		{"auto", "10.0.0.5", "", &topology.LLDP{Addr: netip.MustParseAddr("10.0.0.5"), Socket: "/s"}, false},
		{"auto", "0.0.0.0", "10.0.0.6", &topology.LLDP{Addr: netip.MustParseAddr("10.0.0.6"), Socket: "/s"}, false},
		{"auto", "node1.example", "", &topology.LLDP{Socket: "/s"}, false},
		{"on", "10.0.0.5", "", nil, true},
	}
	for _, tt := range tests {
		cfg := agent.Config{BindAddr: tt.bind, AdvertiseAddr: tt.advertise, TopologyInterval: time.Second}
		got, err := topologySources(tt.mode, &cfg, "/s")
		if (err != nil) != tt.wantErr {
			t.Errorf("topologySources(%q, bind %q) error %v; want error %v", tt.mode, tt.bind, err, tt.wantErr)
			continue
		}
		if tt.wantLLDP == nil {
			if len(got) != 0 {
				t.Errorf("topologySources(%q) = %v; want none", tt.mode, got)
			}
			continue
		}
		var names []string
		for _, s := range got {
			names = append(names, s.Name())
		}
		// LLDP first (the leaf), then the fabric sources, in Merge's order.
		if want := []string{topology.SourceLLDP, topology.SourceIB, topology.SourceNVML}; !reflect.DeepEqual(names, want) {
			t.Errorf("topologySources(%q, bind %q) names %v; want %v", tt.mode, tt.bind, names, want)
		}
		if len(got) > 0 && !reflect.DeepEqual(got[0], *tt.wantLLDP) {
			t.Errorf("topologySources(%q, bind %q, advertise %q) LLDP = %v; want %v", tt.mode, tt.bind, tt.advertise, got[0], *tt.wantLLDP)
		}
	}
}
