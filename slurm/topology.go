package slurm

import (
	"bufio"
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Topology is a Slurm topology.conf read for one purpose: each node's
// place in it. Tree lines (topology/tree) name leaf switches with Nodes=
// and upper switches with Switches=; block lines (topology/block, Slurm's
// block.conf syntax, also accepted here) name NVLink blocks with Nodes=.
type Topology struct {
	// Leaf maps a node to its leaf switch, Parent a leaf switch to the
	// switch above it, Block a node to its block.
	Leaf   map[string]string
	Parent map[string]string
	Block  map[string]string
}

// Maximum topology.conf size and line count read.
const (
	maxTopologyBytes = 16 << 20
	maxTopologyLines = 100000
)

// ParseTopology reads topology.conf text: lines of KEY=VALUE words,
// SwitchName=NAME with Nodes=HOSTLIST (a leaf) and/or Switches=HOSTLIST
// (its children), or BlockName=NAME Nodes=HOSTLIST; # starts a comment,
// LinkSpeed= and BlockSizes= are accepted and ignored. A node under two
// leaves, a switch under two parents, or an unknown key is an error
// naming the line.
func ParseTopology(text string) (Topology, error) {
	t := Topology{Leaf: map[string]string{}, Parent: map[string]string{}, Block: map[string]string{}}
	if len(text) > maxTopologyBytes {
		return t, fmt.Errorf("topology.conf: %d bytes, want at most %d", len(text), maxTopologyBytes)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), maxTopologyBytes)
	n := 0
	for sc.Scan() {
		if n++; n > maxTopologyLines {
			return t, fmt.Errorf("topology.conf: more than %d lines", maxTopologyLines)
		}
		line, _, _ := strings.Cut(sc.Text(), "#")
		words := strings.Fields(line)
		if len(words) == 0 {
			continue
		}
		bad := func(format string, args ...any) (Topology, error) {
			return t, fmt.Errorf("topology.conf line %d: %s", n, fmt.Sprintf(format, args...))
		}
		kv := map[string]string{}
		for _, w := range words {
			k, v, ok := strings.Cut(w, "=")
			if !ok || v == "" {
				return bad("%q: want KEY=VALUE", clip(w))
			}
			k = strings.ToLower(k)
			if _, dup := kv[k]; dup {
				return bad("%s given twice", k)
			}
			kv[k] = v
		}
		expand := func(key string) ([]string, error) {
			v, ok := kv[key]
			if !ok {
				return nil, nil
			}
			return ExpandHostlist(v)
		}
		nodes, err := expand("nodes")
		if err != nil {
			return bad("Nodes: %v", err)
		}
		switch {
		case kv["switchname"] != "":
			name := kv["switchname"]
			for k := range kv {
				switch k {
				case "switchname", "nodes", "switches", "linkspeed":
				default:
					return bad("%s: not a SwitchName key (Nodes, Switches, LinkSpeed)", k)
				}
			}
			children, err := expand("switches")
			if err != nil {
				return bad("Switches: %v", err)
			}
			for _, node := range nodes {
				if prev, ok := t.Leaf[node]; ok && prev != name {
					return bad("node %s under both %s and %s", node, prev, name)
				}
				t.Leaf[node] = name
			}
			for _, c := range children {
				if prev, ok := t.Parent[c]; ok && prev != name {
					return bad("switch %s under both %s and %s", c, prev, name)
				}
				t.Parent[c] = name
			}
		case kv["blockname"] != "":
			name := kv["blockname"]
			for k := range kv {
				if k != "blockname" && k != "nodes" {
					return bad("%s: not a BlockName key (Nodes)", k)
				}
			}
			for _, node := range nodes {
				if prev, ok := t.Block[node]; ok && prev != name {
					return bad("node %s in both blocks %s and %s", node, prev, name)
				}
				t.Block[node] = name
			}
		case kv["blocksizes"] != "":
			// topology/block's aggregation sizes: Shoal groups blocks by
			// its own rule.
		default:
			return bad("want SwitchName=, BlockName= or BlockSizes=")
		}
	}
	if err := sc.Err(); err != nil {
		return t, fmt.Errorf("topology.conf: %w", err)
	}
	return t, nil
}

