package slurm

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestHelpRequest: --help, -h, --usage and --version are answered (the
// command prints Text and exits 0), not refused; after the script they
// are the script's.
func TestHelpRequest(t *testing.T) {
	_, _, err := ParseArgs(Srun, []string{"-N2", "--help", "x"})
	var hr *HelpRequest
	if !errors.As(err, &hr) || hr.Cmd != Srun || hr.Kind != "help" {
		t.Fatalf("srun --help: %v; want a HelpRequest for srun's help", err)
	}
	text := hr.Text("1.2")
	for _, want := range []string{"Usage: srun [OPTIONS(0)...] executable(0) [args(0)...]\n",
		"  -N, --nodes=VALUE\n",
		"  --cpu-bind=VALUE\n      accepted and ignored with a warning: Shoal does not bind tasks",
		"  -b, --begin=VALUE\n",
		"  --deadline=VALUE\n",
		"  --x11[=VALUE]\n      refused: Shoal forwards no X11"} {
		if !strings.Contains(text, want) {
			t.Errorf("srun --help lacks %q:\n%s", want, text)
		}
	}
	for _, tt := range []struct {
		cmd  Command
		args []string
		want string
	}{
		{Sbatch, []string{"-V"}, "shoal 1.2\n"},
		{Salloc, []string{"--usage"}, "Usage: salloc [OPTIONS(0)...] [command(0) [args(0)...]]\n"},
	} {
		_, _, err := ParseArgs(tt.cmd, tt.args)
		if !errors.As(err, &hr) || hr.Text("1.2") != tt.want {
			t.Errorf("%s %q: %v; want a HelpRequest printing %q", tt.cmd, tt.args, err, tt.want)
		}
	}
	_, rest, err := ParseArgs(Sbatch, []string{"job.sh", "--help"})
	if err != nil || !slices.Equal(rest, []string{"job.sh", "--help"}) {
		t.Errorf("sbatch job.sh --help: rest %q, %v; want the script's argument", rest, err)
	}
}
