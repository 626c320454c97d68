package topology

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func ibFixture(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIBPlace(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fixture string
		local   []uint64
		leaf    string
		parent  string
	}{
		// Every leaf is cabled to both spines; spine02 has the lower GUID.
		{"host by node guid", "fattree.txt", []uint64{0x0c42a10300b1c2d0}, "leaf01", "spine02"},
		{"host by port guid", "fattree.txt", []uint64{0x0c42a10300b1c2e1}, "leaf01", "spine02"},
		{"third leaf", "fattree.txt", []uint64{0x0c42a10300b1c310, 0x0c42a10300b1c311}, "leaf03", "spine02"},
		// leaf04 has its factory description: it is named by its GUID.
		{"unnamed leaf", "fattree.txt", []uint64{0x0c42a10300b1c341}, "0x1070fd0300c2a400", "spine02"},
		// Two rails on two leaves: the lowest leaf GUID, whatever the order.
		{"two rails", "fattree.txt", []uint64{0x0c42a10300b1c331, 0x0c42a10300b1c2d1}, "leaf01", "spine02"},
		{"not in the fabric", "fattree.txt", []uint64{0x1234}, "", ""},
		{"a switch's own guid", "fattree.txt", []uint64{0x1070fd0300c2a100}, "", ""},
		{"no guid", "fattree.txt", nil, "", ""},
		{"one switch", "oneswitch.txt", []uint64{0x98039b0300f1a0c1}, "ibsw1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseIBNetDiscover(ibFixture(t, tc.fixture))
			if err != nil {
				t.Fatal(err)
			}
			leaf, parent := f.IBPlace(tc.local)
			if leaf != tc.leaf || parent != tc.parent {
				t.Errorf("IBPlace(%x) = %q, %q; want %q, %q", tc.local, leaf, parent, tc.leaf, tc.parent)
			}
		})
	}
}

func TestParseIBNetDiscoverFabric(t *testing.T) {
	f, err := ParseIBNetDiscover(ibFixture(t, "fattree.txt"))
	if err != nil {
		t.Fatal(err)
	}
	hosts := 0
	for _, n := range f.Nodes {
		if n.Kind == 'H' {
			hosts++
		}
	}
	if got := len(f.Switches()); got != 6 || hosts != 8 {
		t.Errorf("%d switches, %d hosts; want 6 and 8", got, hosts)
	}
	// 8 host cables and 16 leaf-spine cables, each seen from both ends.
	if len(f.links) != 2*(8+16) {
		t.Errorf("%d port ends linked; want %d", len(f.links), 2*(8+16))
	}
	names := f.SwitchNames()
	for g, want := range map[uint64]string{0xb83fd203004a1e00: "spine01", 0xb83fd203004a0f80: "spine02", 0x1070fd0300c2a300: "leaf03"} {
		if names[g] != want {
			t.Errorf("switch %016x named %q; want %q", g, names[g], want)
		}
	}
}

func TestSwitchDescName(t *testing.T) {
	for desc, want := range map[string]string{
		"MF0;leaf01:MQM8700/U1":            "leaf01",
		"MF0;ib-sw.rack3:MSB7800/U1":       "ib-sw.rack3",
		"edge12":                           "edge12",
		"Quantum Mellanox Technologies":    "",
		"SwitchX -  Mellanox Technologies": "",
		"MF0;:MQM8700/U1":                  "",
		"12345":                            "",
		"":                                 "",
		"a,b":                              "",
	} {
		if got := switchDescName(desc); got != want {
			t.Errorf("switchDescName(%q) = %q; want %q", desc, got, want)
		}
	}
}

func TestSwitchNamesDuplicateDesc(t *testing.T) {
	text := `Switch	8 "S-0000000000000001"		# "MF0;sw:MQM8700/U1" enhanced port 0 lid 1 lmc 0
[1]	"S-0000000000000002"[1]		# "MF0;sw:MQM8700/U1" lid 2 4xHDR
Switch	8 "S-0000000000000002"		# "MF0;sw:MQM8700/U1" enhanced port 0 lid 2 lmc 0
[1]	"S-0000000000000001"[1]		# "MF0;sw:MQM8700/U1" lid 1 4xHDR
`
	f, err := ParseIBNetDiscover(text)
	if err != nil {
		t.Fatal(err)
	}
	names := f.SwitchNames()
	if names[1] != "0x0000000000000001" || names[2] != "0x0000000000000002" {
		t.Errorf("two switches described alike are named %q and %q; want their GUIDs", names[1], names[2])
	}
}

func TestParseIBNetDiscoverErrors(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`[1]	"S-0000000000000002"[1]`, "line 1: port line before any Switch"},
		{"Switch\t8 \"X-0000000000000001\"", `type 'X'`},
		{"Switch\t8 \"S-zz\"", "not a nonzero 64-bit hex"},
		{"Switch\teight \"S-0000000000000001\"", "port count"},
		{"Ca\t1 \"S-0000000000000001\"", "a Ca named"},
		{"Switch\t8 \"S-0000000000000001\"\n[x]\t\"S-0000000000000002\"[1]", "line 2: \"[x]"},
		{"Switch\t8 \"S-0000000000000001\"\n[1]\t\"S-0000000000000002\"", "line 2"},
		{"Switch\t8 \"S-0000000000000001\"\n[1]\tS-0000000000000002[1]", "want the remote node"},
		{"Switch\t8 \"S-0000000000000001\"\n[1]\t\"S-0000000000000002\"[1] junk", "unexpected"},
		{"Switch\t8 \"S-0000000000000001\"\n[1]\t\"H-0000000000000002\"[1](zz)", "remote port GUID"},
		{"Switch\t8 \"S-0000000000000001\"\nCa\t1 \"H-0000000000000001\"", "both S and H"},
	} {
		_, err := ParseIBNetDiscover(tc.text)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseIBNetDiscover(%q) = %v; want an error with %q", tc.text, err, tc.want)
		}
	}
}

