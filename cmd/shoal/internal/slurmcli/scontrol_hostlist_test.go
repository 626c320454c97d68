package slurmcli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

// TestScontrolHostlistCommands: show hostnames, hostlist and hostlistsorted
// answer as Debian's Slurm 22.05 did in shared/peers/slurm's golden file,
// with and without an argument.
func TestScontrolHostlistCommands(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     string
		args    []string
		want    string
		wantErr string
	}{
		{"hostnames from the job's environment", "n[1-2]", []string{"show", "hostnames"}, "n1\nn2\n", ""},
		{"hostnames, nothing to show", "", []string{"show", "hostnames"}, "", ""},
		{"hostnames of an invalid list exits 0, as Slurm", "", []string{"show", "hostnames", "n[3-1]"}, "", ""},
		{"hostlist with no argument", "n[1-2]", []string{"show", "hostlist"}, "", "invalid encode argument"},
		{"hostlist keeps the order", "", []string{"show", "hostlist", "n3,n1,n2"}, "n[3,1-2]\n", ""},
		{"hostlist of an invalid list", "", []string{"show", "hostlist", "n[3-1]"}, "", "Invalid hostlist: n[3-1]"},
		{"hostlistsorted", "", []string{"show", "hostlistsorted", "n[10-12,1-3],m1,n01"}, "m1,n[1-3,01,10-12]\n", ""},
		{"hostlistsorted cuts overlaps", "", []string{"show", "hostlistsorted", "n[1-3],n[2-4]"}, "n[1-2,2-3,3-4]\n", ""},
		{"hostlistsorted with no argument", "n[1-2]", []string{"show", "hostlistsorted"}, "", "invalid encode argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SLURM_NODELIST", tt.env)
			var out bytes.Buffer
			err := Scontrol(context.Background(), noAgent, tt.args, &out)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("scontrol %v: %v; want error %q", tt.args, err, tt.wantErr)
				}
				return
			}
			if err != nil || out.String() != tt.want {
				t.Errorf("scontrol %v = %q, %v; want %q", tt.args, out.String(), err, tt.want)
			}
		})
	}
}

// TestScontrolHostlistNoArgGolden runs the no-argument cases Debian's
// Slurm answered (shared/peers/slurm/hostlist_golden.json and
// slurm/testdata/hostlist_golden2.json, made by make_hostlist_golden2.sh)
// with the same environment, and compares stdout and the exit status.
func TestScontrolHostlistNoArgGolden(t *testing.T) {
	type run struct {
		RC     int     `json:"rc"`
		Stdout *string `json:"stdout"`
	}
	n := 0
	for _, path := range []string{
		filepath.Join("..", "..", "..", "..", "..", "shared", "peers", "slurm", "hostlist_golden.json"),
		filepath.Join("..", "..", "..", "..", "slurm", "testdata", "hostlist_golden2.json"),
	} {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("golden from Debian's Slurm: %v", err)
		}
		var doc struct {
			Cases []struct {
				Expr *string           `json:"expr"`
				Env  map[string]string `json:"env"`
			} `json:"cases"`
		}
		var runs struct {
			Cases []map[string]json.RawMessage `json:"cases"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if err := json.Unmarshal(raw, &runs); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for i, c := range doc.Cases {
			if c.Expr != nil {
				continue
			}
			for _, sub := range []string{"hostnames", "hostlist", "hostlistsorted"} {
				var want run
				if err := json.Unmarshal(runs.Cases[i][sub], &want); err != nil {
					t.Fatalf("%s case %d %s: %v", path, i, sub, err)
				}
				n++
				t.Run(fmt.Sprintf("%s %v", sub, c.Env), func(t *testing.T) {
					for _, v := range []string{"SLURM_NODELIST", "SLURM_JOB_NODELIST"} {
						t.Setenv(v, "")
						os.Unsetenv(v)
					}
					for k, v := range c.Env {
						t.Setenv(k, v)
					}
					var out bytes.Buffer
					err := Scontrol(context.Background(), noAgent, []string{"show", sub}, &out)
					rc := 0
					if err != nil {
						rc = 1
					}
					if rc != want.RC {
						t.Errorf("scontrol show %s: exit %d (%v); want %d, as Slurm", sub, rc, err, want.RC)
					}
					if want.Stdout != nil && out.String() != *want.Stdout {
						t.Errorf("scontrol show %s = %q; want %q, as Slurm", sub, out.String(), *want.Stdout)
					}
				})
			}
		}
	}
	if n < 12 {
		t.Errorf("%d no-argument cases in the goldens; want 12 or more", n)
	}
}

// noAgent is the Connect of a test that must not reach an agent.
func noAgent() (*api.Client, error) { return nil, errors.New("no agent in this test") }
