package topology

import (
	"errors"
	"fmt"

	"github.com/shoal-sched/shoal/cluster"
)

// SourceOperator is the origin of a field the operator gave (--switch,
// --switch-parent, --block, topology.conf).
const SourceOperator = "operator"

// Origins says where each field of a merged topology came from: a source
// name, SourceOperator, or "" for a field nobody knows.
type Origins struct {
	Switch, SwitchParent, Block string
}

// Merge is the node's place: field by field, what the operator configured
// where it did, else the first of found (in the order the sources run)
// that knows the field. The operator's word wins because it is what a
// person checked; a source may see the wrong neighbour (a management
// switch, a hub). A leaf found by one source and a parent by another
// combine. Merge is pure.
func Merge(operator cluster.Topology, found []Found) (cluster.Topology, Origins) {
	var t cluster.Topology
	var o Origins
	pick := func(op string, get func(Found) string) (string, string) {
		if op != "" {
			return op, SourceOperator
		}
		for _, f := range found {
			if v := get(f); v != "" {
				return v, f.Source
			}
		}
		return "", ""
	}
	t.Switch, o.Switch = pick(operator.Switch, func(f Found) string { return f.Leaf })
	t.SwitchParent, o.SwitchParent = pick(operator.SwitchParent, func(f Found) string { return f.Parent })
	t.Block, o.Block = pick(operator.Block, func(f Found) string { return f.Block })
	return t, o
}

// MaxNameLen is the longest switch or block name a node announces (the
// gossip metadata's label limit, gossip.MaxLabelLen).
const MaxNameLen = cluster.MaxTopologyNameLen

// CheckName says why s cannot name a switch or a block, or nil
// (cluster.CheckTopologyName). A name a tool reports is checked before it
// is announced.
func CheckName(s string) error { return cluster.CheckTopologyName(s) }

// Checked is f with the names CheckName refuses taken out, and why.
func Checked(f Found) (Found, error) {
	var errs []error
	for _, field := range []struct {
		name string
		v    *string
	}{{"leaf", &f.Leaf}, {"parent", &f.Parent}, {"block", &f.Block}} {
		if *field.v == "" {
			continue
		}
		if err := CheckName(*field.v); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", f.Source, field.name, err))
			*field.v = ""
		}
	}
	return f, errors.Join(errs...)
}
