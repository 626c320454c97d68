package topology

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	osexec "os/exec"
	"strings"
	"time"
)

// DefaultLLDPTimeout bounds one run of lldpcli.
const DefaultLLDPTimeout = 5 * time.Second

// LLDP is the Source of the leaf switch: it asks lldpd (through lldpcli)
// which neighbour it sees on the interface that holds Addr, the agent's
// address in the cluster.
type LLDP struct {
	// Addr is the agent's advertise (or bind) address.
	Addr netip.Addr
	// Socket is lldpd's control socket (lldpcli -u); "" is lldpcli's
	// default (/run/lldpd.socket).
	Socket string
	// Command is lldpcli's path; "" finds lldpcli on PATH.
	Command string
	// Timeout bounds one run; 0 is DefaultLLDPTimeout.
	Timeout time.Duration

	// interfaces lists the host's interfaces and their addresses; nil is
	// hostInterfaces (tests give their own).
	interfaces func() (map[string][]netip.Addr, error)
}

// Name is SourceLLDP.
func (s LLDP) Name() string { return SourceLLDP }

// Discover runs `lldpcli -f json show neighbors` and returns the leaf
// seen on the cluster interface. No lldpcli, or no lldpd behind its
// socket, is a zero Found and no error: the host does not run LLDP.
func (s LLDP) Discover(ctx context.Context) (Found, error) {
	found := Found{Source: SourceLLDP}
	if !s.Addr.IsValid() || s.Addr.IsUnspecified() || s.Addr.IsLoopback() {
		return found, nil // no cluster interface to look on
	}
	list := s.interfaces
	if list == nil {
		list = hostInterfaces
	}
	ifaces, err := list()
	if err != nil {
		return found, err
	}
	iface := ClusterInterface(ifaces, s.Addr)
	if iface == "" {
		return found, nil
	}
	ns, ok, err := s.Neighbors(ctx)
	if !ok || err != nil {
		return found, err
	}
	found.Leaf = LLDPLeaf(ns, iface)
	return found, nil
}

// Neighbors runs `lldpcli -f json show neighbors` and returns every
// neighbour lldpd sees. ok is false, with no error, where there is no
// lldpcli or no lldpd behind its socket.
func (s LLDP) Neighbors(ctx context.Context) (ns []LLDPNeighbor, ok bool, err error) {
	bin := s.Command
	if bin == "" {
		bin = "lldpcli"
	}
	path, err := osexec.LookPath(bin)
	if err != nil {
		return nil, false, nil // no lldpcli: no LLDP here
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultLLDPTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{"-f", "json"}
	if s.Socket != "" {
		args = append(args, "-u", s.Socket)
	}
	args = append(args, "show", "neighbors")
	cmd := osexec.CommandContext(ctx, path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if lldpdAbsent(stderr.String()) {
			return nil, false, nil
		}
		if ctx.Err() != nil {
			return nil, true, fmt.Errorf("lldpcli: no answer in %s", timeout)
		}
		return nil, true, fmt.Errorf("lldpcli %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	ns, err = ParseLLDP(stdout.Bytes())
	return ns, true, err
}

// lldpdAbsent says whether lldpcli's complaint is that no lldpd listens
// on its socket.
func lldpdAbsent(stderr string) bool {
	return strings.Contains(stderr, "unable to connect to socket")
}

// hostInterfaces is the host's interfaces and their addresses; an
// interface whose addresses cannot be read is left out.
func hostInterfaces() (map[string][]netip.Addr, error) {
	list, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list network interfaces: %w", err)
	}
	ifaces := make(map[string][]netip.Addr, len(list))
	for _, ifc := range list {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				ifaces[ifc.Name] = append(ifaces[ifc.Name], p.Addr())
			}
		}
	}
	return ifaces, nil
}
