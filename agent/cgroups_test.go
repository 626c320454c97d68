package agent

import (
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/cgroup"
)

// Two agents on one machine, even two clusters' agents of the same name,
// get trees of their own; a restarted agent finds its own again.
func TestCgroupTreeKey(t *testing.T) {
	a := Config{Name: "n1", DataDir: "/var/lib/shoal-a"}
	b := Config{Name: "n1", DataDir: "/var/lib/shoal-b"}
	again := Config{Name: "n1", DataDir: "/var/lib/shoal-a"}
	if a.treeKey() == b.treeKey() {
		t.Errorf("treeKey of two data dirs = %q for both", a.treeKey())
	}
	if a.treeKey() != again.treeKey() || !strings.HasPrefix(a.treeKey(), "n1_") {
		t.Errorf("treeKey = %q, then %q; want the same, named after the node", a.treeKey(), again.treeKey())
	}
}

// --cgroups off confines nothing; auto and required, as root on a host
// with a hierarchy, make the agent's tree and hand its root to exec.
func TestCgroupsChoice(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	c := validConfig()
	c.Cgroups, c.DataDir = CgroupsOff, t.TempDir()
	if s, err := c.cgroups(log); err != nil || s.root != nil {
		t.Fatalf("--cgroups=off: %+v, %v; want nothing", s, err)
	}
	if os.Geteuid() != 0 {
		c.Cgroups = CgroupsRequired
		if _, err := c.cgroups(log); err == nil || !strings.Contains(err.Error(), "--cgroups=required") {
			t.Errorf("--cgroups=required, not root: %v; want refused", err)
		}
		c.Cgroups = CgroupsAuto
		if s, err := c.cgroups(log); err != nil || s.root != nil {
			t.Errorf("--cgroups=auto, not root: %+v, %v; want nothing, no error", s, err)
		}
		return
	}
	if _, err := cgroup.Detect("probe"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no usable cgroup hierarchy: %v", err)
		}
		t.Skip(err)
	}
	c.Cgroups = CgroupsAuto
	s, err := c.cgroups(log)
	if err != nil || s.root == nil || len(s.hostCPUs) == 0 {
		t.Fatalf("--cgroups=auto as root: %+v, %v; want a tree and the host's CPUs", s, err)
	}
	t.Cleanup(func() { removeCgroupTree(s.root, log) })
	for _, d := range s.root.Dirs {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("tree directory: %v", err)
		}
		if !strings.Contains(d, cgroup.TreeName(c.treeKey())) {
			t.Errorf("tree directory %s: want it named %s", d, cgroup.TreeName(c.treeKey()))
		}
	}
	removeCgroupTree(s.root, log)
	for _, d := range s.root.Dirs {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("tree directory %s after removal: %v", d, err)
		}
	}
}
