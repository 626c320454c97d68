package topology

import (
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

func TestMerge(t *testing.T) {
	lldp := Found{Source: SourceLLDP, Leaf: "leafA"}
	ib := Found{Source: SourceIB, Leaf: "ib-leaf3", Parent: "ib-spine1"}
	nvml := Found{Source: SourceNVML, Block: "nvl72-a"}
	tests := []struct {
		name     string
		operator cluster.Topology
		found    []Found
		want     cluster.Topology
		origins  Origins
	}{
		{"nothing", cluster.Topology{}, nil, cluster.Topology{}, Origins{}},
		{"nothing found", cluster.Topology{}, []Found{{Source: SourceLLDP}, {Source: SourceIB}}, cluster.Topology{}, Origins{}},
		{"operator only", cluster.Topology{Switch: "s1", SwitchParent: "p1", Block: "b1"}, nil,
			cluster.Topology{Switch: "s1", SwitchParent: "p1", Block: "b1"},
			Origins{SourceOperator, SourceOperator, SourceOperator}},
		{"lldp leaf", cluster.Topology{}, []Found{lldp},
			cluster.Topology{Switch: "leafA"}, Origins{Switch: SourceLLDP}},
		{"all sources, first leaf wins", cluster.Topology{}, []Found{lldp, ib, nvml},
			cluster.Topology{Switch: "leafA", SwitchParent: "ib-spine1", Block: "nvl72-a"},
			Origins{SourceLLDP, SourceIB, SourceNVML}},
		{"source order decides", cluster.Topology{}, []Found{ib, lldp},
			cluster.Topology{Switch: "ib-leaf3", SwitchParent: "ib-spine1"},
			Origins{Switch: SourceIB, SwitchParent: SourceIB}},
		{"operator switch wins over lldp", cluster.Topology{Switch: "rack7"}, []Found{lldp, nvml},
			cluster.Topology{Switch: "rack7", Block: "nvl72-a"},
			Origins{Switch: SourceOperator, Block: SourceNVML}},
		{"operator parent only (an Ethernet spine)", cluster.Topology{SwitchParent: "spine1"}, []Found{lldp},
			cluster.Topology{Switch: "leafA", SwitchParent: "spine1"},
			Origins{Switch: SourceLLDP, SwitchParent: SourceOperator}},
		{"operator block wins", cluster.Topology{Block: "b9"}, []Found{nvml, ib},
			cluster.Topology{Switch: "ib-leaf3", SwitchParent: "ib-spine1", Block: "b9"},
			Origins{SourceIB, SourceIB, SourceOperator}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, origins := Merge(tt.operator, tt.found)
			if got != tt.want || origins != tt.origins {
				t.Errorf("Merge(%+v, %+v) = %+v, %+v; want %+v, %+v", tt.operator, tt.found, got, origins, tt.want, tt.origins)
			}
		})
	}
}

func TestChecked(t *testing.T) {
	tests := []struct {
		in      Found
		want    Found
		wantErr bool
	}{
		{Found{Source: SourceLLDP}, Found{Source: SourceLLDP}, false},
		{Found{Source: SourceLLDP, Leaf: "leaf-07.pod2"}, Found{Source: SourceLLDP, Leaf: "leaf-07.pod2"}, false},
		{Found{Source: SourceLLDP, Leaf: "0c:42:a1:00:12:01"}, Found{Source: SourceLLDP, Leaf: "0c:42:a1:00:12:01"}, false},
		{Found{Source: SourceLLDP, Leaf: "my switch"}, Found{Source: SourceLLDP}, true},
		{Found{Source: SourceIB, Leaf: "l1", Parent: "s[1-2]"}, Found{Source: SourceIB, Leaf: "l1"}, true},
		{Found{Source: SourceNVML, Block: "b=1"}, Found{Source: SourceNVML}, true},
		{Found{Source: SourceLLDP, Leaf: strings.Repeat("x", MaxNameLen)}, Found{Source: SourceLLDP, Leaf: strings.Repeat("x", MaxNameLen)}, false},
		{Found{Source: SourceLLDP, Leaf: strings.Repeat("x", MaxNameLen+1)}, Found{Source: SourceLLDP}, true},
		{Found{Source: SourceLLDP, Leaf: "sw\x00"}, Found{Source: SourceLLDP}, true},
		{Found{Source: SourceLLDP, Leaf: "swé"}, Found{Source: SourceLLDP}, true},
	}
	for _, tt := range tests {
		got, err := Checked(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("Checked(%+v) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}
