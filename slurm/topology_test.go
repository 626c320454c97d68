package slurm

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var updateTopology = flag.Bool("update-topology", false, "rewrite testdata/topology_format.conf")

// TestParseTopology reads the topology.conf the Slurm peer runs with (up.sh
// writes it) and the block form, and refuses malformed ones by line.
func TestParseTopology(t *testing.T) {
	// The peer's own, as up.sh writes it.
	up, err := os.ReadFile(filepath.Join("..", "..", "shared", "peers", "slurm", "up.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)topology\.conf" <<EOF\n(.*?)\nEOF`).FindSubmatch(up)
	if m == nil {
		t.Fatal("up.sh writes no topology.conf")
	}
	topo, err := ParseTopology(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	for node, want := range map[string][2]string{"n1": {"leaf1", "spine"}, "n2": {"leaf1", "spine"}, "n3": {"leaf2", "spine"}, "n4": {"leaf2", "spine"}} {
		if leaf, parent, _ := topo.Place(node); leaf != want[0] || parent != want[1] {
			t.Errorf("%s: %s under %s; want %s under %s", node, leaf, parent, want[0], want[1])
		}
	}
	if leaf, parent, block := topo.Place("n9"); leaf != "" || parent != "" || block != "" {
		t.Errorf("unknown node placed: %q %q %q", leaf, parent, block)
	}

	blocks, err := ParseTopology("# NVL72 racks\nBlockName=rack1 Nodes=g[01-18]\nBlockName=rack2 Nodes=g[19-36]\nBlockSizes=18,36\n")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, b := blocks.Place("g20"); b != "rack2" {
		t.Errorf("g20 in block %q; want rack2", b)
	}

	for _, tc := range []struct{ text, want string }{
		{"SwitchName=a Nodes=n1\nSwitchName=b Nodes=n1\n", "line 2: node n1 under both a and b"},
		{"SwitchName=a Nodes=n[1-\n", "line 1: Nodes:"},
		{"SwitchName=a Speed=1\n", "line 1: speed: not a SwitchName key"},
		{"Nodes=n1\n", "line 1: want SwitchName=, BlockName= or BlockSizes="},
		{"SwitchName=a Nodes\n", `line 1: "Nodes": want KEY=VALUE`},
		{"SwitchName=s Switches=a\nSwitchName=t Switches=a\n", "line 2: switch a under both s and t"},
	} {
		if _, err := ParseTopology(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTopology(%q) = %v; want an error containing %q", tc.text, err, tc.want)
		}
	}
}

func FuzzParseTopology(f *testing.F) {
	f.Add("SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=spine Switches=leaf[1-2]\n")
	f.Add("BlockName=b1 Nodes=g[01-18]\nBlockSizes=18\n")
	f.Fuzz(func(t *testing.T, text string) {
		topo, err := ParseTopology(text)
		if err != nil {
			return
		}
		for node, leaf := range topo.Leaf {
			if l, _, _ := topo.Place(node); l != leaf {
				t.Fatalf("Place(%q) leaf %q; want %q", node, l, leaf)
			}
		}
	})
}

// fatTree is two levels of switches above eight nodes, a leaf named by
// its InfiniBand GUID, a node cabled to the core switch, a leaf without
// a parent, and two NVLink blocks.
func fatTree() Topology {
	t := Topology{Leaf: map[string]string{}, Parent: map[string]string{}, Block: map[string]string{}}
	leaves := []string{"leaf01", "leaf01", "leaf02", "leaf02", "leaf03", "leaf03", "0x1070fd0300c2a400", "0x1070fd0300c2a400"}
	for i, leaf := range leaves {
		node := fmt.Sprintf("n%02d", i+1)
		t.Leaf[node] = leaf
		t.Parent[leaf] = "spine02"
		t.Block[node] = "nvl-6f1c2a3b-4c5d-4e6f-8091-a2b3c4d5e6f7-7"
		if i >= 4 {
			t.Block[node] = "nvl-01020304-0506-0708-090a-0b0c0d0e0f10-2"
		}
	}
	t.Leaf["login1"] = "core"
	t.Parent["spine02"] = "core"
	t.Leaf["gpu1"] = "rack9"
	return t
}

// TestFormatTopologyGolden compares the writer's output with
// testdata/topology_format.conf (regenerate with -update-topology).
func TestFormatTopologyGolden(t *testing.T) {
	got, err := FormatTopology(fatTree())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "topology_format.conf")
	if *updateTopology {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("FormatTopology:\n%s\nwant (%s):\n%s", got, path, want)
	}
}

func TestFormatTopologyRoundTrip(t *testing.T) {
	for name, topo := range map[string]Topology{
		"fat tree": fatTree(),
		"empty":    {Leaf: map[string]string{}, Parent: map[string]string{}, Block: map[string]string{}},
		"blocks":   {Leaf: map[string]string{}, Parent: map[string]string{}, Block: map[string]string{"g1": "b1", "g2": "b1", "g10": "b2"}},
	} {
		text, err := FormatTopology(topo)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		back, err := ParseTopology(text)
		if err != nil {
			t.Fatalf("%s: ParseTopology(FormatTopology) = %v\n%s", name, err, text)
		}
		if d := cmp.Diff(topo, back); d != "" {
			t.Errorf("%s: round trip (-want +got):\n%s\n%s", name, d, text)
		}
	}
}

func TestFormatTopologyRefuses(t *testing.T) {
	for _, tc := range []struct {
		topo Topology
		want string
	}{
		{Topology{Leaf: map[string]string{"n 1": "a"}}, `node name "n 1"`},
		{Topology{Leaf: map[string]string{"n1": "a=b"}}, `switch name "a=b"`},
		{Topology{Leaf: map[string]string{"n1": ""}}, `switch name ""`},
		{Topology{Parent: map[string]string{"a": "b", "b": "a"}}, "is above itself"},
		{Topology{Parent: map[string]string{"a": "a"}}, "switch a is above itself"},
		{Topology{Block: map[string]string{"n1": "b#1"}}, `block name "b#1"`},
	} {
		if _, err := FormatTopology(tc.topo); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FormatTopology(%v) = %v; want an error with %q", tc.topo, err, tc.want)
		}
	}
}

// FuzzFormatTopology: what ParseTopology reads, FormatTopology writes
// back to the same places (or refuses a cycle or a name it cannot
// write, such as "]0", which Slurm's hostlist reads as a name).
func FuzzFormatTopology(f *testing.F) {
	f.Add("SwitchName=leaf1 Nodes=n[1-2]\nSwitchName=spine Switches=leaf[1-2]\n")
	f.Add("BlockName=b1 Nodes=g[01-18]\nSwitchName=s Nodes=g[01-02,7]\n")
	f.Fuzz(func(t *testing.T, text string) {
		topo, err := ParseTopology(text)
		if err != nil {
			return
		}
		out, err := FormatTopology(topo)
		if err != nil {
			if !strings.Contains(err.Error(), "above itself") && !strings.Contains(err.Error(), "cannot be written") {
				t.Fatalf("FormatTopology of a parsed topology: %v", err)
			}
			return
		}
		back, err := ParseTopology(out)
		if err != nil {
			t.Fatalf("ParseTopology(%q): %v", out, err)
		}
		if d := cmp.Diff(topo, back); d != "" {
			t.Errorf("round trip (-want +got):\n%s", d)
		}
	})
}

// TestFormatTopologyPeer: testdata/topology_peer.conf is what
// FormatTopology writes for its places, and Debian's Slurm 22.05 read it
// into the same tree (testdata/topology_peer_golden.txt, `scontrol show
// topology` as make_topology_peer.sh recorded it): each switch's own
// nodes at level 0 and the switches under it.
func TestFormatTopologyPeer(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("testdata", "topology_peer.conf"))
	if err != nil {
		t.Fatal(err)
	}
	topo, err := ParseTopology(string(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := FormatTopology(topo)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(in), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if want := strings.Join(lines, "\n") + "\n"; out != want {
		t.Errorf("FormatTopology:\n%s\nwant (testdata/topology_peer.conf):\n%s", out, want)
	}
	golden, err := os.ReadFile(filepath.Join("testdata", "topology_peer_golden.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// Slurm's lines, less Level, LinkSpeed and an upper switch's Nodes
	// (all the nodes below it), are the lines written.
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(golden)), "\n") {
		var keep []string
		upper := strings.Contains(l, " Switches=")
		for _, w := range strings.Fields(l) {
			if strings.HasPrefix(w, "Level=") || strings.HasPrefix(w, "LinkSpeed=") || upper && strings.HasPrefix(w, "Nodes=") {
				continue
			}
			keep = append(keep, w)
		}
		got = append(got, strings.Join(keep, " "))
	}
	if d := cmp.Diff(lines, got); d != "" {
		t.Errorf("Slurm's scontrol show topology (-written +Slurm's):\n%s", d)
	}
}
