package topology

import (
	"bufio"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// IBFabric is an InfiniBand fabric as ibnetdiscover prints it: the nodes
// (switches, channel adapters, routers) and the links between their ports.
type IBFabric struct {
	// Nodes by node GUID.
	Nodes map[uint64]*IBNode
	// portNode maps a channel adapter's port GUID to its node GUID.
	portNode map[uint64]uint64
	// links maps a node's port to the node and port at the cable's
	// other end; each cable appears from both of its ends.
	links map[ibPort]ibPort
}

// IBNode is one node of the fabric.
type IBNode struct {
	GUID uint64
	// Kind is 'S' (switch), 'H' (channel adapter, a host) or 'R' (router).
	Kind byte
	// Desc is the node description (a switch's "MF0;leaf01:MQM8700/U1",
	// a host's "n01 mlx5_0").
	Desc string
}

type ibPort struct {
	node uint64
	port int
}

// Bounds of the ibnetdiscover output read: a fabric of 100,000 ports
// prints a few tens of megabytes.
const (
	maxIBBytes = 64 << 20
	maxIBNodes = 1 << 20
)

// ParseIBNetDiscover reads ibnetdiscover's default output: blocks that
// begin with id lines (vendid=, devid=, sysimgguid=, switchguid= or
// caguid=), then a node line
//
//	Switch	36 "S-7cfe900300a5a2a0"		# "MF0;leaf01:MQM8700/U1" enhanced port 0 lid 1 lmc 0
//	Ca	1 "H-0c42a10300b1c2d0"		# "n01 mlx5_0"
//
// and one line per connected port: a switch port names the remote node
// and port (and a host's port GUID), a host port gives its own port GUID
// first:
//
//	[1]	"H-0c42a10300b1c2d0"[1](c42a10300b1c2d1) 		# "n01 mlx5_0" lid 5 4xHDR
//	[1](c42a10300b1c2d1) 	"S-7cfe900300a5a2a0"[1]		# lid 5 lmc 0 "MF0;leaf01:MQM8700/U1" lid 1 4xHDR
//
// Comment lines and lines of other forms (ibnetdiscover's grouping and
// chassis lines) are skipped; a node or port line that does not parse is
// an error naming its line.
func ParseIBNetDiscover(text string) (*IBFabric, error) {
	f := &IBFabric{Nodes: map[uint64]*IBNode{}, portNode: map[uint64]uint64{}, links: map[ibPort]ibPort{}}
	if len(text) > maxIBBytes {
		return nil, fmt.Errorf("ibnetdiscover: %d bytes, want at most %d", len(text), maxIBBytes)
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 0, 64<<10), maxIBBytes)
	var cur *IBNode
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		bad := func(format string, args ...any) (*IBFabric, error) {
			return nil, fmt.Errorf("ibnetdiscover line %d: %s", n, fmt.Sprintf(format, args...))
		}
		kind, _, _ := strings.Cut(line, "\t")
		kind, _, _ = strings.Cut(kind, " ")
		switch {
		case line == "" || line[0] == '#':
			continue
		case kind == "Switch" || kind == "Ca" || kind == "Rt":
			node, err := parseIBNodeLine(line)
			if err != nil {
				return bad("%v", err)
			}
			if len(f.Nodes) >= maxIBNodes {
				return bad("more than %d nodes", maxIBNodes)
			}
			if prev, ok := f.Nodes[node.GUID]; ok && prev.Kind != node.Kind {
				return bad("node %016x listed as both %c and %c", node.GUID, prev.Kind, node.Kind)
			}
			f.Nodes[node.GUID] = node
			cur = node
		case line[0] == '[':
			if cur == nil {
				return bad("port line before any Switch or Ca line")
			}
			p, err := parseIBPortLine(line)
			if err != nil {
				return bad("%v", err)
			}
			if p.localGUID != 0 {
				f.portNode[p.localGUID] = cur.GUID
			}
			if p.remoteGUID != 0 {
				f.portNode[p.remoteGUID] = p.remote.node
			}
			local := ibPort{cur.GUID, p.port}
			f.links[local] = p.remote
			f.links[p.remote] = local
			if _, ok := f.Nodes[p.remote.node]; !ok {
				// Known by its link before its own block: its kind is in
				// its name, its description is filled in by its block.
				if len(f.Nodes) >= maxIBNodes {
					return bad("more than %d nodes", maxIBNodes)
				}
				f.Nodes[p.remote.node] = &IBNode{GUID: p.remote.node, Kind: p.remoteKind, Desc: p.remoteDesc}
			}
		default:
			// vendid=, devid=, sysimgguid=, switchguid=, caguid=, and
			// the lines of ibnetdiscover's other layouts.
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("ibnetdiscover: %w", err)
	}
	return f, nil
}

