package scale

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
)

func TestParseStatTicks(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{in: "1234 (shoal) S 1 1234 1234 0 -1 4194560 5000 0 0 0 250 75 0 0 20 0 12 0 100 0 0", want: 325},
		{in: "7 (a b) c)) R 1 7 7 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0", want: 7},
		{in: "1234 shoal S 1", wantErr: true},
		{in: "1234 (shoal) S 1 2 3", wantErr: true},
		{in: "1234 (shoal) S 1 1234 1234 0 -1 4194560 5000 0 0 0 x 75 0", wantErr: true},
	} {
		got, err := parseStatTicks(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseStatTicks(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseVmRSS(t *testing.T) {
	got, err := parseVmRSS("Name:\tshoal\nVmPeak:\t  9000 kB\nVmRSS:\t   34816 kB\nThreads:\t12\n")
	if err != nil || got != 34816*1024 {
		t.Errorf("parseVmRSS = %d, %v; want %d", got, err, 34816*1024)
	}
	for _, bad := range []string{"Name:\tshoal\n", "VmRSS:\t12 MB\n", "VmRSS:\tx kB\n"} {
		if _, err := parseVmRSS(bad); err == nil {
			t.Errorf("parseVmRSS(%q): no error", bad)
		}
	}
}

func TestParseLoopbackBytes(t *testing.T) {
	const dev = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 123456789  1000    0    0    0     0          0         0 123456789  1000    0    0    0     0       0          0
  eth0:    999     9    0    0    0     0          0         0      999     9    0    0    0     0       0          0
`
	got, err := parseLoopbackBytes(dev)
	if err != nil || got != 123456789 {
		t.Errorf("parseLoopbackBytes = %d, %v; want 123456789", got, err)
	}
	if _, err := parseLoopbackBytes("  eth0: 1 2 3\n"); err == nil {
		t.Error("no lo: no error")
	}
}

func TestParseSSAndDelta(t *testing.T) {
	const before = `ESTAB 0      0      127.0.0.1:7001 127.0.0.1:40000 users:(("shoal",pid=42,fd=18))
	 bbr wscale:10,10 rto:216 bytes_sent:1000 bytes_acked:1000 bytes_received:500 segs_out:10
ESTAB 0      0      127.0.0.1:40000 127.0.0.1:7001 users:(("shoal",pid=43,fd=9))
	 bbr bytes_sent:500 bytes_received:1000
ESTAB 0      0      127.0.0.1:7002 127.0.0.1:40002 users:(("shoal",pid=42,fd=19))
	 bbr bytes_sent:10 bytes_received:10
ESTAB 0      0      127.0.0.1:7003 127.0.0.1:40003 users:(("shoal",pid=420,fd=19))
	 bbr bytes_sent:77 bytes_received:77
`
	const after = `ESTAB 0      0      127.0.0.1:7001 127.0.0.1:40000 users:(("shoal",pid=42,fd=18))
	 bbr bytes_sent:1600 bytes_acked:1600 bytes_received:900
ESTAB 0      0      127.0.0.1:7009 127.0.0.1:40009 users:(("shoal",pid=42,fd=20))
	 bbr bytes_sent:30 bytes_received:20
`
	b, a := parseSS(before, 42), parseSS(after, 42)
	if len(b) != 2 || b["127.0.0.1:7001 127.0.0.1:40000"] != (tcpBytes{1000, 500}) {
		t.Errorf("parseSS(before) = %v", b)
	}
	// 600+400 on the kept socket, 50 on the new one; the closed one is lost.
	if got := tcpDelta(b, a); got != 1050 {
		t.Errorf("tcpDelta = %d; want 1050", got)
	}
}

// TestParseSSPorts picks one agent's sockets out of a process of many:
// those on its own ports, and those to a peer's raft port.
func TestParseSSPorts(t *testing.T) {
	const out = `ESTAB 0 0 127.0.0.1:7001 127.0.0.1:40000 users:(("shoal",pid=42,fd=18))
	 bytes_sent:100 bytes_received:50
ESTAB 0 0 127.0.0.1:40000 127.0.0.1:7001 users:(("shoal",pid=42,fd=9))
	 bytes_sent:50 bytes_received:100
ESTAB 0 0 127.0.0.1:41000 127.0.0.1:8002 users:(("shoal",pid=42,fd=10))
	 bytes_sent:7 bytes_received:3
ESTAB 0 0 127.0.0.1:8002 127.0.0.1:41000 users:(("shoal",pid=42,fd=11))
	 bytes_sent:3 bytes_received:7
ESTAB 0 0 127.0.0.1:42000 127.0.0.1:9009 users:(("shoal",pid=42,fd=12))
	 bytes_sent:1 bytes_received:1
ESTAB 0 0 [::1]:7001 [::1]:43000 users:(("shoal",pid=42,fd=13))
	 bytes_sent:2 bytes_received:2
`
	got := parseSSPorts(out, sockFilter{local: map[int]bool{7001: true}, peer: map[int]bool{8002: true}})
	want := map[string]tcpBytes{
		"127.0.0.1:7001 127.0.0.1:40000": {100, 50},
		"127.0.0.1:41000 127.0.0.1:8002": {7, 3},
		"[::1]:7001 [::1]:43000":         {2, 2},
	}
	if len(got) != len(want) {
		t.Fatalf("parseSSPorts = %v; want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("parseSSPorts[%q] = %v; want %v", k, got[k], v)
		}
	}
}

func FuzzParseSS(f *testing.F) {
	f.Add("ESTAB 0 0 a:1 b:2 users:((\"x\",pid=1,fd=2))\n\t bytes_sent:1 bytes_received:2\n", 1)
	f.Fuzz(func(t *testing.T, out string, pid int) {
		_ = parseSS(out, pid)
		_ = parseSSPorts(out, sockFilter{local: map[int]bool{pid: true}, peer: map[int]bool{pid: true}})
		_, _ = parseStatTicks(out)
		_, _ = parseVmRSS(out)
		_, _ = parseLoopbackBytes(out)
	})
}

func TestLayout(t *testing.T) {
	nodes := []api.Node{
		{Name: "n1", Raft: "leader", State: "IDLE"},
		{Name: "n2", Raft: "voter", State: "IDLE"},
		{Name: "n3", Raft: "voter", State: "MIXED"},
		{Name: "n4", Raft: "nonvoter", State: "IDLE"},
		{Name: "n5", Raft: "none", State: "IDLE"},
		{Name: "n6", Raft: "nonvoter", State: "DOWN"},
	}
	l := CountLayout(nodes)
	if want := (Layout{Voters: 3, Nonvoters: 2, Workers: 1, Up: 5, Servers: []string{"n1", "n2", "n3", "n4", "n6"}}); !reflect.DeepEqual(l, want) {
		t.Fatalf("CountLayout = %+v; want %+v", l, want)
	}
	for _, tc := range []struct {
		nodes, voters, servers int
		want                   bool
	}{
		{6, 3, 5, false}, // one node is down
		{5, 3, 5, true},
		{5, 5, 5, false},
		{5, 3, 6, false},
	} {
		if got := Settled(l, tc.nodes, tc.voters, tc.servers); got != tc.want {
			t.Errorf("Settled(%+v, %d, %d, %d) = %v; want %v", l, tc.nodes, tc.voters, tc.servers, got, tc.want)
		}
	}
}

func TestDefaultVoters(t *testing.T) {
	for n, want := range map[int]int{1: 1, 2: 1, 3: 3, 4: 3, 5: 5, 100: 5, 1000: 5} {
		if got := DefaultVoters(n); got != want {
			t.Errorf("DefaultVoters(%d) = %d; want %d", n, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := Summarize(ds)
	want := Dist{N: 100, P50: 0.0505, P99: 0.099, Min: 0.001, Max: 0.1}
	if got != want {
		t.Errorf("Summarize(1..100 ms) = %+v; want %+v", got, want)
	}
	if got := Summarize([]time.Duration{3 * time.Second}); got != (Dist{N: 1, P50: 3, P99: 3, Min: 3, Max: 3}) {
		t.Errorf("Summarize(3s) = %+v", got)
	}
	if got := Summarize(nil); got != (Dist{}) {
		t.Errorf("Summarize(nil) = %+v", got)
	}
}

func TestLeaderView(t *testing.T) {
	ms := time.Millisecond
	var v leaderView
	agents := []string{"n2", "n3", "n4"}
	v.observe("n2", "n1", 10*ms) // still names the dead leader
	v.observe("n3", "", 20*ms)
	v.observe("n4", "n3", 30*ms)
	if _, _, _, ok := v.agreed(agents, "n1"); ok {
		t.Fatal("agreed while n2 names the old leader")
	}
	v.observe("n2", "n3", 40*ms)
	v.observe("n3", "n3", 50*ms)
	v.observe("n4", "n3", 60*ms) // same answer: keeps its first time
	l, first, all, ok := v.agreed(agents, "n1")
	if !ok || l != "n3" || first != 30*ms || all != 50*ms {
		t.Errorf("agreed = %q %v %v %v; want n3 30ms 50ms true", l, first, all, ok)
	}
	v.observe("n4", "n2", 70*ms)
	if _, _, _, ok := v.agreed(agents, "n1"); ok {
		t.Error("agreed while n4 names another leader")
	}
	if _, _, _, ok := v.agreed(nil, "n1"); ok {
		t.Error("agreed with no agents")
	}
}

// TestSampleValue reads an unlabelled sample from an exposition, not a
// longer name's, and says which is missing or malformed.
func TestSampleValue(t *testing.T) {
	const exp = "# HELP shoal_lease_renewals_total x\n# TYPE shoal_lease_renewals_total counter\n" +
		"shoal_lease_renewals_total_x 9\nshoal_lease_renewals_total 1234\nshoal_node_lease_ttl_seconds 60\nbad 1e\n"
	for _, tc := range []struct {
		name string
		want float64
		err  string
	}{
		{"shoal_lease_renewals_total", 1234, ""},
		{"shoal_node_lease_ttl_seconds", 60, ""},
		{"shoal_missing", 0, "not in the exposition"},
		{"bad", 0, `"bad 1e"`},
	} {
		got, err := sampleValue(exp, tc.name)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("sampleValue(%s) = %v, %v; want an error with %q", tc.name, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("sampleValue(%s) = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