// Place returns node's leaf switch, that switch's parent and its block,
// each "" when the topology does not say.
func (t Topology) Place(node string) (leaf, parent, block string) {
	leaf = t.Leaf[node]
	return leaf, t.Parent[leaf], t.Block[node]
}

// TopologyAddr is a node's SLURM_TOPOLOGY_ADDR and
// SLURM_TOPOLOGY_ADDR_PATTERN as Slurm's topology/tree sets them: the
// switches above the node from the top down, then the node, joined by
// dots ("spine.leaf1.n1", "switch.switch.node"). Empty switch names are
// left out: a node under no switch is "n1" and "node".
func TopologyAddr(node string, switches ...string) (addr, pattern string) {
	var a, p []string
	for _, s := range switches {
		if s != "" {
			a, p = append(a, s), append(p, "switch")
		}
	}
	return strings.Join(append(a, node), "."), strings.Join(append(p, "node"), ".")
}

// FormatTopology writes t in topology.conf's syntax, the inverse of
// ParseTopology: a SwitchName line per switch, with its nodes
// (Nodes=HOSTLIST) and the switches under it (Switches=HOSTLIST), lower
// switches before the ones above them and, at one height, by name
// (CompareNodeNames); then a BlockName line per block, by name. Hostlists
// are sorted and compressed as `scontrol show hostlistsorted` writes them.
// A name topology.conf cannot hold (empty, or with a blank, '=', '#',
// ',' or a bracket) or a switch above itself is an error naming it.
func FormatTopology(t Topology) (string, error) {
	nodes := map[string][]string{}    // switch → its nodes
	children := map[string][]string{} // switch → the switches under it
	switches := map[string]bool{}
	for node, leaf := range t.Leaf {
		if err := checkTopologyName("node", node); err != nil {
			return "", err
		}
		if err := checkTopologyName("switch", leaf); err != nil {
			return "", err
		}
		nodes[leaf] = append(nodes[leaf], node)
		switches[leaf] = true
	}
	for sw, parent := range t.Parent {
		for _, name := range []string{sw, parent} {
			if err := checkTopologyName("switch", name); err != nil {
				return "", err
			}
		}
		children[parent] = append(children[parent], sw)
		switches[sw], switches[parent] = true, true
	}
	for sw := range t.Parent {
		up := sw
		for range len(t.Parent) + 1 {
			var ok bool
			if up, ok = t.Parent[up]; !ok {
				break
			}
			if up == sw {
				return "", fmt.Errorf("topology: switch %s is above itself", sw)
			}
		}
	}
	height := map[string]int{}
	var heightOf func(sw string) int
	heightOf = func(sw string) int {
		if h, ok := height[sw]; ok {
			return h
		}
		h := 0
		for _, c := range children[sw] {
			h = max(h, heightOf(c)+1)
		}
		height[sw] = h
		return h
	}
	order := make([]string, 0, len(switches))
	for sw := range switches {
		heightOf(sw)
		order = append(order, sw)
	}
	slices.SortFunc(order, func(a, b string) int {
		if c := cmp.Compare(height[a], height[b]); c != 0 {
			return c
		}
		return CompareNodeNames(a, b)
	})
	var b strings.Builder
	for _, sw := range order {
		b.WriteString("SwitchName=" + sw)
		if len(nodes[sw]) > 0 {
			b.WriteString(" Nodes=" + SortedHostlist(nodes[sw]))
		}
		if len(children[sw]) > 0 {
			b.WriteString(" Switches=" + SortedHostlist(children[sw]))
		}
		b.WriteString("\n")
	}
	blocks := map[string][]string{}
	for node, block := range t.Block {
		for kind, name := range map[string]string{"node": node, "block": block} {
			if err := checkTopologyName(kind, name); err != nil {
				return "", err
			}
		}
		blocks[block] = append(blocks[block], node)
	}
	for _, name := range slices.SortedFunc(maps.Keys(blocks), CompareNodeNames) {
		b.WriteString("BlockName=" + name + " Nodes=" + SortedHostlist(blocks[name]) + "\n")
	}
	return b.String(), nil
}

// checkTopologyName refuses a name topology.conf cannot hold.
func checkTopologyName(kind, name string) error {
	if name == "" || strings.ContainsAny(name, " \t\r\n=#,[]") {
		return fmt.Errorf("topology: %s name %q cannot be written in topology.conf", kind, clip(name))
	}
	return nil
}