func TestParseSysfsGUID(t *testing.T) {
	if g, err := parseSysfsGUID("0c42:a103:00b1:c2d0\n"); err != nil || g != 0x0c42a10300b1c2d0 {
		t.Errorf("parseSysfsGUID = %x, %v", g, err)
	}
	if g, err := parseSysfsGID("fe80:0000:0000:0000:0c42:a103:00b1:c2d1\n"); err != nil || g != 0x0c42a10300b1c2d1 {
		t.Errorf("parseSysfsGID = %x, %v", g, err)
	}
	for _, bad := range []string{"", "0c42:a103:00b1", "0c42:a103:00b1:c2dg", "0000:0000:0000:0000", "c42:a103:00b1:c2d0"} {
		if _, err := parseSysfsGUID(bad); err == nil {
			t.Errorf("parseSysfsGUID(%q) succeeded", bad)
		}
	}
}

// fakeIBSysfs writes /sys/class/infiniband for one device with the
// given ports: link layer, state and GID 0.
func fakeIBSysfs(t *testing.T, nodeGUID string, ports ...[3]string) string {
	t.Helper()
	root := t.TempDir()
	dev := filepath.Join(root, "mlx5_0")
	write := func(path, text string) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dev, "node_guid"), nodeGUID)
	for i, p := range ports {
		dir := filepath.Join(dev, "ports", string(rune('1'+i)))
		write(filepath.Join(dir, "link_layer"), p[0])
		write(filepath.Join(dir, "state"), p[1])
		write(filepath.Join(dir, "gids", "0"), p[2])
	}
	return root
}

func TestIBSource(t *testing.T) {
	fixture, err := filepath.Abs(filepath.Join("testdata", "fattree.txt"))
	if err != nil {
		t.Fatal(err)
	}
	src := NewIBSource()
	// A real program prints the recorded sweep; it is given -C and -P.
	src.command = []string{"sh", "-c", `[ "$1 $2 $3 $4" = "-C mlx5_0 -P 1" ] || exit 3; cat "$0"`, fixture}
	src.sysfs = fakeIBSysfs(t, "0c42:a103:00b1:c2f0", [3]string{"InfiniBand", "4: ACTIVE", "fe80:0000:0000:0000:0c42:a103:00b1:c2f1"})
	got, err := src.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (Found{Source: SourceIB, Leaf: "leaf02", Parent: "spine02"}); got != want {
		t.Errorf("Discover = %+v; want %+v", got, want)
	}

	// No InfiniBand: no sysfs directory, or only RoCE or inactive ports.
	for name, sysfs := range map[string]string{
		"no sysfs": filepath.Join(t.TempDir(), "absent"),
		"roce":     fakeIBSysfs(t, "0c42:a103:00b1:c2f0", [3]string{"Ethernet", "4: ACTIVE", "fe80:0000:0000:0000:0e42:a1ff:feb1:c2f1"}),
		"down":     fakeIBSysfs(t, "0c42:a103:00b1:c2f0", [3]string{"InfiniBand", "1: DOWN", "fe80:0000:0000:0000:0c42:a103:00b1:c2f1"}),
	} {
		src := NewIBSource()
		src.command = []string{"false"}
		src.sysfs = sysfs
		if got, err := src.Discover(context.Background()); err != nil || got != (Found{}) {
			t.Errorf("%s: Discover = %+v, %v; want nothing and no error", name, got, err)
		}
	}

	// InfiniBand but no ibnetdiscover, a failing one, a node not in its fabric.
	for name, cmd := range map[string][]string{
		"not installed": {"/nonexistent/ibnetdiscover"},
		"fails":         {"sh", "-c", "echo ibwarn: no SM >&2; exit 1"},
		"elsewhere":     {"sh", "-c", `cat "$0"`, filepath.Join(filepath.Dir(fixture), "oneswitch.txt")},
	} {
		src := NewIBSource()
		src.command = cmd
		src.sysfs = fakeIBSysfs(t, "0c42:a103:00b1:c2f0", [3]string{"InfiniBand", "4: ACTIVE", "fe80:0000:0000:0000:0c42:a103:00b1:c2f1"})
		if got, err := src.Discover(context.Background()); err == nil {
			t.Errorf("%s: Discover = %+v; want an error", name, got)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}

func FuzzParseIBNetDiscover(f *testing.F) {
	f.Add(ibFixture(f, "fattree.txt"))
	f.Add(ibFixture(f, "oneswitch.txt"))
	f.Add("Switch\t8 \"S-0000000000000001\"\n[1]\t\"H-0000000000000002\"[1](3)\t\t# \"h\" lid 1 4xHDR\n")
	f.Fuzz(func(t *testing.T, text string) {
		fab, err := ParseIBNetDiscover(text)
		if err != nil {
			return
		}
		var local []uint64
		for g := range fab.Nodes {
			local = append(local, g, g+1)
			if len(local) > 16 {
				break
			}
		}
		leaf, parent := fab.IBPlace(local)
		if leaf == "" && parent != "" {
			t.Errorf("parent %q without a leaf", parent)
		}
		if leaf != "" && leaf == parent {
			t.Errorf("switch %q is its own parent", leaf)
		}
	})
}
