package agent

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/consensus"
	"github.com/shoal-sched/shoal/gossip"
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
