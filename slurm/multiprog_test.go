package slurm

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestMultiProgScript runs the script /bin/sh makes of a configuration for
// each task, as the step's tasks do, and checks what each execs.
func TestMultiProgScript(t *testing.T) {
	conf := `# a comment
0      echo 'zero words' %t
1-2,4  echo off=%o rank=%t   # trailing comment
*      echo "rest it's" %t
`
	script, err := MultiProgScript(conf)
	if err != nil {
		t.Fatal(err)
	}
	for rank, want := range []string{"zero words 0", "off=0 rank=1", "off=1 rank=2", "rest it's 3", "off=2 rank=4", "rest it's 5"} {
		cmd := exec.Command("/bin/sh", "-c", script)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "SLURM_PROCID=" + strconv.Itoa(rank)}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("task %d: %v\n%s", rank, err, script)
		}
		if got := strings.TrimSpace(string(out)); got != want {
			t.Errorf("task %d printed %q; want %q", rank, got, want)
		}
	}
	// A task no line names fails.
	script, _ = MultiProgScript("0 true\n")
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "SLURM_PROCID=1"}
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "no program for task 1") {
		t.Errorf("task 1 of a config naming only 0: %v %q; want a failure naming it", err, out)
	}
	for _, bad := range []string{"", "# only\n", "0\n", "x true\n", "2-1 true\n", "0 true\n0 false\n", "* a\n* b\n", "0 'open\n", "* echo %o\n", "0-99999999 true\n"} {
		if _, err := MultiProgScript(bad); err == nil {
			t.Errorf("MultiProgScript(%q) accepted", bad)
		}
	}
}

func FuzzMultiProgScript(f *testing.F) {
	f.Add("0 echo %t\n* true\n")
	f.Add("1-3,7 'a b' \"c'd\" %o # x\n")
	f.Fuzz(func(t *testing.T, conf string) {
		script, err := MultiProgScript(conf)
		if err == nil && (!strings.HasPrefix(script, "case ") || !strings.HasSuffix(script, "esac\n")) {
			t.Fatalf("script %q", script)
		}
	})
}
