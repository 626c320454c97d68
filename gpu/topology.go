package gpu

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// link is one active NVLink of a device, as NVML describes it.
type link struct {
	remoteBusID string // normalized PCI bus id of the remote end
	toSwitch    bool   // NVML says the remote end is an NVSwitch
}

// nvlinkPeers computes each device's NVLink peers (by index) from its
// active links. busIDs[i] is device i's normalized PCI bus id. A link to
// another local GPU makes the two peers; a link to anything else (an
// NVSwitch) joins the device to the switch fabric, and all fabric members
// are peers of each other. Peers are sorted and never include the device
// itself. A peer relation is made symmetric: if either end reports the
// link, both list each other.
func nvlinkPeers(busIDs []string, links [][]link) [][]int {
	byBus := make(map[string]int, len(busIDs))
	for i, b := range busIDs {
		if b != "" {
			byBus[b] = i
		}
	}
	n := len(busIDs)
	adj := make([]map[int]bool, n)
	for i := range adj {
		adj[i] = map[int]bool{}
	}
	var fabric []int
	for i := 0; i < n && i < len(links); i++ {
		onFabric := false
		for _, l := range links[i] {
			j, isGPU := byBus[l.remoteBusID]
			if l.toSwitch || !isGPU {
				onFabric = true
				continue
			}
			if j != i {
				adj[i][j] = true
				adj[j][i] = true
			}
		}
		if onFabric {
			fabric = append(fabric, i)
		}
	}
	for _, i := range fabric {
		for _, j := range fabric {
			if i != j {
				adj[i][j] = true
			}
		}
	}
	out := make([][]int, n)
	for i, m := range adj {
		for j := range m {
			out[i] = append(out[i], j)
		}
		slices.Sort(out[i])
	}
	return out
}

// normalizeBusID turns NVML's "00000000:3B:00.0" and sysfs's
// "0000:3b:00.0" into the sysfs form: lower case, 4-digit domain. It
// returns "" for anything that is not domain:bus:device.function.
func normalizeBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(strings.TrimRight(s, "\x00")))
	dom, rest, ok := strings.Cut(s, ":")
	if !ok || len(dom) == 0 || len(dom) > 8 || !isHex(dom) {
		return ""
	}
	bus, rest, ok := strings.Cut(rest, ":")
	if !ok || len(bus) != 2 || !isHex(bus) {
		return ""
	}
	dev, fn, ok := strings.Cut(rest, ".")
	if !ok || len(dev) != 2 || !isHex(dev) || len(fn) != 1 || fn[0] < '0' || fn[0] > '7' {
		return ""
	}
	d, err := strconv.ParseUint(dom, 16, 32)
	if err != nil || d > 0xffff {
		return ""
	}
	return fmt.Sprintf("%04x:%s:%s.%s", d, bus, dev, fn)
}

func isHex(s string) bool {
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// busIDString reads NVML's NUL-padded bus id array.
func busIDString(b []uint8) string {
	if i := slices.Index(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// parseNUMANode reads the contents of a sysfs numa_node file: a node
// number, or -1 when the platform does not say.
func parseNUMANode(s string) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || v < -1 {
		return -1, fmt.Errorf("numa_node %q: want an integer >= -1", s)
	}
	return v, nil
}
