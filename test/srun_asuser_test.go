package test

import (
	"fmt"
	"os/user"
	"strings"
	"testing"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/localcluster"
)

// TestSrunSallocAsUser: root's srun --uid and salloc --uid run the job as
// that user, as Slurm's root may (sbatch's path: one rule for the three):
// srun outside an allocation prints nobody's uid, salloc's allocation is
// nobody's and its steps run as nobody, and srun --uid=nobody --jobid on
// root's own job is refused as another user's step would be. A caller
// that is not root is refused with Slurm's words.
func TestSrunSallocAsUser(t *testing.T) {
	mustRoot(t)
	c := startCluster(t, localcluster.Options{Nodes: 1})
	a := c.Agents[0]
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	// A directory nobody may work in.
	work := sharedTempDir(t, "shoal-srun-asuser-", 0o777)
	sh := newSlurmShims(t, a)
	sh.env = append(sh.env, "PATH="+sh.dir+":/usr/bin:/bin") // salloc's srun is the shim

	r := sh.run("srun", "--uid=nobody", "--chdir", work, "id", "-u")
	if r.code != 0 || strings.TrimSpace(r.stdout) != nobody.Uid {
		t.Errorf("srun --uid=nobody id -u: exit %d %q; want nobody's uid %s\nstderr: %s", r.code, r.stdout, nobody.Uid, r.stderr)
	}
	r = sh.run("salloc", "--uid=nobody", "--gid=nogroup", "--chdir", work, "-N1",
		"sh", "-c", `srun --chdir `+work+` sh -c 'echo "$(id -un) $(id -gn) $SLURM_JOB_USER"'`)
	if r.code != 0 || strings.TrimSpace(r.stdout) != "nobody nogroup nobody" {
		t.Errorf("salloc --uid=nobody --gid=nogroup srun ...: exit %d %q; want \"nobody nogroup nobody\"\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// A step of root's own job, asked for as nobody: another user's.
	job := sh.allocation("--chdir", work, "-o", "/dev/null")
	r = sh.run("srun", "--uid=nobody", "--jobid", fmt.Sprint(job), "--chdir", work, "true")
	if want := fmt.Sprintf("srun: error: Unable to create step for job %d: Access/permission denied", job); r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("srun --uid=nobody --jobid %d (root's job): exit %d %q; want 1 and %q", job, r.code, r.stderr, want)
	}
	sh.must("scancel", fmt.Sprint(job))

	// Not root: Slurm's refusal, and nothing submitted.
	other := newSecUser(t, "shoaluid")
	base, _ := secDirs(t, c, other)
	for _, tt := range []struct{ cmd, opt, want string }{
		{"srun", "--uid=root", "srun: error: --uid only permitted by root user"},
		{"srun", "--gid=root", "srun: error: --gid only permitted by root user"},
		{"salloc", "--uid=root", "salloc: error: --uid only permitted by root user"},
	} {
		r := other.run(t, a, base, nil, "slurm", tt.cmd, tt.opt, "true")
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%s %s as %s: exit %d %q; want 1 and %q", tt.cmd, tt.opt, other.name, r.code, r.stderr, tt.want)
		}
	}
	var jobs []api.Job
	jsonOf(t, a, &jobs, "queue", "--all")
	for _, j := range jobs {
		if j.User == other.name {
			t.Errorf("job %d of %s: a refused --uid submitted it", j.ID, other.name)
		}
	}
}
