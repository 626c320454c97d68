package cluster

import (
	"strings"
	"testing"
)

func TestParseConstraint(t *testing.T) {
	tests := []struct {
		in, want string
		match    [][]string // feature sets that match
		miss     [][]string // feature sets that do not
	}{
		{in: "a100", want: "a100", match: [][]string{{"a100"}, {"x", "a100"}}, miss: [][]string{nil, {"h100"}}},
		{in: "a&b", want: "a&b", match: [][]string{{"a", "b"}}, miss: [][]string{{"a"}, {"b"}}},
		{in: "a|b", want: "a|b", match: [][]string{{"a"}, {"b"}}, miss: [][]string{{"c"}}},
		// & binds tighter than |: a|(b&c).
		{in: "a|b&c", want: "a|b&c", match: [][]string{{"a"}, {"b", "c"}}, miss: [][]string{{"b"}, {"c"}}},
		{in: "a&b|c", want: "a&b|c", match: [][]string{{"a", "b"}, {"c"}}, miss: [][]string{{"a"}}},
		{in: "(a|b)&c", want: "(a|b)&c", match: [][]string{{"a", "c"}, {"b", "c"}}, miss: [][]string{{"a"}, {"c"}}},
		{in: "((a))", want: "a", match: [][]string{{"a"}}, miss: [][]string{{"b"}}},
		{in: "a&(b|c)&d", want: "a&(b|c)&d", match: [][]string{{"a", "c", "d"}}, miss: [][]string{{"a", "b"}}},
		{in: "ib.v2&gpu-a_1", want: "ib.v2&gpu-a_1", match: [][]string{{"ib.v2", "gpu-a_1"}}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			c, err := ParseConstraint(tt.in)
			if err != nil {
				t.Fatalf("ParseConstraint(%q) error: %v", tt.in, err)
			}
			if got := c.String(); got != tt.want {
				t.Errorf("ParseConstraint(%q).String() = %q; want %q", tt.in, got, tt.want)
			}
			for _, fs := range tt.match {
				if !c.Match(fs) {
					t.Errorf("ParseConstraint(%q).Match(%v) = false; want true", tt.in, fs)
				}
			}
			for _, fs := range tt.miss {
				if c.Match(fs) {
					t.Errorf("ParseConstraint(%q).Match(%v) = true; want false", tt.in, fs)
				}
			}
		})
	}
}

func TestParseConstraintRejects(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "a feature is missing"},
		{"a&", "a feature is missing at the end"},
		{"&a", "unexpected '&'"},
		{"a||b", "unexpected '|'"},
		{"(a|b", "'(' is not closed"},
		{"a)", "unexpected ')'"},
		{"a*2", "feature counts"},
		{"(a|b)*2", "feature counts"},
		{"[a*2&b*2]", "brackets"},
		{"[a|b]", "brackets"},
		{"a,b", "join features with &"},
		{"a b", `feature "a b"`},
		{"-a", `feature "-a"`},
		{strings.Repeat("(", MaxConstraintDepth+1) + "a" + strings.Repeat(")", MaxConstraintDepth+1), "nested deeper"},
		{strings.Repeat("a&", MaxConstraintBytes), "bytes, want at most"},
		{strings.Repeat("f", MaxFeatureBytes+1), "at most 32 bytes"},
	}
	for _, tt := range tests {
		_, err := ParseConstraint(tt.in)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseConstraint(%.40q) error = %v; want one containing %q", tt.in, err, tt.want)
		}
	}
}

// FuzzParseConstraint: any input parses or errors without panicking, and
// what parses prints to a form that parses to the same form and matches
// the same feature sets.
func FuzzParseConstraint(f *testing.F) {
	for _, s := range []string{"a", "a&b|c", "(a|b)&c", "[a*2&b]", "a*2", "((a))", "a,b", "a|"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConstraint(s)
		if err != nil {
			return
		}
		out := c.String()
		c2, err := ParseConstraint(out)
		if err != nil {
			t.Fatalf("ParseConstraint(%q) printed %q, which does not parse: %v", s, out, err)
		}
		if c2.String() != out {
			t.Fatalf("ParseConstraint(%q) printed %q, then %q", s, out, c2.String())
		}
		fs := c.Features()
		// Every subset of the first few features matches both alike.
		n := min(len(fs), 6)
		for mask := 0; mask < 1<<n; mask++ {
			var set []string
			for i := 0; i < n; i++ {
				if mask&(1<<i) != 0 {
					set = append(set, fs[i])
				}
			}
			if c.Match(set) != c2.Match(set) {
				t.Fatalf("ParseConstraint(%q) and its print %q disagree on %v", s, out, set)
			}
		}
	})
}

func TestParseFeatures(t *testing.T) {
	got, err := ParseFeatures("a100,ib,a100,nvme")
	if err != nil || strings.Join(got, ",") != "a100,ib,nvme" {
		t.Errorf("ParseFeatures(a100,ib,a100,nvme) = %v, %v; want [a100 ib nvme]", got, err)
	}
	for _, in := range []string{"a,,b", "a b", "a&b", "feature01,feature02,feature03,feature04,feature05,feature06,feature07", "a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q"} {
		if _, err := ParseFeatures(in); err == nil {
			t.Errorf("ParseFeatures(%q) = nil error; want one", in)
		}
	}
}

func TestRequestNodeSetValidate(t *testing.T) {
	base := Request{Nodes: 2, TasksPerNode: 1, CPUsPerTask: 1}
	tests := []struct {
		name string
		edit func(*Request)
		want string // "" = valid
	}{
		{"ok", func(r *Request) { r.NodeList = []string{"n1"}; r.Exclude = []string{"n2"}; r.Constraint = "a|b" }, ""},
		{"list longer than nodes", func(r *Request) { r.NodeList = []string{"a", "b", "c"} }, "node_list: 3 nodes, more than nodes 2"},
		{"list twice", func(r *Request) { r.NodeList = []string{"a", "a"} }, `node_list[1] "a": listed twice`},
		{"empty name", func(r *Request) { r.Exclude = []string{""} }, `exclude[0] ""`},
		{"both", func(r *Request) { r.NodeList = []string{"a"}; r.Exclude = []string{"a"} }, `exclude: node "a" is also in node_list`},
		{"bad constraint", func(r *Request) { r.Constraint = "a*2" }, "constraint \"a*2\": feature counts"},
	}
	for _, tt := range tests {
		r := base
		tt.edit(&r)
		err := r.Validate()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: Validate() = %v; want nil", tt.name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: Validate() = %v; want one containing %q", tt.name, err, tt.want)
		}
	}
	r := Request{NodeList: []string{"a", "b", "c"}}.WithDefaults()
	if r.Nodes != 3 {
		t.Errorf("WithDefaults with 3 listed nodes: Nodes = %d; want 3", r.Nodes)
	}
}
