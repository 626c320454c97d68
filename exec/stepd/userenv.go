package stepd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strings"
	"time"
)

// GetUserEnvVar is what sbatch --get-user-env puts in a job's
// environment, as Slurm's sbatch does: the batch script's node loads the
// user's login environment under the submitted one.
const GetUserEnvVar = "SLURM_GET_USER_ENV"

// loginEnvTimeout bounds loading a login environment (slurmd's
// _get_user_env gives env_array_user_default 120 s).
const loginEnvTimeout = 120 * time.Second

// loginEnvMark precedes the environment in the login shell's output, so
// whatever a profile prints is skipped.
const loginEnvMark = "SHOAL_LOGIN_ENV_BEGIN"

// loginEnv is user's login environment, read as Slurm's
// env_array_user_default reads it: the login shell `su - USER` starts
// runs env. Only root may do that without a password.
func loginEnv(user string) ([]string, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("--get-user-env: the agent does not run as root, and only root can read another user's login environment")
	}
	if user == "" || strings.HasPrefix(user, "-") {
		return nil, fmt.Errorf("--get-user-env: user %q: want a user name", user)
	}
	ctx, cancel := context.WithTimeout(context.Background(), loginEnvTimeout)
	defer cancel()
	cmd := osexec.CommandContext(ctx, "su", "-", user, "-c", "echo "+loginEnvMark+"; env -0")
	cmd.Env = []string{"PATH=" + defaultPath}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("--get-user-env: su - %s: %w: %s", user, err, strings.TrimSpace(stderr.String()))
	}
	return parseLoginEnv(out)
}

// parseLoginEnv reads env -0's NAME=value entries after the mark line.
func parseLoginEnv(out []byte) ([]string, error) {
	_, rest, ok := bytes.Cut(out, []byte(loginEnvMark+"\n"))
	if !ok {
		return nil, errors.New("--get-user-env: no environment in the login shell's output")
	}
	var env []string
	for _, kv := range bytes.Split(rest, []byte{0}) {
		if k, _, ok := bytes.Cut(kv, []byte("=")); ok && len(k) > 0 {
			env = append(env, string(kv))
		}
	}
	return env, nil
}

// underlay is env with login's entries for the names env lacks, sorted:
// the submitted environment wins over the login one, as slurmd merges
// them. GetUserEnvVar stays, as in Slurm.
func underlay(login, env []string) []string {
	m := make(map[string]string, len(login)+len(env))
	for _, list := range [][]string{login, env} {
		for _, kv := range list {
			if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
				m[k] = v
			}
		}
	}
	return sortedEnv(m)
}
