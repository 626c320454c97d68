package stepd

import (
	"slices"
	"testing"
)

// TestLoginEnv: the login shell's env -0 output is read after the mark,
// whatever a profile printed before it, and laid under the submitted
// environment, which wins.
func TestLoginEnv(t *testing.T) {
	out := []byte("Welcome!\n" + loginEnvMark + "\nHOME=/home/ada\x00PATH=/home/ada/bin:/usr/bin\x00MULTI=a\nb\x00=bad\x00NOEQ\x00")
	login, err := parseLoginEnv(out)
	if want := []string{"HOME=/home/ada", "PATH=/home/ada/bin:/usr/bin", "MULTI=a\nb"}; err != nil || !slices.Equal(login, want) {
		t.Fatalf("parseLoginEnv = %q, %v; want %q", login, err, want)
	}
	got := underlay(login, []string{"PATH=/usr/bin", "SLURM_JOB_ID=7"})
	if want := []string{"HOME=/home/ada", "MULTI=a\nb", "PATH=/usr/bin", "SLURM_JOB_ID=7"}; !slices.Equal(got, want) {
		t.Errorf("underlay = %q; want %q", got, want)
	}
	if _, err := parseLoginEnv([]byte("su: Authentication failure\n")); err == nil {
		t.Error("parseLoginEnv without the mark: no error")
	}
}
