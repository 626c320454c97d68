package shim

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// TestTakeGlobalFlags: leading --addr and --data-dir, in both spellings,
// are taken; the first other word ends them.
func TestTakeGlobalFlags(t *testing.T) {
	tests := []struct {
		args     []string
		rest     []string
		addr     string
		dataDir  string
		wantFail bool
	}{
		{args: []string{"squeue", "-h"}, rest: []string{"squeue", "-h"}},
		{args: []string{"--addr", "unix:///s", "sbatch"}, rest: []string{"sbatch"}, addr: "unix:///s"},
		{args: []string{"--data-dir=/d", "--addr=https://h:1", "squeue", "--addr", "x"}, rest: []string{"squeue", "--addr", "x"}, addr: "https://h:1", dataDir: "/d"},
		{args: []string{"--data-dir"}, wantFail: true},
		{args: nil, rest: nil},
	}
	for _, tc := range tests {
		var tg Target
		rest, err := TakeGlobalFlags(&tg, tc.args)
		if (err != nil) != tc.wantFail {
			t.Errorf("TakeGlobalFlags(%q): err %v, want failure %v", tc.args, err, tc.wantFail)
			continue
		}
		if tc.wantFail {
			continue
		}
		if !slices.Equal(rest, tc.rest) || tg.Addr != tc.addr || tg.DataDir != tc.dataDir {
			t.Errorf("TakeGlobalFlags(%q) = %q, %+v; want %q, addr %q, data dir %q", tc.args, rest, tg, tc.rest, tc.addr, tc.dataDir)
		}
	}
}

// TestRunUnknown: a name outside the list fails with exit 1 and a message.
func TestRunUnknown(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), nil, "sattach", nil, "v", &out, &errOut); code != 1 {
		t.Errorf("Run(sattach) = %d, want 1", code)
	}
	if !slices.Contains(Names, "sbatch") || slices.Contains(Names, "sattach") {
		t.Errorf("Names = %q", Names)
	}
	if errOut.Len() == 0 {
		t.Error("Run(sattach): nothing on stderr")
	}
}

// TestRunEveryName: Run plays every name in Names: a bad option is that
// command's error, never an unknown command (no agent is reached).
func TestRunEveryName(t *testing.T) {
	for _, name := range Names {
		var out, errOut bytes.Buffer
		code := Run(t.Context(), nil, name, []string{"--no-such-option"}, "v9", &out, &errOut)
		if code != 1 || strings.Contains(errOut.String(), "unknown command") {
			t.Errorf("Run(%s --no-such-option) = %d, stderr %q; want 1 and the command's own error", name, code, errOut.String())
		}
	}
	var out, errOut bytes.Buffer
	if code := Run(t.Context(), nil, "sattach", nil, "v9", &out, &errOut); code != 1 || !strings.Contains(errOut.String(), "unknown command") {
		t.Errorf("Run(sattach) = %d, stderr %q; want 1 and unknown command", code, errOut.String())
	}
}
