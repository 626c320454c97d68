package slurmcli

import "testing"

// TestAbbreviates: a field, report or unit name is taken from any
// case-folded prefix at least min letters long, never from more letters
// than it has.
func TestAbbreviates(t *testing.T) {
	for _, tc := range []struct {
		word, name string
		min        int
		want       bool
	}{
		{"DefaultA", "DefaultAccount", 1, true},
		{"defaulta", "DefaultAccount", 1, true},
		{"DefaultAccount", "DefaultAccount", 1, true},
		{"DefaultAccountX", "DefaultAccount", 1, false},
		{"Def", "DefaultAccount", 4, false},
		{"Defa", "DefaultAccount", 4, true},
		{"", "User", 1, false},
		{"", "User", 0, true},
		{"Usr", "User", 1, false},
	} {
		if got := abbreviates(tc.word, tc.name, tc.min); got != tc.want {
			t.Errorf("abbreviates(%q, %q, %d) = %v; want %v", tc.word, tc.name, tc.min, got, tc.want)
		}
	}
}
