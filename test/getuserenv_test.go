package test

import (
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-sched/shoal/localcluster"
)

// TestGetUserEnv: root's sbatch --uid=USER --get-user-env runs the script
// with USER's login environment (what their ~/.profile exports) under the
// submitted one, which wins; without the option the login environment is
// not there.
func TestGetUserEnv(t *testing.T) {
	mustRoot(t)
	const name = "shoalgetenv"
	home := filepath.Join(os.TempDir(), name+"-home")
	if _, err := osexec.Command("id", "-u", name).Output(); err != nil {
		out, err := osexec.Command("useradd", "--create-home", "--home-dir", home, "--shell", "/bin/sh", "--user-group", name).CombinedOutput()
		if err != nil {
			t.Fatalf("useradd %s: %v: %s", name, err, out)
		}
		t.Cleanup(func() {
			if out, err := osexec.Command("userdel", "--remove", name).CombinedOutput(); err != nil {
				t.Logf("userdel %s: %v: %s", name, err, out)
			}
		})
	}
	profile := "export SHOAL_LOGIN_MARK=from-profile\nexport SHOAL_BOTH=login\n"
	if err := os.WriteFile(filepath.Join(home, ".profile"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, localcluster.Options{Nodes: 1, GPUsPerNode: 1})
	a := c.Agents[0]
	sh := newSlurmShims(t, a, "SHOAL_BOTH=submit")
	for _, tt := range []struct {
		opt, want string
	}{
		{"--get-user-env", "mark=from-profile both=submit"},
		{"--export=ALL", "mark= both=submit"},
	} {
		out := filepath.Join(home, "out-"+strings.TrimLeft(tt.opt, "-"))
		n := sh.sbatch("--uid", name, tt.opt, "--chdir", home, "-o", out,
			"--wrap", `echo "mark=$SHOAL_LOGIN_MARK both=$SHOAL_BOTH"`)
		if j := waitJob(t, a, n, 60*time.Second); j.State != "COMPLETED" {
			t.Errorf("sbatch %s: job %s (%s)", tt.opt, j.State, j.Reason)
		}
		got, _ := os.ReadFile(out)
		if strings.TrimSpace(string(got)) != tt.want {
			t.Errorf("sbatch --uid %s %s: the script printed %q; want %q", name, tt.opt, got, tt.want)
		}
	}
}
