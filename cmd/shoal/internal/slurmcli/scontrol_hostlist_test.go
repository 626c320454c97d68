package slurmcli

import (
	"bytes"
	"context"
	"errors"
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
		{"hostlist with no argument", "n[1-2]", []string{"show", "hostlist"}, "", "invalid encode argument"},
		{"hostlist keeps the order", "", []string{"show", "hostlist", "n3,n1,n2"}, "n[3,1-2]\n", ""},
		{"hostlistsorted", "", []string{"show", "hostlistsorted", "n[10-12,1-3],m1,n01"}, "m1,n[1-3,01,10-12]\n", ""},
		{"hostlistsorted with no argument", "n[1-2]", []string{"show", "hostlistsorted"}, "", "invalid encode argument"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SLURM_JOB_NODELIST", tt.env)
			var out bytes.Buffer
			err := Scontrol(context.Background(), noAgent, tt.args, &out)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
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

// noAgent is the Connect of a test that must not reach an agent.
func noAgent() (*api.Client, error) { return nil, errors.New("no agent in this test") }
