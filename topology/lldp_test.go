package topology

import (
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/shoal-sched/shoal/cluster"
)

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "lldp", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestParseLLDP reads recorded lldpcli outputs (testdata/lldp/README.md
// says which are recorded and which written after them).
func TestParseLLDP(t *testing.T) {
	leafA := LLDPNeighbor{Interface: "eth0", Chassis: "leafA", ChassisID: "72:a0:d9:15:d0:e4", Port: "p1"}
	switchTwo := []LLDPNeighbor{
		{Interface: "p1", Chassis: "node1", ChassisID: "3a:8e:2f:01:a3:2e", Port: "eth0"},
		{Interface: "p2", Chassis: "node2", ChassisID: "d6:80:0b:59:7e:a0", Port: "eth0"},
	}
	tests := []struct {
		file string
		want []LLDPNeighbor
	}{
		{"node-one.json", []LLDPNeighbor{leafA}},
		{"node-one.json0.json", []LLDPNeighbor{leafA}},
		{"node-one-details.json", []LLDPNeighbor{leafA}},
		{"switch-two.json", switchTwo},
		{"switch-two.json0.json", switchTwo},
		{"none.json", nil},
		{"none.json0.json", nil},
		{"shared-port.json", []LLDPNeighbor{
			{Interface: "eth0", Chassis: "node7", ChassisID: "3a:8e:2f:01:a3:2e", Port: "eth0"},
			{Interface: "eth0", Chassis: "tor-r12", ChassisID: "0c:42:a1:00:12:01", Port: "swp12", Bridge: true},
			{Interface: "eth1", Chassis: "mgmt-sw1", ChassisID: "0c:42:a1:00:ff:01", Port: "ge-0/0/3", Bridge: true},
		}},
		{"no-sysname.json", []LLDPNeighbor{
			{Interface: "eth0", ChassisID: "0c:42:a1:00:12:01", Port: "Ethernet12", Bridge: true},
			{Interface: "eth1", Chassis: "id", ChassisID: "FOC1234X0AB", Port: "GigabitEthernet1/0/3"},
		}},
		{"one-capability.json", []LLDPNeighbor{
			{Interface: "ens1f0np0", Chassis: "leaf-07.pod2", ChassisID: "b8:59:9f:11:22:33", Port: "Ethernet48", Bridge: true},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := ParseLLDP(readFixture(t, tt.file))
			if err != nil {
				t.Fatalf("ParseLLDP(%s) error: %v", tt.file, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseLLDP(%s) = %+v; want %+v", tt.file, got, tt.want)
			}
		})
	}
}

func TestParseLLDPShapes(t *testing.T) {
	tests := []struct {
		name, in string
		want     []LLDPNeighbor
		wantErr  bool
	}{
		{"empty output", "", nil, false},
		{"blank output", " \n", nil, false},
		{"lldp null", `{"lldp": null}`, nil, false},
		{"lldp empty", `{"lldp": {}}`, nil, false},
		{"no chassis", `{"lldp": {"interface": {"eth0": {"via": "LLDP"}}}}`, []LLDPNeighbor{{Interface: "eth0"}}, false},
		{"json0 plain strings", `{"lldp": [{"interface": [{"name": "eth0", "chassis": [{"name": "sw"}]}]}]}`, []LLDPNeighbor{{Interface: "eth0", Chassis: "sw"}}, false},
		{"not json", `lldp`, nil, true},
		{"no lldp", `{"neighbors": {}}`, nil, true},
		{"lldp a string", `{"lldp": "x"}`, nil, true},
		{"interface a string", `{"lldp": {"interface": "eth0"}}`, nil, true},
		{"interface list of strings", `{"lldp": {"interface": ["eth0"]}}`, nil, true},
		{"neighbour a number", `{"lldp": {"interface": {"eth0": 1}}}`, nil, true},
		{"two chassis names", `{"lldp": {"interface": {"eth0": {"chassis": {"a": {}, "b": {}}}}}}`, nil, true},
		{"chassis a list", `{"lldp": {"interface": {"eth0": {"chassis": []}}}}`, nil, true},
		{"chassis body a string", `{"lldp": {"interface": {"eth0": {"chassis": {"a": "b"}}}}}`, nil, true},
		{"json0 nameless interface", `{"lldp": [{"interface": [{"via": "LLDP"}]}]}`, nil, true},
		{"json0 interface an object", `{"lldp": [{"interface": {"name": "eth0"}}]}`, nil, true},
		{"json0 entry a string", `{"lldp": ["x"]}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLLDP([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseLLDP(%q) error = %v; want error %v", tt.in, err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseLLDP(%q) = %+v; want %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestLLDPLeaf(t *testing.T) {
	tests := []struct {
		file, iface, want string
	}{
		{"node-one.json", "eth0", "leafA"},
		{"node-one.json", "eth1", ""},
		{"node-one.json", "", ""},
		{"none.json", "eth0", ""},
		{"switch-two.json", "p2", "node2"},
		// The switch, not the other host that a hub lets through.
		{"shared-port.json", "eth0", "tor-r12"},
		{"shared-port.json", "eth1", "mgmt-sw1"},
		// No system name: the chassis id names the switch.
		{"no-sysname.json", "eth0", "0c:42:a1:00:12:01"},
		{"no-sysname.json", "eth1", "id"},
		{"one-capability.json", "ens1f0np0", "leaf-07.pod2"},
	}
	for _, tt := range tests {
		ns, err := ParseLLDP(readFixture(t, tt.file))
		if err != nil {
			t.Fatalf("ParseLLDP(%s): %v", tt.file, err)
		}
		if got := LLDPLeaf(ns, tt.iface); got != tt.want {
			t.Errorf("LLDPLeaf(%s, %q) = %q; want %q", tt.file, tt.iface, got, tt.want)
		}
	}
	// Of neighbours alike, the smallest name, whatever their order.
	ns := []LLDPNeighbor{{Interface: "eth0", Chassis: "b"}, {Interface: "eth0", Chassis: "a"}, {Interface: "eth0"}}
	if got := LLDPLeaf(ns, "eth0"); got != "a" {
		t.Errorf("LLDPLeaf(b, a, nameless) = %q; want a", got)
	}
}

func TestClusterInterface(t *testing.T) {
	a := netip.MustParseAddr
	ifaces := map[string][]netip.Addr{
		"lo":     {a("127.0.0.1"), a("::1")},
		"eth0":   {a("10.0.0.5"), a("fe80::1")},
		"ib0":    {a("192.168.7.5")},
		"bond0":  {a("fd00::5")},
		"docker": {},
	}
	tests := []struct {
		addr netip.Addr
		want string
	}{
		{a("10.0.0.5"), "eth0"},
		{a("192.168.7.5"), "ib0"},
		{a("fd00::5"), "bond0"},
		{a("::ffff:10.0.0.5"), "eth0"},
		{a("fe80::1%eth0"), "eth0"},
		{a("10.0.0.6"), ""},
		{a("0.0.0.0"), ""},
		{a("::"), ""},
		{a("127.0.0.1"), ""},
		{netip.Addr{}, ""},
	}
	for _, tt := range tests {
		if got := ClusterInterface(ifaces, tt.addr); got != tt.want {
			t.Errorf("ClusterInterface(%s) = %q; want %q", tt.addr, got, tt.want)
		}
	}
}

// FuzzParseLLDP: lldpcli's output never panics the parser, and what it
// accepts gives a leaf without panicking either.
func FuzzParseLLDP(f *testing.F) {
	entries, err := os.ReadDir(filepath.Join("testdata", "lldp"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".json" {
			f.Add(readFixture(f, e.Name()))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ns, err := ParseLLDP(data)
		if err != nil {
			return
		}
		for _, n := range ns {
			_ = LLDPLeaf(ns, n.Interface)
		}
	})
}

// TestSwitchNeighbors: what a switch's lldpd sees becomes its report's
// neighbours: by system name (chassis id without one), sorted, each once
// (a switch when one sighting says so), names topology.conf cannot carry
// left out.
func TestSwitchNeighbors(t *testing.T) {
	got, refused := SwitchNeighbors([]LLDPNeighbor{
		{Interface: "p1", Chassis: "node2"},
		{Interface: "up1", Chassis: "spine", Bridge: true},
		{Interface: "p2", ChassisID: "0c:42:a1:00:12:01"},
		{Interface: "up2", Chassis: "spine"},
		{Interface: "p3", Chassis: "bad name"},
		{Interface: "p4"},
	})
	want := []cluster.SwitchNeighbor{{Name: "0c:42:a1:00:12:01"}, {Name: "node2"}, {Name: "spine", Bridge: true}}
	if !reflect.DeepEqual(got, want) || len(refused) != 1 {
		t.Errorf("SwitchNeighbors = %+v, %v; want %+v and one refused", got, refused, want)
	}
}
