package node

import (
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/gossip"
	"github.com/shoal-sched/shoal/httpapi"
	"github.com/shoal-sched/shoal/pki"
)

func validConfig() Config {
	c := Config{Name: "n1", DataDir: "/tmp/x"}
	c.setDefaults()
	return c
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // "" for valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"empty name", func(c *Config) { c.Name = "" }, "--name: empty"},
		{"name with space", func(c *Config) { c.Name = "a b" }, `--name "a b"`},
		{"name starting with dash", func(c *Config) { c.Name = "-a" }, `--name "-a"`},
		{"name too long", func(c *Config) { c.Name = strings.Repeat("a", 64) }, "--name"},
		{"dotted name", func(c *Config) { c.Name = "gpu-01.rack2" }, ""},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "--data-dir: empty"},
		{"bind not an IP", func(c *Config) { c.BindAddr = "host" }, `--bind "host"`},
		{"advertise not an IP", func(c *Config) { c.AdvertiseAddr = "x" }, `--advertise "x"`},
		{"negative expect", func(c *Config) { c.BootstrapExpect = -1 }, "--bootstrap-expect -1"},
		{"no raft seat, joining", func(c *Config) { c.RaftIneligible, c.Join = true, []string{"10.0.0.1"} }, ""},
		{"no raft seat, alone", func(c *Config) { c.RaftIneligible = true }, "--raft-eligible=false: want --join"},
		{"no raft seat, bootstrapping", func(c *Config) { c.RaftIneligible, c.Join, c.BootstrapExpect = true, []string{"10.0.0.1"}, 3 },
			"--raft-eligible=false: want --join and no --bootstrap-expect"},
		{"lease shorter than 3 heartbeats", func(c *Config) { c.LeaseTTL = 2 * time.Second }, "--lease-ttl 2s"},
		{"negative renewals a second", func(c *Config) { c.RenewalsPerSecond = -1 }, "--lease-renewals-per-second -1"},
		{"port zero", func(c *Config) { c.RaftPort = 70000 }, "--raft-port 70000"},
		{"negative cpus", func(c *Config) { c.CPUs = -4 }, "--cpus -4"},
		{"task hostname off", func(c *Config) { c.TaskHostname = TaskHostnameOff }, ""},
		{"task hostname unknown", func(c *Config) { c.TaskHostname = "yes" }, `--task-hostname "yes"`},
		{"cgroups required", func(c *Config) { c.Cgroups = CgroupsRequired }, ""},
		{"cgroups unknown", func(c *Config) { c.Cgroups = "on" }, `--cgroups "on"`},
		{"negative pids max", func(c *Config) { c.TaskPidsMax = -1 }, "--task-pids-max -1"},
		{"layout matching cpus", func(c *Config) { c.CPUs, c.Sockets, c.CoresPerSocket, c.ThreadsPerCore = 16, 2, 4, 2 }, ""},
		{"layout not matching cpus", func(c *Config) { c.CPUs, c.Sockets, c.CoresPerSocket, c.ThreadsPerCore = 12, 2, 4, 2 },
			"--cpus 12: want --sockets × --cores-per-socket × --threads-per-core = 2×4×2 = 16"},
		{"partial layout", func(c *Config) { c.CPUs, c.Sockets, c.CoresPerSocket = 8, 2, 4 }, "--threads-per-core 0"},
		{"negative sockets", func(c *Config) { c.CPUs, c.Sockets, c.CoresPerSocket, c.ThreadsPerCore = 8, -2, 4, 1 }, "--sockets -2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig()
			tc.change(&c)
			err := c.validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("validate() = %v; want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("validate() = %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestTaskNamespaceChoice covers the cases of --task-hostname that do not
// depend on root: off, auto on a host named as the node, on without a
// helper, auto without a helper.
func TestTaskNamespaceChoice(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip("no host name:", err)
	}
	short, _, _ := strings.Cut(host, ".")
	helper := []string{"/nonexistent/shoal", "__task-namespace"}
	tests := []struct {
		name, setting, node string
		helper              []string
		wantErr             bool
	}{
		{"off", TaskHostnameOff, "n1", helper, false},
		{"auto, host named as the node", TaskHostnameAuto, short, helper, false},
		{"auto, no helper", TaskHostnameAuto, "n1-" + short, nil, false},
		{"on, no helper", TaskHostnameOn, "n1", nil, true},
		{"on, helper that cannot run", TaskHostnameOn, "n1", helper, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			c.Name, c.TaskHostname, c.TaskHelper = tt.node, tt.setting, tt.helper
			got, err := c.taskNamespace(slog.New(slog.DiscardHandler))
			if (err != nil) != tt.wantErr || got != nil {
				t.Errorf("taskNamespace() = %q, %v; want nil and an error: %v", got, err, tt.wantErr)
			}
		})
	}
}