// parseIBNodeLine reads `Switch	36 "S-7cfe900300a5a2a0"		# "desc" ...`.
func parseIBNodeLine(line string) (*IBNode, error) {
	body, comment, _ := strings.Cut(line, "#")
	words := strings.Fields(body)
	if len(words) != 3 {
		return nil, fmt.Errorf("%q: want TYPE NPORTS \"X-GUID\"", clipIB(line))
	}
	if _, err := strconv.ParseUint(words[1], 10, 16); err != nil {
		return nil, fmt.Errorf("%q: port count %q is not a number", clipIB(line), clipIB(words[1]))
	}
	kind, guid, err := parseIBName(words[2])
	if err != nil {
		return nil, fmt.Errorf("%q: %v", clipIB(line), err)
	}
	want := map[string]byte{"Switch": 'S', "Ca": 'H', "Rt": 'R'}[words[0]]
	if kind != want {
		return nil, fmt.Errorf("%q: a %s named %s", clipIB(line), words[0], words[2])
	}
	return &IBNode{GUID: guid, Kind: kind, Desc: ibQuoted(comment)}, nil
}

// parseIBName reads a node's name as ibnetdiscover writes it, quotes
// included: "S-7cfe900300a5a2a0".
func parseIBName(s string) (kind byte, guid uint64, err error) {
	if len(s) < 5 || s[0] != '"' || s[len(s)-1] != '"' || s[2] != '-' {
		return 0, 0, fmt.Errorf("node name %q: want \"S-GUID\", \"H-GUID\" or \"R-GUID\"", clipIB(s))
	}
	switch s[1] {
	case 'S', 'H', 'R':
	default:
		return 0, 0, fmt.Errorf("node name %q: type %q is not S, H or R", clipIB(s), s[1])
	}
	guid, err = parseGUID(s[3 : len(s)-1])
	if err != nil {
		return 0, 0, fmt.Errorf("node name %q: %v", clipIB(s), err)
	}
	return s[1], guid, nil
}

// parseGUID reads a GUID in hex, with or without 0x.
func parseGUID(s string) (uint64, error) {
	g, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
	if err != nil || g == 0 {
		return 0, fmt.Errorf("GUID %q is not a nonzero 64-bit hex number", clipIB(s))
	}
	return g, nil
}

type ibPortLine struct {
	port       int
	localGUID  uint64 // a host port's own GUID, 0 on a switch
	remote     ibPort
	remoteKind byte
	remoteGUID uint64 // the remote host port's GUID, 0 for a switch
	remoteDesc string
}

