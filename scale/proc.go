package scale

import (
	"bufio"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-sched/shoal/api"
)

// clockTicks is Linux's USER_HZ, the unit of utime and stime in
// /proc/<pid>/stat: 100 on every architecture Go supports on Linux.
const clockTicks = 100

// parseStatTicks returns utime+stime, in clock ticks, from the text of
// /proc/<pid>/stat. The command name (field 2) may hold spaces and
// parentheses, so fields are counted from the last ')'.
func parseStatTicks(stat string) (uint64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc stat %q: no ')' after the command name", trim(stat))
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc stat %q: %d fields after the command name, want at least 13", trim(stat), len(f))
	}
	ut, err := strconv.ParseUint(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat: utime %q: %w", f[11], err)
	}
	st, err := strconv.ParseUint(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat: stime %q: %w", f[12], err)
	}
	return ut + st, nil
}

// parseVmRSS returns VmRSS in bytes from the text of /proc/<pid>/status.
func parseVmRSS(status string) (uint64, error) {
	for line := range strings.Lines(status) {
		rest, ok := strings.CutPrefix(line, "VmRSS:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc status: VmRSS %q: want \"<n> kB\"", strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status: VmRSS %q: %w", f[0], err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("/proc status: no VmRSS line")
}

// parseLoopbackBytes returns the bytes received on "lo" from the text of
// /proc/net/dev. On loopback every byte sent is received once, so this is
// all loopback traffic of the network namespace.
func parseLoopbackBytes(netdev string) (uint64, error) {
	for line := range strings.Lines(netdev) {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || strings.TrimSpace(name) != "lo" {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 1 {
			return 0, fmt.Errorf("/proc/net/dev: lo line %q has no counters", trim(line))
		}
		n, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/net/dev: lo received bytes %q: %w", f[0], err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("/proc/net/dev: no lo interface")
}

// tcpBytes is what one TCP socket has carried so far.
type tcpBytes struct{ sent, received uint64 }

// parseSS reads `ss -tinpH` output: a line per socket naming its
// addresses and owning processes, then an indented line of TCP info with
// bytes_sent and bytes_received. It returns the sockets pid owns, keyed by
// "local peer".
func parseSS(out string, pid int) map[string]tcpBytes {
	owner := fmt.Sprintf("pid=%d,", pid)
	return parseSSFunc(out, func(line, _, _ string) bool { return strings.Contains(line, owner) })
}

// sockFilter picks one agent's sockets out of a process of many: those
// whose local port is one of its own, and those whose peer port is one of
// peer.
type sockFilter struct{ local, peer map[int]bool }

// parseSSPorts is parseSS for the sockets f picks, whatever process holds
// them.
func parseSSPorts(out string, f sockFilter) map[string]tcpBytes {
	port := func(addr string) int {
		i := strings.LastIndexByte(addr, ':')
		if i < 0 {
			return -1
		}
		p, err := strconv.Atoi(addr[i+1:])
		if err != nil {
			return -1
		}
		return p
	}
	return parseSSFunc(out, func(_, local, peer string) bool { return f.local[port(local)] || f.peer[port(peer)] })
}

// parseSSFunc reads `ss -tinpH` output: the bytes each socket that keep
// picks (from its line, local and peer address) sent and received, by
// "local peer".
func parseSSFunc(out string, keep func(line, local, peer string) bool) map[string]tcpBytes {
	socks := map[string]tcpBytes{}
	var key string // the socket whose info line comes next, "" when not kept
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			key = ""
			f := strings.Fields(line)
			if len(f) >= 5 && keep(line, f[3], f[4]) {
				key = f[3] + " " + f[4]
			}
			continue
		}
		if key == "" {
			continue
		}
		var b tcpBytes
		for _, kv := range strings.Fields(line) {
			k, v, ok := strings.Cut(kv, ":")
			if !ok {
				continue
			}
			switch k {
			case "bytes_sent":
				b.sent, _ = strconv.ParseUint(v, 10, 64)
			case "bytes_received":
				b.received, _ = strconv.ParseUint(v, 10, 64)
			}
		}
		socks[key] = b
		key = ""
	}
	return socks
}

// tcpDelta is what pid's sockets carried between two parseSS readings:
// a socket absent from the first counts from zero (opened in between);
// one absent from the second is lost (closed in between: not counted).
func tcpDelta(before, after map[string]tcpBytes) uint64 {
	var total uint64
	for k, a := range after {
		b := before[k]
		if a.sent >= b.sent && a.received >= b.received {
			total += a.sent - b.sent + a.received - b.received
		}
	}
	return total
}

// Layout counts the raft roles and the nodes up in a /v1/nodes answer.
type Layout struct {
	Voters    int `json:"voters"` // the leader included
	Nonvoters int `json:"nonvoters"`
	Workers   int `json:"workers"` // nodes that are no raft server ("none")
	Up        int `json:"up"`      // nodes not DOWN
	// Servers are the voters' and nonvoters' names, in the nodes' order.
	Servers []string `json:"servers,omitempty"`
}

// CountLayout counts nodes' raft roles.
func CountLayout(nodes []api.Node) Layout {
	var l Layout
	for _, n := range nodes {
		switch n.Raft {
		case "leader", "voter":
			l.Voters++
			l.Servers = append(l.Servers, n.Name)
		case "nonvoter":
			l.Nonvoters++
			l.Servers = append(l.Servers, n.Name)
		default:
			l.Workers++
		}
		if n.State != "DOWN" {
			l.Up++
		}
	}
	return l
}

// Settled reports whether l is the layout asked for: every node up, the
// voters wanted, and servers raft servers in all (voters and nonvoters).
func Settled(l Layout, nodes, voters, servers int) bool {
	return l.Up == nodes && l.Voters == voters && l.Voters+l.Nonvoters == servers
}

// DefaultReplicas is the agents' --raft-replicas default
// (node.DefaultRaftReplicas): the nonvoters kept beside the voters.
const DefaultReplicas = 2

// DefaultVoters is the voter count the leader's plan settles on for a
// cluster of n nodes today (consensus.PlanVoters with no MaxVoters): 5
// from 5 nodes, else the largest odd number not above n.
func DefaultVoters(n int) int {
	switch {
	case n >= 5:
		return 5
	case n >= 3:
		return 3
	default:
		return min(n, 1)
	}
}

// AliveMembers counts the gossip members an agent lists as alive.
func AliveMembers(ms []api.Member) int {
	n := 0
	for _, m := range ms {
		if m.Status == "alive" {
			n++
		}
	}
	return n
}

// Dist summarizes samples, in seconds.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_s"`
	P99 float64 `json:"p99_s"`
	Min float64 `json:"min_s"`
	Max float64 `json:"max_s"`
}

// Summarize gives the median, the 99th percentile (nearest rank), the
// least and the most of ds.
func Summarize(ds []time.Duration) Dist {
	if len(ds) == 0 {
		return Dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	rank := (99*len(s) + 99) / 100 // ceil(0.99 n), 1-based
	return Dist{N: len(s), P50: med.Seconds(), P99: s[rank-1].Seconds(), Min: s[0].Seconds(), Max: s[len(s)-1].Seconds()}
}

// leaderView is what the survivors of a failover report.
type leaderView struct {
	// first is when each agent first reported its current leader, in
	// this streak of equal answers.
	first map[string]time.Duration
	// leader is each agent's latest answer ("" while it knows none).
	leader map[string]string
}

// observe records that agent reported leader at elapsed.
func (v *leaderView) observe(agent, leader string, elapsed time.Duration) {
	if v.leader == nil {
		v.leader, v.first = map[string]string{}, map[string]time.Duration{}
	}
	if cur, ok := v.leader[agent]; !ok || cur != leader {
		v.leader[agent], v.first[agent] = leader, elapsed
	}
}

// agreed reports whether every one of agents names the same leader, not
// old and not empty, and if so which, the first time one of them named
// it and the time by which all had.
func (v *leaderView) agreed(agents []string, old string) (leader string, first, all time.Duration, ok bool) {
	for i, a := range agents {
		l, seen := v.leader[a]
		if !seen || l == "" || l == old || (i > 0 && l != leader) {
			return "", 0, 0, false
		}
		leader = l
		t := v.first[a]
		if i == 0 || t < first {
			first = t
		}
		all = max(all, t)
	}
	return leader, first, all, len(agents) > 0
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