func TestConfigDefaultsAdvertise(t *testing.T) {
	c := Config{Name: "n", DataDir: "d", BindAddr: "0.0.0.0"}
	c.setDefaults()
	if c.AdvertiseAddr != "127.0.0.1" {
		t.Errorf("advertise for bind 0.0.0.0 = %q; want 127.0.0.1", c.AdvertiseAddr)
	}
	if c.HTTPPort != 7070 || c.RaftPort != 7071 || c.GossipPort != 7072 {
		t.Errorf("default ports = %d/%d/%d; want 7070/7071/7072", c.HTTPPort, c.RaftPort, c.GossipPort)
	}
}

// TestResolveCaller: identity comes only from what a sender cannot forge
// (issue 12, hole 1): declared headers are believed only from a peer with a
// node certificate naming the node that says it forwarded them.
func TestResolveCaller(t *testing.T) {
	ca, err := pki.NewCA("test", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert := func(name string, ca *pki.CA) *x509.Certificate {
		key, _ := pki.NewNodeKey()
		c, err := ca.SignNode(pki.NodeRequest{Name: name, PublicKey: &key.PublicKey}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	key, _ := pki.NewNodeKey()
	own, _ := ca.SignNode(pki.NodeRequest{Name: "n1", PublicKey: &key.PublicKey}, time.Now())
	b, err := pki.NewBundle(ca, tls.Certificate{Certificate: [][]byte{own.Raw}, PrivateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	rogueCA, _ := pki.NewCA("rogue", time.Now())
	secure, insecure := &Agent{sec: &security{bundle: b}}, &Agent{sec: &security{}}
	tests := []struct {
		name       string
		agent      *Agent
		remote     string
		peer       *x509.Certificate
		declare    bool
		forwarded  string
		wantProven bool
		wantUID    int
		wantNode   string
	}{
		{"loopback declared", secure, "127.0.0.1:5000", nil, true, "", false, -1, ""},
		{"remote declared and forwarded, no certificate", secure, "10.1.2.3:5000", nil, true, "n2", false, -1, ""},
		{"node forwarding what it proved", secure, "10.1.2.3:5000", cert("n2", ca), true, "n2", true, 1000, "n2"},
		{"node claiming another node forwarded", secure, "10.1.2.3:5000", cert("n2", ca), true, "n3", false, -1, "n2"},
		{"node, not forwarding", secure, "10.1.2.3:5000", cert("n2", ca), true, "", false, -1, "n2"},
		{"another CA's node", secure, "10.1.2.3:5000", cert("n2", rogueCA), true, "n2", false, -1, ""},
		{"insecure: forwarded", insecure, "10.1.2.3:5000", nil, true, "n2", true, 1000, "n2"},
		{"insecure: loopback declared", insecure, "127.0.0.1:5000", nil, true, "", false, -1, ""},
		{"socket: root acting as a user", secure, "@", nil, true, "", true, 1000, ""},
		{"socket: a user declaring another", secure, "@", nil, true, "", true, 1001, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "/v1/jobs", nil)
			r.RemoteAddr = tc.remote
			if tc.declare {
				r.Header.Set(api.HeaderUser, "ada")
				r.Header.Set(api.HeaderUID, "1000")
				r.Header.Set(api.HeaderGID, "100")
			}
			if tc.forwarded != "" {
				r.Header.Set(api.HeaderForwardedBy, tc.forwarded)
			}
			if tc.peer != nil {
				r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{tc.peer}}
			}
			if tc.remote == "@" { // the Unix socket, as httpapi.PeerCredConnContext marks it
				uid := 0
				if tc.name == "socket: a user declaring another" {
					uid = 1001
				}
				r = httpapi.WithCaller(r, httpapi.Caller{Identity: api.Identity{UID: uid}, Proven: true, How: "peercred", Local: true})
			}
			c := httpapi.ResolveCaller(apiBackend{tc.agent}, r)
			if c.Proven != tc.wantProven || c.UID != tc.wantUID || c.Node != tc.wantNode {
				t.Errorf("resolveCaller = %+v; want proven %v uid %d node %q", c, tc.wantProven, tc.wantUID, tc.wantNode)
			}
		})
	}
}

func TestSpecOfDefaults(t *testing.T) {
	s, err := specOf(api.SubmitRequest{Command: []string{"/usr/bin/python3", "x.py"}, TimeLimitS: 60, Begin: "2026-11-25T15:00:00+01:00"},
		cluster.Identity{User: "ada", UID: 1000, GID: 100, Proven: true})
	if err != nil || !s.Begin.Equal(time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)) {
		t.Errorf("specOf: begin %v, err %v; want 14:00 UTC", s.Begin, err)
	}
	if s.Name != "python3" || s.Request.Nodes != 1 || s.Request.TasksPerNode != 1 || s.Request.CPUsPerTask != 1 ||
		s.Request.TimeLimit != time.Minute || s.User != "ada" || s.UID != 1000 {
		t.Errorf("specOf = %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Errorf("defaulted spec invalid: %v", err)
	}
	if _, err := specOf(api.SubmitRequest{Command: []string{"x"}, Begin: "tomorrow"}, cluster.Identity{}); err == nil || !strings.Contains(err.Error(), "begin") {
		t.Errorf("begin tomorrow: %v; want refused naming begin", err)
	}
	neg, _ := specOf(api.SubmitRequest{Command: []string{"x"}, Nodes: -1}, cluster.Identity{})
	if err := neg.Validate(); err == nil || !strings.Contains(err.Error(), "nodes -1") {
		t.Errorf("negative nodes: Validate = %v; want an error naming nodes", err)
	}
}

func TestSameAnnouncement(t *testing.T) {
	base := cluster.Node{Name: "n1", APIAddr: "a:1", CPUs: 8, GPUs: []cluster.GPU{{Index: 0, UUID: "u", NVLinkPeers: []int{1}}},
		Topology: cluster.Topology{Switch: "leaf0"}}
	same := *base.Clone()
	same.Status, same.ModifyIndex, same.Drain = cluster.NodeDown, 99, true // not announced by the node
	if !sameAnnouncement(&base, &same) {
		t.Errorf("status/index/drain differences count as a new announcement")
	}
	for name, change := range map[string]func(*cluster.Node){
		"address":  func(n *cluster.Node) { n.APIAddr = "b:1" },
		"cpus":     func(n *cluster.Node) { n.CPUs = 16 },
		"switch":   func(n *cluster.Node) { n.Topology.Switch = "leaf1" },
		"gpu uuid": func(n *cluster.Node) { n.GPUs[0].UUID = "v" },
		"nvlink":   func(n *cluster.Node) { n.GPUs[0].NVLinkPeers = nil },
		"gpu gone": func(n *cluster.Node) { n.GPUs = nil },
	} {
		c := base.Clone()
		change(c)
		if sameAnnouncement(&base, c) {
			t.Errorf("%s changed but sameAnnouncement = true", name)
		}
	}
}

// TestRaftMembers: the membership loop sees gossip's suspect members as
// alive (a suspicion is not a failure) and a graceful leave as left.
func TestRaftMembers(t *testing.T) {
	got := raftMembers([]gossip.Member{
		{Name: "a", Status: gossip.StatusAlive, Meta: gossip.Meta{RaftAddr: "a:1", Switch: "leaf0"}},
		{Name: "b", Status: gossip.StatusSuspect},
		{Name: "c", Status: gossip.StatusFailed},
		{Name: "d", Status: gossip.StatusLeft},
	})
	want := []consensus.Member{
		{ID: "a", RaftAddr: "a:1", Switch: "leaf0", Alive: true},
		{ID: "b", Alive: true},
		{ID: "c"},
		{ID: "d", Left: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("raftMembers = %+v; want %+v", got, want)
	}
}

// TestRaftSeat: a node that may not hold a raft seat announces no raft
// address, so bootstrap and the leader's membership plan pass it over
// (consensus.Candidates) and it stays a worker (DESIGN: membership and
// roles).
func TestRaftSeat(t *testing.T) {
	c := validConfig()
	if got, want := c.raftSeat(), c.raftAdvert(); got != want {
		t.Fatalf("raftSeat() = %q; want %q", got, want)
	}
	c.RaftIneligible = true
	if got := c.raftSeat(); got != "" {
		t.Fatalf("raftSeat() with RaftIneligible = %q; want none", got)
	}
}