// parseIBPortLine reads a switch's `[1]	"H-..."[1](portguid) # "desc" ...`
// or a host's `[1](portguid) 	"S-..."[1] # lid 5 lmc 0 "desc" ...`.
func parseIBPortLine(line string) (ibPortLine, error) {
	var p ibPortLine
	body, comment, _ := strings.Cut(line, "#")
	s := body
	var err error
	if p.port, s, err = bracketNum(s); err != nil {
		return p, fmt.Errorf("%q: local port: %v", clipIB(line), err)
	}
	if p.localGUID, s, err = parenGUID(s); err != nil {
		return p, fmt.Errorf("%q: local port GUID: %v", clipIB(line), err)
	}
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, `"`) {
		return p, fmt.Errorf("%q: want the remote node's \"X-GUID\" after the port", clipIB(line))
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return p, fmt.Errorf("%q: unterminated remote node name", clipIB(line))
	}
	if p.remoteKind, p.remote.node, err = parseIBName(s[:end+2]); err != nil {
		return p, fmt.Errorf("%q: %v", clipIB(line), err)
	}
	if p.remote.port, s, err = bracketNum(s[end+2:]); err != nil {
		return p, fmt.Errorf("%q: remote port: %v", clipIB(line), err)
	}
	if p.remoteGUID, s, err = parenGUID(s); err != nil {
		return p, fmt.Errorf("%q: remote port GUID: %v", clipIB(line), err)
	}
	if rest := strings.TrimSpace(s); rest != "" && !strings.HasPrefix(rest, "[") {
		// Grouping (-g) adds "[ext N]"; anything else is not this format.
		return p, fmt.Errorf("%q: unexpected %q after the remote port", clipIB(line), clipIB(rest))
	}
	p.remoteDesc = ibQuoted(comment)
	return p, nil
}

// bracketNum reads "[N]" at the start of s (after blanks).
func bracketNum(s string) (int, string, error) {
	s = strings.TrimLeft(s, " \t")
	if !strings.HasPrefix(s, "[") {
		return 0, s, fmt.Errorf("want [N]")
	}
	end := strings.IndexByte(s, ']')
	if end < 0 {
		return 0, s, fmt.Errorf("unterminated [")
	}
	v, err := strconv.ParseUint(s[1:end], 10, 8)
	if err != nil {
		return 0, s, fmt.Errorf("port %q is not a number from 0 to 255", clipIB(s[1:end]))
	}
	return int(v), s[end+1:], nil
}

// parenGUID reads an optional "(GUID)" at the start of s (after blanks).
func parenGUID(s string) (uint64, string, error) {
	t := strings.TrimLeft(s, " \t")
	if !strings.HasPrefix(t, "(") {
		return 0, s, nil
	}
	end := strings.IndexByte(t, ')')
	if end < 0 {
		return 0, s, fmt.Errorf("unterminated (")
	}
	g, err := parseGUID(t[1:end])
	return g, t[end+1:], err
}

// ibQuoted is the first "..." string in s, without its quotes.
func ibQuoted(s string) string {
	_, rest, ok := strings.Cut(s, `"`)
	if !ok {
		return ""
	}
	q, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return q
}

