package slurm

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

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
