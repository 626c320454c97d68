package topology

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fakeLLDPCLI writes a shell script standing in for lldpcli.
func fakeLLDPCLI(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lldpcli")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLLDPSource runs the source against stand-ins for lldpcli: what it
// gets from a working lldpd, and that a host without lldpd finds nothing
// where a failing lldpd is an error.
func TestLLDPSource(t *testing.T) {
	fixture, err := filepath.Abs(filepath.Join("testdata", "lldp", "node-one.json"))
	if err != nil {
		t.Fatal(err)
	}
	hostIfaces := func() (map[string][]netip.Addr, error) {
		return map[string][]netip.Addr{
			"lo":   {netip.MustParseAddr("127.0.0.1")},
			"eth0": {netip.MustParseAddr("10.88.0.2")},
			"eth1": {netip.MustParseAddr("192.168.1.2")},
		}, nil
	}
	addr := netip.MustParseAddr("10.88.0.2")
	tests := []struct {
		name    string
		script  string // "" : no lldpcli at all
		addr    netip.Addr
		socket  string
		want    string
		wantErr bool
	}{
		{name: "leaf on the cluster interface", script: `exec cat ` + fixture, addr: addr, want: "leafA"},
		{name: "socket given", script: `[ "$3 $4" = "-u /run/x.sock" ] || exit 3; exec cat ` + fixture, addr: addr, socket: "/run/x.sock", want: "leafA"},
		{name: "neighbour on another interface", script: `exec cat ` + fixture, addr: netip.MustParseAddr("192.168.1.2")},
		{name: "address on no interface", script: `exit 9`, addr: netip.MustParseAddr("10.9.9.9")},
		{name: "loopback address: lldpcli not run", script: `exit 9`, addr: netip.MustParseAddr("127.0.0.1")},
		{name: "no address", script: `exit 9`},
		{name: "no lldpcli", addr: addr},
		{name: "no lldpd", script: `echo "2026-11-25T18:16:28 [WARN/control] unable to connect to socket /run/lldpd.socket: No such file or directory" >&2; exit 1`, addr: addr},
		{name: "no neighbours", script: `printf '{\n  "lldp": {\n  }\n}\n'`, addr: addr},
		{name: "lldpcli fails", script: `echo "permission denied" >&2; exit 1`, addr: addr, wantErr: true},
		{name: "lldpcli says nonsense", script: `echo '{"lldp": "x"}'`, addr: addr, wantErr: true},
		{name: "lldpcli hangs", script: `exec sleep 30`, addr: addr, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := filepath.Join(t.TempDir(), "absent-lldpcli")
			if tt.script != "" {
				cmd = fakeLLDPCLI(t, tt.script)
			}
			s := LLDP{Addr: tt.addr, Socket: tt.socket, Command: cmd, Timeout: 500 * time.Millisecond, interfaces: hostIfaces}
			f, err := s.Discover(context.Background())
			if (err != nil) != tt.wantErr {
				t.Fatalf("Discover() error = %v; want error %v", err, tt.wantErr)
			}
			if want := (Found{Source: SourceLLDP, Leaf: tt.want}); f != want {
				t.Errorf("Discover() = %+v; want %+v", f, want)
			}
		})
	}
}