// clipIB shortens s for an error message.
func clipIB(s string) string {
	const max = 64
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// IBPlace is the place in the fabric of the node whose channel adapters
// have the given node or port GUIDs (sysfs's node_guid and the low half
// of each port's GID 0): its leaf switch (leafOf) and the leaf's parent
// (parentOf), named by SwitchNames; "" for what the fabric does not say.
func (f *IBFabric) IBPlace(local []uint64) (leaf, parent string) {
	if f == nil {
		return "", ""
	}
	leafGUID := f.leafOf(local)
	if leafGUID == 0 {
		return "", ""
	}
	names := f.SwitchNames()
	return names[leafGUID], names[f.parentOf(leafGUID)]
}

// neighbours counts the cables from node to each node it is linked to.
func (f *IBFabric) neighbours(node uint64) map[uint64]int {
	out := map[uint64]int{}
	for from, to := range f.links {
		if from.node == node && to.node != node {
			out[to.node]++
		}
	}
	return out
}

// isSwitch says whether guid is a switch of the fabric.
func (f *IBFabric) isSwitch(guid uint64) bool {
	n, ok := f.Nodes[guid]
	return ok && n.Kind == 'S'
}

// hasHosts says whether a channel adapter is cabled to switch guid: such
// a switch is a leaf.
func (f *IBFabric) hasHosts(guid uint64) bool {
	for from, to := range f.links {
		if from.node == guid {
			if n, ok := f.Nodes[to.node]; ok && n.Kind == 'H' {
				return true
			}
		}
	}
	return false
}

// leafOf is the leaf switch of the node whose channel adapters have the
// given node or port GUIDs: the switch cabled to most of their ports,
// ties going to the lowest switch GUID (a node with two rails on two
// leaves always reports the same one). 0 when none of them is in the
// fabric or none is cabled to a switch.
func (f *IBFabric) leafOf(local []uint64) uint64 {
	cas := map[uint64]bool{}
	for _, g := range local {
		if n, ok := f.Nodes[g]; ok && n.Kind == 'H' {
			cas[g] = true
		} else if node, ok := f.portNode[g]; ok {
			cas[node] = true
		}
	}
	count := map[uint64]int{}
	for from, to := range f.links {
		if cas[from.node] && f.isSwitch(to.node) {
			count[to.node]++
		}
	}
	return bestGUID(count)
}

// parentOf is the leaf's parent: among the switches cabled to it that
// are not leaves themselves (no host is cabled to them), the one with
// the lowest GUID. Slurm's tree has one parent per switch; the lowest
// GUID is the same choice on every node and, in a fat tree where every
// leaf reaches every spine, puts all leaves under one spine, which is
// the locality Slurm should see (any two leaves are two hops apart).
// 0 when the leaf has no such neighbour (a one-switch fabric).
func (f *IBFabric) parentOf(leaf uint64) uint64 {
	var parent uint64
	for n := range f.neighbours(leaf) {
		if f.isSwitch(n) && !f.hasHosts(n) && (parent == 0 || n < parent) {
			parent = n
		}
	}
	return parent
}

// bestGUID is the key with the highest count, ties to the lowest key.
func bestGUID(count map[uint64]int) uint64 {
	var k uint64
	c := 0
	for g, n := range count {
		if n > c || (n == c && g < k) {
			k, c = g, n
		}
	}
	return k
}

// SwitchNames names every switch of the fabric: the host name in its
// node description where there is one (Mellanox/NVIDIA switches describe
// themselves as "MF0;NAME:MODEL/U1"; others as just "NAME"), else its GUID
// as 0x followed by 16 hex digits. A description is a name when it is one
// word of letters, digits, '-', '_' and '.' holding a letter, and no other
// switch of the fabric has the same one (factory descriptions such as
// "Quantum Mellanox Technologies" are not names). 0 maps to "".
func (f *IBFabric) SwitchNames() map[uint64]string {
	names := map[uint64]string{0: ""}
	byName := map[string][]uint64{}
	for g, n := range f.Nodes {
		if n.Kind != 'S' {
			continue
		}
		if name := switchDescName(n.Desc); name != "" {
			byName[name] = append(byName[name], g)
		}
		names[g] = fmt.Sprintf("0x%016x", g)
	}
	for name, gs := range byName {
		if len(gs) == 1 {
			names[gs[0]] = name
		}
	}
	return names
}

// switchDescName is the switch name a node description holds, "" when
// it holds none.
func switchDescName(desc string) string {
	if _, rest, ok := strings.Cut(desc, ";"); ok && strings.HasPrefix(desc, "MF0;") {
		desc, _, _ = strings.Cut(rest, ":")
	}
	if desc == "" || len(desc) > 64 {
		return ""
	}
	letter := false
	for _, c := range desc {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			letter = true
		case c >= '0' && c <= '9', c == '-', c == '_', c == '.':
		default:
			return ""
		}
	}
	if !letter {
		return ""
	}
	return desc
}

// Switches lists the fabric's switch GUIDs in ascending order.
func (f *IBFabric) Switches() []uint64 {
	var out []uint64
	for g, n := range f.Nodes {
		if n.Kind == 'S' {
			out = append(out, g)
		}
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}
