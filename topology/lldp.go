package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
)

// LLDPNeighbor is one neighbour lldpd saw on one of this host's
// interfaces, as `lldpcli show neighbors` reports it.
type LLDPNeighbor struct {
	// Interface is this host's interface the neighbour was seen on.
	Interface string
	// Chassis is the neighbour's system name; "" when it sends none.
	Chassis string
	// ChassisID is the neighbour's chassis id (often a MAC address).
	ChassisID string
	// Port is the neighbour's port description, or its port id.
	Port string
	// Bridge is whether the neighbour says it is a switch or a router
	// (the Bridge or Router capability, enabled).
	Bridge bool
}

// maxLLDPOutput bounds what ParseLLDP reads: a host with hundreds of
// neighbours stays far below it.
const maxLLDPOutput = 8 << 20

// ParseLLDP reads the output of `lldpcli -f json show neighbors` (or
// `-f json0`, lldpd's stable layout) of lldpd 1.0.x. lldpd's plain JSON
// changes shape with the count of things: "interface" is an object keyed
// by interface name for one interface and a list of such objects for
// several (one entry per neighbour, so an interface seen twice is twice
// in the list); "chassis" is keyed by the system name, or holds the id
// directly when the neighbour sends no name; a value that may repeat
// (mgmt-ip) is a string or a list. An empty output, or lldpd's "lldp"
// with nothing in it, is no neighbours. Neighbours come in the order
// lldpcli gives them.
func ParseLLDP(data []byte) ([]LLDPNeighbor, error) {
	if len(data) > maxLLDPOutput {
		return nil, fmt.Errorf("lldpcli output: %d bytes, more than %d", len(data), maxLLDPOutput)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("lldpcli output: %w", err)
	}
	raw, ok := top["lldp"]
	if !ok {
		return nil, errors.New(`lldpcli output: no "lldp" object`)
	}
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("lldpcli output: lldp: %w", err)
	}
	switch r := root.(type) {
	case []any: // json0: "lldp": [{"interface": [{"name": ..., ...}]}]
		var out []LLDPNeighbor
		for i, e := range r {
			obj, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("lldpcli output: lldp[%d]: want an object, got %s", i, jsonKind(e))
			}
			ns, err := parseJSON0Interfaces(obj["interface"])
			if err != nil {
				return nil, err
			}
			out = append(out, ns...)
		}
		return out, nil
	case map[string]any:
		return parseJSONInterfaces(r["interface"])
	case nil:
		return nil, nil
	default:
		return nil, fmt.Errorf("lldpcli output: lldp: want an object, got %s", jsonKind(root))
	}
}

// parseJSONInterfaces reads the plain JSON layout's "interface": an
// object {name: neighbour} or a list of such objects.
func parseJSONInterfaces(v any) ([]LLDPNeighbor, error) {
	var objs []map[string]any
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		objs = []map[string]any{x}
	case []any:
		for i, e := range x {
			o, ok := e.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("lldpcli output: interface[%d]: want an object, got %s", i, jsonKind(e))
			}
			objs = append(objs, o)
		}
	default:
		return nil, fmt.Errorf("lldpcli output: interface: want an object or a list, got %s", jsonKind(v))
	}
	var out []LLDPNeighbor
	for _, o := range objs {
		for _, name := range slices.Sorted(maps.Keys(o)) {
			body, ok := o[name].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("lldpcli output: interface %q: want an object, got %s", name, jsonKind(o[name]))
			}
			n, err := parseJSONNeighbor(name, body)
			if err != nil {
				return nil, err
			}
			out = append(out, n)
		}
	}
	return out, nil
}

func parseJSONNeighbor(iface string, body map[string]any) (LLDPNeighbor, error) {
	n := LLDPNeighbor{Interface: iface}
	switch ch := body["chassis"].(type) {
	case nil:
	case map[string]any:
		if id, ok := ch["id"].(map[string]any); ok && isIDValue(id) {
			// No system name: the chassis object is the chassis itself.
			n.ChassisID = str(id["value"])
			n.Bridge = bridgeCapable(ch["capability"])
			break
		}
		names := slices.Sorted(maps.Keys(ch))
		if len(names) != 1 {
			return n, fmt.Errorf("lldpcli output: interface %q: chassis: want one name, got %d", iface, len(names))
		}
		n.Chassis = names[0]
		c, ok := ch[names[0]].(map[string]any)
		if !ok {
			return n, fmt.Errorf("lldpcli output: interface %q: chassis %q: want an object, got %s", iface, names[0], jsonKind(ch[names[0]]))
		}
		if id, ok := c["id"].(map[string]any); ok {
			n.ChassisID = str(id["value"])
		}
		n.Bridge = bridgeCapable(c["capability"])
	default:
		return n, fmt.Errorf("lldpcli output: interface %q: chassis: want an object, got %s", iface, jsonKind(body["chassis"]))
	}
	if p, ok := body["port"].(map[string]any); ok {
		n.Port = str(p["descr"])
		if id, ok := p["id"].(map[string]any); ok && n.Port == "" {
			n.Port = str(id["value"])
		}
	}
	return n, nil
}

