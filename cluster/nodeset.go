package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shoal-sched/shoal/slurm"
)

// Bounds on node features and on a request's node set. A node's features
// travel in its gossip metadata, which memberlist caps at 512 bytes, so
// they are few and short; MaxFeaturesBytes bounds them joined with commas.
const (
	MaxNodeFeatures    = 16
	MaxFeatureBytes    = 32
	MaxFeaturesBytes   = 64
	MaxConstraintBytes = 1024
	// MaxConstraintDepth bounds parenthesis nesting in a constraint.
	MaxConstraintDepth = 16
	// MaxNodeNameBytes bounds a node name in a request's node list or
	// exclude list (a DNS name's length).
	MaxNodeNameBytes = 253
)

// ValidFeature reports whether s can be a node feature: 1 to
// MaxFeatureBytes letters, digits, '_', '-' or '.', starting with a letter
// or digit (so it never collides with a constraint's operators): the
// name slurm.ValidName takes, at most MaxFeatureBytes long.
func ValidFeature(s string) bool {
	return len(s) <= MaxFeatureBytes && slurm.ValidName(s)
}

const featureForm = "want letters, digits, '_', '-' or '.', starting with a letter or digit"

// ParseFeatures parses a node's comma-separated feature list (the agent's
// --features): repeated names are dropped, the first kept; the rest keep
// their order. The empty string is no features.
func ParseFeatures(s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(s, ",") {
		if !ValidFeature(f) {
			return nil, fmt.Errorf("feature %q: %s, at most %d bytes", clipName(f), featureForm, MaxFeatureBytes)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	if err := ValidateFeatures(out); err != nil {
		return nil, err
	}
	return out, nil
}

// ValidateFeatures checks a node's feature list: at most MaxNodeFeatures
// distinct valid names, at most MaxFeaturesBytes joined with commas.
func ValidateFeatures(fs []string) error {
	if len(fs) > MaxNodeFeatures {
		return fmt.Errorf("features: %d, want at most %d", len(fs), MaxNodeFeatures)
	}
	n := 0
	for i, f := range fs {
		if !ValidFeature(f) {
			return fmt.Errorf("features[%d] %q: %s, at most %d bytes", i, clipName(f), featureForm, MaxFeatureBytes)
		}
		if slices.Contains(fs[:i], f) {
			return fmt.Errorf("features[%d] %q: listed twice", i, f)
		}
		n += len(f) + 1
	}
	if n > MaxFeaturesBytes+1 {
		return fmt.Errorf("features: %d bytes joined with commas, want at most %d", n-1, MaxFeaturesBytes)
	}
	return nil
}

// Constrained reports whether the request restricts which nodes it may
// take beyond their free GPUs: a node list, an exclude list, a feature
// constraint or whole-node exclusivity.
func (r Request) Constrained() bool {
	return len(r.NodeList) > 0 || len(r.Exclude) > 0 || r.Constraint != "" || r.Exclusive
}

// validateNodeSet checks NodeList, Exclude and Constraint.
func (r Request) validateNodeSet() error {
	for _, l := range []struct {
		field string
		names []string
	}{{"node_list", r.NodeList}, {"exclude", r.Exclude}} {
		if len(l.names) > MaxNodesPerJob {
			return fmt.Errorf("%s: %d nodes, want at most %d", l.field, len(l.names), MaxNodesPerJob)
		}
		seen := make(map[string]bool, len(l.names))
		for i, n := range l.names {
			switch {
			case n == "" || len(n) > MaxNodeNameBytes:
				return fmt.Errorf("%s[%d] %q: want a node name of 1 to %d bytes", l.field, i, clipName(n), MaxNodeNameBytes)
			case seen[n]:
				return fmt.Errorf("%s[%d] %q: listed twice", l.field, i, n)
			}
			seen[n] = true
		}
	}
	if len(r.NodeList) > r.Nodes {
		return fmt.Errorf("node_list: %d nodes, more than nodes %d (Slurm raises -N to the list's size)", len(r.NodeList), r.Nodes)
	}
	if len(r.NodeList) > 0 && len(r.Exclude) > 0 {
		ex := make(map[string]bool, len(r.Exclude))
		for _, n := range r.Exclude {
			ex[n] = true
		}
		for _, n := range r.NodeList {
			if ex[n] {
				return fmt.Errorf("exclude: node %q is also in node_list", n)
			}
		}
	}
	if r.Constraint != "" {
		if _, err := ParseConstraint(r.Constraint); err != nil {
			return err
		}
	}
	return nil
}

// Constraint is a parsed feature expression (Slurm's --constraint): node
// features joined by & (and) and | (or), grouped with parentheses. & binds
// tighter than |, so "a|b&c" is a|(b&c). Slurm's counted and bracketed
// forms ("a*2", "[a|b]") are refused by ParseConstraint: they ask for
// different features on different nodes of one job, which Shoal does not
// implement, and ignoring them would run the job elsewhere than asked.
type Constraint struct {
	// feature is set on a leaf; otherwise op ('&' or '|') joins kids.
	feature string
	op      byte
	kids    []*Constraint
}

// ParseConstraint parses a --constraint expression. Errors name the
// field and the accepted form.
func ParseConstraint(s string) (*Constraint, error) {
	if len(s) > MaxConstraintBytes {
		return nil, fmt.Errorf("constraint: %d bytes, want at most %d", len(s), MaxConstraintBytes)
	}
	p := constraintParser{s: s}
	c, err := p.or(0)
	if err == nil && p.i < len(s) {
		err = p.unexpected()
	}
	if err != nil {
		return nil, fmt.Errorf("constraint %q: %w", clipName(s), err)
	}
	return c, nil
}

type constraintParser struct {
	s string
	i int
}

func (p *constraintParser) or(depth int) (*Constraint, error) {
	return p.list(depth, '|', p.and)
}

func (p *constraintParser) and(depth int) (*Constraint, error) {
	return p.list(depth, '&', p.factor)
}

// list parses one or more sub-expressions joined by op.
func (p *constraintParser) list(depth int, op byte, sub func(int) (*Constraint, error)) (*Constraint, error) {
	c, err := sub(depth)
	if err != nil {
		return nil, err
	}
	for p.i < len(p.s) && p.s[p.i] == op {
		p.i++
		k, err := sub(depth)
		if err != nil {
			return nil, err
		}
		if c.op != op || c.feature != "" {
			c = &Constraint{op: op, kids: []*Constraint{c}}
		}
		c.kids = append(c.kids, k)
	}
	return c, nil
}

func (p *constraintParser) factor(depth int) (*Constraint, error) {
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("a feature is missing at the end; want features joined by & or |, grouped with ( )")
	}
	if p.s[p.i] == '(' {
		if depth >= MaxConstraintDepth {
			return nil, fmt.Errorf("parentheses nested deeper than %d", MaxConstraintDepth)
		}
		p.i++
		c, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.i >= len(p.s) || p.s[p.i] != ')' {
			return nil, fmt.Errorf("'(' is not closed")
		}
		p.i++
		return c, p.noCount()
	}
	start := p.i
	for p.i < len(p.s) && !strings.ContainsRune("&|()[]*,", rune(p.s[p.i])) {
		p.i++
	}
	name := p.s[start:p.i]
	if name == "" {
		return nil, p.unexpected()
	}
	if !ValidFeature(name) {
		return nil, fmt.Errorf("feature %q: %s, at most %d bytes", clipName(name), featureForm, MaxFeatureBytes)
	}
	return &Constraint{feature: name}, p.noCount()
}

// noCount refuses Slurm's *COUNT suffix.
func (p *constraintParser) noCount() error {
	if p.i < len(p.s) && p.s[p.i] == '*' {
		return fmt.Errorf("feature counts (*N at byte %d) are not supported by Shoal; every node of the job must match the whole expression", p.i)
	}
	return nil
}

func (p *constraintParser) unexpected() error {
	switch c := p.s[p.i]; c {
	case '[', ']':
		return fmt.Errorf("brackets ([ ] at byte %d, Slurm's matching OR) are not supported by Shoal; want features joined by & or |, grouped with ( )", p.i)
	case '*':
		return fmt.Errorf("feature counts (*N at byte %d) are not supported by Shoal; every node of the job must match the whole expression", p.i)
	case ',':
		return fmt.Errorf("',' at byte %d: join features with & (and) or | (or)", p.i)
	default:
		return fmt.Errorf("unexpected %q at byte %d; want features joined by & or |, grouped with ( )", c, p.i)
	}
}

// Match reports whether a node with these features satisfies c. A nil
// Constraint matches every node.
func (c *Constraint) Match(features []string) bool {
	switch {
	case c == nil:
		return true
	case c.feature != "":
		return slices.Contains(features, c.feature)
	case c.op == '&':
		for _, k := range c.kids {
			if !k.Match(features) {
				return false
			}
		}
		return true
	default:
		for _, k := range c.kids {
			if k.Match(features) {
				return true
			}
		}
		return false
	}
}

// Features returns the distinct feature names c mentions, in order of
// first mention.
func (c *Constraint) Features() []string {
	var out []string
	var walk func(*Constraint)
	walk = func(c *Constraint) {
		if c.feature != "" {
			if !slices.Contains(out, c.feature) {
				out = append(out, c.feature)
			}
			return
		}
		for _, k := range c.kids {
			walk(k)
		}
	}
	if c != nil {
		walk(c)
	}
	return out
}

// String formats c in canonical form: no redundant parentheses beyond
// those around an | inside an &.
func (c *Constraint) String() string {
	if c == nil {
		return ""
	}
	return c.format(0)
}

func (c *Constraint) format(outer byte) string {
	if c.feature != "" {
		return c.feature
	}
	parts := make([]string, len(c.kids))
	for i, k := range c.kids {
		parts[i] = k.format(c.op)
	}
	s := strings.Join(parts, string(c.op))
	if outer == '&' && c.op == '|' {
		return "(" + s + ")"
	}
	return s
}

// clipName shortens a name for an error message.
func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
