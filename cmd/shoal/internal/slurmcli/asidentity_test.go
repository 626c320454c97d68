package slurmcli

import (
	"errors"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
)

type fakeIDs struct{}

func (fakeIDs) user(v string) (string, int, int, error) {
	if v == "ada" || v == "1000" {
		return "ada", 1000, 100, nil
	}
	return "", 0, 0, errors.New("no such user")
}

func (fakeIDs) group(v string) (int, error) {
	if v == "physics" || v == "2000" {
		return 2000, nil
	}
	return 0, errors.New("no such group")
}

// TestAsIdentity: sbatch --uid/--gid, root only, as Slurm's sbatch.
func TestAsIdentity(t *testing.T) {
	for _, tt := range []struct {
		user, group string
		euid        int
		want        api.Identity
		err         string
	}{
		{user: "ada", want: api.Identity{User: "ada", UID: 1000, GID: 100}},
		{user: "1000", group: "physics", want: api.Identity{User: "ada", UID: 1000, GID: 2000}},
		{group: "2000", want: api.Identity{User: "root", UID: 0, GID: 2000}},
		{user: "ada", euid: 1000, err: "--uid only permitted by root user"},
		{group: "physics", euid: 1000, err: "--gid only permitted by root user"},
		{user: "bob", err: `--uid "bob": no such user`},
		{user: "ada", group: "x", err: `--gid "x": no such group`},
	} {
		got, err := asIdentity(tt.user, tt.group, tt.euid, fakeIDs{})
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("asIdentity(%q, %q, euid %d) error %v; want %q", tt.user, tt.group, tt.euid, err, tt.err)
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("asIdentity(%q, %q) = %+v, %v; want %+v", tt.user, tt.group, got, err, tt.want)
		}
	}
}