// isIDValue says whether o is an id ({"type": ..., "value": ...}) rather
// than a chassis named "id".
func isIDValue(o map[string]any) bool {
	_, t := o["type"].(string)
	_, v := o["value"].(string)
	return t && v
}

// parseJSON0Interfaces reads json0's "interface": a list of objects with
// a "name" and lists of one object for every child.
func parseJSON0Interfaces(v any) ([]LLDPNeighbor, error) {
	if v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("lldpcli output: interface: want a list, got %s", jsonKind(v))
	}
	var out []LLDPNeighbor
	for i, e := range list {
		o, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("lldpcli output: interface[%d]: want an object, got %s", i, jsonKind(e))
		}
		n := LLDPNeighbor{Interface: str(o["name"])}
		if n.Interface == "" {
			return nil, fmt.Errorf("lldpcli output: interface[%d]: no name", i)
		}
		if c := first(o["chassis"]); c != nil {
			n.Chassis = str(firstValue(c["name"]))
			if id := first(c["id"]); id != nil {
				n.ChassisID = str(id["value"])
			}
			n.Bridge = bridgeCapable(c["capability"])
		}
		if p := first(o["port"]); p != nil {
			n.Port = str(firstValue(p["descr"]))
			if id := first(p["id"]); id != nil && n.Port == "" {
				n.Port = str(id["value"])
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// first is json0's list of one object, or an object.
func first(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return x
	case []any:
		if len(x) > 0 {
			o, _ := x[0].(map[string]any)
			return o
		}
	}
	return nil
}

// firstValue is json0's [{"value": v}], or a plain string.
func firstValue(v any) any {
	if s, ok := v.(string); ok {
		return s
	}
	if o := first(v); o != nil {
		return o["value"]
	}
	return nil
}

// bridgeCapable reads a capability list (or one capability): whether
// Bridge or Router is enabled.
func bridgeCapable(v any) bool {
	var caps []any
	switch x := v.(type) {
	case []any:
		caps = x
	case map[string]any:
		caps = []any{x}
	}
	for _, c := range caps {
		o, ok := c.(map[string]any)
		if !ok {
			continue
		}
		t := str(o["type"])
		if (t == "Bridge" || t == "Router") && o["enabled"] == true {
			return true
		}
	}
	return false
}

func str(v any) string {
	s, _ := v.(string)
	return strings.TrimSpace(s)
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// LLDPLeaf is the leaf switch among the neighbours seen on iface: the
// name of the neighbour there (its chassis id when it sends no name).
// Where several neighbours share the interface (a hub, or a switch that
// forwards LLDP), one that says it is a switch or router is preferred,
// then the smallest name, so every round picks the same. "" when iface
// is "" or nothing was seen on it.
func LLDPLeaf(neighbors []LLDPNeighbor, iface string) string {
	if iface == "" {
		return ""
	}
	best, bestBridge := "", false
	for _, n := range neighbors {
		if n.Interface != iface {
			continue
		}
		name := n.Chassis
		if name == "" {
			name = n.ChassisID
		}
		if name == "" {
			continue
		}
		switch {
		case best == "", n.Bridge && !bestBridge, n.Bridge == bestBridge && name < best:
			best, bestBridge = name, n.Bridge
		}
	}
	return best
}

// SwitchNeighbors are a switch's LLDP neighbours as `shoal topology
// report` sends them (cluster.SwitchReport): each by its system name, its
// chassis id when it sends none, canonical (sorted, each once, a
// switch when one sighting says so). A name CheckName refuses is left
// out, and why is in refused; a neighbour with no name nor id is
// skipped.
func SwitchNeighbors(neighbors []LLDPNeighbor) (out []cluster.SwitchNeighbor, refused []error) {
	for _, n := range neighbors {
		name := n.Chassis
		if name == "" {
			name = n.ChassisID
		}
		if name == "" {
			continue
		}
		if err := CheckName(name); err != nil {
			refused = append(refused, fmt.Errorf("neighbour on %s: %w", n.Interface, err))
			continue
		}
		out = append(out, cluster.SwitchNeighbor{Name: name, Bridge: n.Bridge})
	}
	return cluster.SwitchReport{Neighbors: out}.Canonical().Neighbors, refused
}

// ClusterInterface is the interface that carries the cluster's traffic:
// the one holding addr (the agent's advertise or bind address) among
// ifaces, the host's interfaces and their addresses. "" when addr is
// unspecified (0.0.0.0, ::), a loopback address, or on no interface.
// Interfaces are tried in name order, so the answer is the same however
// the map iterates.
func ClusterInterface(ifaces map[string][]netip.Addr, addr netip.Addr) string {
	if !addr.IsValid() || addr.IsUnspecified() || addr.IsLoopback() {
		return ""
	}
	addr = addr.Unmap().WithZone("")
	names := make([]string, 0, len(ifaces))
	for name := range ifaces {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		for _, a := range ifaces[name] {
			if a.Unmap().WithZone("") == addr {
				return name
			}
		}
	}
	return ""
}
