package topology

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// IBSource finds the node's leaf switch and its parent in the InfiniBand
// fabric: it reads this node's active InfiniBand ports from sysfs, runs
// ibnetdiscover (infiniband-diags) through the first of them, and places
// the node in the fabric with ParseIBNetDiscover and IBFabric.IBPlace.
// RoCE ports (link layer Ethernet) are not InfiniBand and are left out.
type IBSource struct {
	sysfs   string        // /sys/class/infiniband
	command []string      // ibnetdiscover; the port is appended as -C DEV -P PORT
	timeout time.Duration // for one ibnetdiscover run
}

// IBDiscoverTimeout bounds one ibnetdiscover run: a sweep of a fabric of
// a few thousand nodes takes seconds.
const IBDiscoverTimeout = time.Minute

// NewIBSource returns the InfiniBand source of this machine.
func NewIBSource() *IBSource {
	return &IBSource{sysfs: "/sys/class/infiniband", command: []string{"ibnetdiscover"}, timeout: IBDiscoverTimeout}
}

// Name is SourceIB.
func (s *IBSource) Name() string { return SourceIB }

// Discover returns the leaf and parent switch of this node in the
// InfiniBand fabric; a zero Found and no error where the node has no
// active InfiniBand port.
func (s *IBSource) Discover(ctx context.Context) (Found, error) {
	ports, err := readIBPorts(s.sysfs)
	if err != nil {
		return Found{}, err
	}
	if len(ports) == 0 {
		return Found{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	args := append(slices.Clone(s.command[1:]), "-C", ports[0].dev, "-P", fmt.Sprint(ports[0].port))
	cmd := exec.CommandContext(ctx, s.command[0], args...)
	var out, stderr bytes.Buffer
	cmd.Stdout = &ibCappedWriter{buf: &out, max: maxIBBytes + 1}
	cmd.Stderr = &ibCappedWriter{buf: &stderr, max: 4096}
	cmd.WaitDelay = 5 * time.Second // a killed sweep's pipes close by then
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return Found{}, fmt.Errorf("ib: %d InfiniBand ports but %s is not installed (Debian: infiniband-diags): %w", len(ports), s.command[0], err)
		}
		if ctx.Err() != nil {
			return Found{}, fmt.Errorf("ib: %s: %w", s.command[0], ctx.Err())
		}
		return Found{}, fmt.Errorf("ib: %s -C %s -P %d: %w: %s", s.command[0], ports[0].dev, ports[0].port, err, strings.TrimSpace(stderr.String()))
	}
	fabric, err := ParseIBNetDiscover(out.String())
	if err != nil {
		return Found{}, fmt.Errorf("ib: %w", err)
	}
	var guids []uint64
	for _, p := range ports {
		guids = append(guids, p.nodeGUID, p.portGUID)
	}
	leaf, parent := fabric.IBPlace(guids)
	if leaf == "" {
		return Found{}, fmt.Errorf("ib: none of this node's ports (%s) is cabled to a switch in ibnetdiscover's fabric of %d nodes", ports[0].dev, len(fabric.Nodes))
	}
	return Found{Source: SourceIB, Leaf: leaf, Parent: parent}, nil
}

// ibLocalPort is one active InfiniBand port of this node.
type ibLocalPort struct {
	dev      string
	port     int
	nodeGUID uint64
	portGUID uint64
}

// readIBPorts lists the active InfiniBand ports under sysfs
// (/sys/class/infiniband/DEV/ports/N/{link_layer,state,gids/0} and
// DEV/node_guid), sorted by device and port. A missing sysfs directory
// is no ports.
func readIBPorts(sysfs string) ([]ibLocalPort, error) {
	devs, err := os.ReadDir(sysfs)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ib: %w", err)
	}
	var out []ibLocalPort
	for _, d := range devs {
		dir := filepath.Join(sysfs, d.Name())
		b, err := os.ReadFile(filepath.Join(dir, "node_guid"))
		if err != nil {
			continue // not a device directory
		}
		nodeGUID, err := parseSysfsGUID(string(b))
		if err != nil {
			return nil, fmt.Errorf("ib: %s/node_guid: %w", d.Name(), err)
		}
		ports, _ := os.ReadDir(filepath.Join(dir, "ports"))
		for _, p := range ports {
			var num int
			if _, err := fmt.Sscanf(p.Name(), "%d", &num); err != nil {
				continue
			}
			pdir := filepath.Join(dir, "ports", p.Name())
			if ll, _ := os.ReadFile(filepath.Join(pdir, "link_layer")); strings.TrimSpace(string(ll)) != "InfiniBand" {
				continue
			}
			if st, _ := os.ReadFile(filepath.Join(pdir, "state")); !strings.Contains(string(st), "ACTIVE") {
				continue
			}
			gid, err := os.ReadFile(filepath.Join(pdir, "gids", "0"))
			if err != nil {
				return nil, fmt.Errorf("ib: %s port %d: %w", d.Name(), num, err)
			}
			portGUID, err := parseSysfsGID(string(gid))
			if err != nil {
				return nil, fmt.Errorf("ib: %s port %d gids/0: %w", d.Name(), num, err)
			}
			out = append(out, ibLocalPort{dev: d.Name(), port: num, nodeGUID: nodeGUID, portGUID: portGUID})
		}
	}
	slices.SortFunc(out, func(a, b ibLocalPort) int {
		if c := strings.Compare(a.dev, b.dev); c != 0 {
			return c
		}
		return a.port - b.port
	})
	return out, nil
}

// parseSysfsGUID reads a GUID as sysfs writes it: four groups of four
// hex digits, "0c42:a103:00b1:c2d0".
func parseSysfsGUID(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ":")
	if len(parts) != 4 {
		return 0, fmt.Errorf("GUID %q: want four groups of hex digits joined by ':'", clipIB(s))
	}
	return groupsGUID(s, parts)
}

// parseSysfsGID reads the port GUID from a port's GID 0 as sysfs writes
// it, "fe80:0000:0000:0000:0c42:a103:00b1:c2d1": the low 64 bits.
func parseSysfsGID(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	parts := strings.Split(s, ":")
	if len(parts) != 8 {
		return 0, fmt.Errorf("GID %q: want eight groups of hex digits joined by ':'", clipIB(s))
	}
	return groupsGUID(s, parts[4:])
}

func groupsGUID(s string, parts []string) (uint64, error) {
	var g uint64
	for _, p := range parts {
		if len(p) != 4 {
			return 0, fmt.Errorf("%q: group %q is not four hex digits", clipIB(s), clipIB(p))
		}
		for _, c := range []byte(p) {
			var v byte
			switch {
			case c >= '0' && c <= '9':
				v = c - '0'
			case c >= 'a' && c <= 'f':
				v = c - 'a' + 10
			case c >= 'A' && c <= 'F':
				v = c - 'A' + 10
			default:
				return 0, fmt.Errorf("%q: %q is not a hex digit", clipIB(s), c)
			}
			g = g<<4 | uint64(v)
		}
	}
	if g == 0 {
		return 0, fmt.Errorf("%q: a zero GUID", clipIB(s))
	}
	return g, nil
}

// ibCappedWriter keeps the first max bytes written to it and drops the
// rest, so a runaway tool cannot fill the agent's memory. A dropped
// byte makes the output too long for its parser, which says so.
type ibCappedWriter struct {
	buf *bytes.Buffer
	max int
}

func (b *ibCappedWriter) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}
