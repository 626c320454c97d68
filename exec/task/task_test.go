package task

import (
	"encoding/json"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestCgroupPaths(t *testing.T) {
	for _, tc := range []struct {
		key       Key
		job, task string
	}{
		{Key{7, 2, NoStep, 0}, "job_7.2", "job_7.2/task"},
		{Key{7, 2, 0, 0}, "job_7.2", "job_7.2/step_0"},
		{Key{7, 2, NoStep, 1}, "job_7.2~1", "job_7.2~1/task"},
		{Key{7, 2, 3, 2}, "job_7.2~2", "job_7.2~2/step_3"},
	} {
		if job, task := CgroupPaths(tc.key); job != tc.job || task != tc.task {
			t.Errorf("CgroupPaths(%v) = %q, %q; want %q, %q", tc.key, job, task, tc.job, tc.task)
		}
	}
}

func TestParseDirName(t *testing.T) {
	for name, want := range map[string]Key{
		"3.1": {3, 1, NoStep, 0}, "3.2.0": {3, 2, 0, 0}, "3.2.17": {3, 2, 17, 0},
		"3.1~1": {3, 1, NoStep, 1}, "3.2.4~12": {3, 2, 4, 12},
	} {
		if got, ok := ParseDirName(name); !ok || got != want {
			t.Errorf("ParseDirName(%q) = %v, %v; want %v", name, got, ok, want)
		}
		if got := want.DirName(); got != name {
			t.Errorf("%v.DirName() = %q; want %q", want, got, name)
		}
	}
	for _, name := range []string{"3", "0.1", "3.0", "3.1.-1", "3.1.x", "03.1", "3.1.01", "3.1.0.0", "3.1.",
		"3.1~0", "3.1~", "3.1~01", "3.1~-1", "3.1~x", "3.1~1~1", "~1"} {
		if got, ok := ParseDirName(name); ok {
			t.Errorf("ParseDirName(%q) = %v; want no key", name, got)
		}
	}
}

// TestRecordsOfEarlierAgents decodes the records an agent and supervisor
// of the version before the tracker/supervisor split wrote for one task,
// and encodes them again to the same bytes: an agent upgraded in place
// must read its predecessor's task directories (DESIGN: a task runs at
// most once per node; a restarted agent adopts its running tasks), and a
// format change must show up here first.
func TestRecordsOfEarlierAgents(t *testing.T) {
	tests := []struct {
		file string
		v    func() any
		old  string
	}{
		{"stepd.json", func() any { return new(StepdConfig) }, `{"launch":{"Job":7,"Incarnation":1,"Spec":{"name":"","command":["/bin/sh","-c","trap 'echo got-usr1 \u003e\u003e sig; ' USR1; echo $$ \u003e pid; while [ ! -e release ]; do sleep 0.05; done; exit 5"],"work_dir":"/home/ada/work","request":{"nodes":0,"gpus_per_node":0,"tasks_per_node":0,"cpus_per_task":0,"time_limit":0},"user":"","uid":0,"gid":0,"requeue":false},"Alloc":{"nodes":[{"node":"n1","gpus":null,"state":"","exit_code":0,"released":false}],"master_port":0,"index":0},"NodeIndex":0,"MasterAddr":"127.0.0.1","NodeList":"n1","NodeName":"n1","ClusterName":"","Step":null,"StepNodeList":"","Stdout":"","Stderr":"","ShimDir":"","Array":null,"Hosts":null,"JobStart":"0001-01-01T00:00:00Z"},"start":"2026-11-25T11:21:29.348780353Z","node":"n1","kill_wait":1000000000,"kill_grace":1000000000}`},
		{"start.json", func() any { return new(StartRecord) }, `{"job":7,"incarnation":1,"node":"n1","first_rank":0,"ranks":1,"start":"2026-11-25T11:21:29.348780353Z"}`},
		{"proc-0.json", func() any { return new(ProcRecord) }, `{"rank":0,"pid":6163,"start_ticks":855614}`},
		{"exit.json", func() any { return new(ExitRecord) }, `{"job":7,"incarnation":1,"node":"n1","exit_code":143,"cause":"cancelled","start":"2026-11-25T11:21:29.348780353Z","end":"2026-11-25T11:21:29.370045077Z"}`},
		{"stop.json", func() any { return new(StopRecord) }, `{"cause":"cancelled"}`},
		// Written by hand from the earlier version's types.
		{"output.json", func() any { return new(OutputRecord) }, `{"files":[{"stream":"stdout","path":"/home/ada/out","user":{"uid":1000,"gid":1000,"groups":[1000,27]},"id":{"dev":2049,"ino":1234,"birth":1700000000000000000}},{"stream":"stderr","path":"/etc/shadow","id":{"dev":0,"ino":0},"error":"as uid 1000: permission denied"}]}`},
		{"lease.json", func() any { return new(LeaseRecord) }, `{"deadline_boottime_ns":123456789000}`},
		{"ack.json", func() any { return new(AckRecord) }, `{"time":"2026-11-25T11:21:29.370045077Z"}`},
		{"launch result", func() any { return new(LaunchResult) }, `{"error":"start job 7.1: ranks could not be started: rank 0: command x: not found","start_failed":true}`},
		{"request", func() any { return new(Request) }, `{"op":"signal","signal":10,"shell_only":true}`},
		{"reply", func() any { return new(Reply) }, `{"error":"signal 10: job 7.1: task not running","not_running":true}`},
	}
	for _, tt := range tests {
		v := tt.v()
		if err := json.Unmarshal([]byte(tt.old), v); err != nil {
			t.Errorf("%s: decode: %v", tt.file, err)
			continue
		}
		b, err := json.Marshal(v)
		if err != nil || string(b) != tt.old {
			t.Errorf("%s: encode = %s, %v; want the earlier agent's %s", tt.file, b, err, tt.old)
		}
	}
	var sc StepdConfig
	if err := json.Unmarshal([]byte(tests[0].old), &sc); err != nil || sc.Launch.Key() != (Key{Job: 7, Incarnation: 1, Step: NoStep}) ||
		sc.Launch.Spec.WorkDir != "/home/ada/work" || sc.KillWait != time.Second {
		t.Errorf("stepd.json decoded as %+v, %v", sc, err)
	}
}

// TestTrackerAndSupervisorApart keeps the two sides of a task apart (see
// the doc of packages exec and stepd): the agent's tracker never links
// the supervisor's code, the supervisor never the tracker's, and this
// package neither; they meet only in the formats defined here.
func TestTrackerAndSupervisorApart(t *testing.T) {
	const mod = "github.com/shoal-sched/shoal/"
	for _, tt := range []struct {
		dir    string
		banned []string
	}{
		{"..", []string{mod + "exec/stepd"}},
		{"../stepd", []string{mod + "exec"}},
		{".", []string{mod + "exec", mod + "exec/stepd"}},
	} {
		files, err := filepath.Glob(filepath.Join(tt.dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", tt.dir, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				if path, _ := strconv.Unquote(imp.Path.Value); slices.Contains(tt.banned, path) {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}

// FuzzParseDirName: a task directory's name parses only in its canonical
// form, and a key it gives names the same directory again.
func FuzzParseDirName(f *testing.F) {
	for _, s := range []string{"3.1", "3.2.17", "3.1~1", "3.2.4~12", "3.1~0", "~1", "3.1~1~1", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		k, ok := ParseDirName(name)
		if ok && k.DirName() != name {
			t.Errorf("ParseDirName(%q) = %v, whose DirName is %q", name, k, k.DirName())
		}
	})
}

// TestWriteJSON: both writers replace a record whole and leave no
// temporary file behind (what a supervisor or a restarted agent reads is
// always a complete record; DESIGN: task records survive agent restarts).
func TestWriteJSON(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(dir, name string, v any) error
	}{
		{"durable", WriteJSON},
		{"volatile", WriteJSONVolatile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, code := range []int{1, 2} {
				if err := tc.write(dir, ExitFile, ExitRecord{ExitCode: code}); err != nil {
					t.Fatal(err)
				}
				var got ExitRecord
				if err := ReadJSON(dir, ExitFile, &got); err != nil {
					t.Fatal(err)
				}
				if got.ExitCode != code {
					t.Fatalf("after writing exit code %d, read %d", code, got.ExitCode)
				}
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ents) != 1 || ents[0].Name() != ExitFile {
				t.Fatalf("dir holds %v; want only %s", ents, ExitFile)
			}
			if err := tc.write(filepath.Join(dir, "missing"), ExitFile, ExitRecord{}); err == nil {
				t.Fatal("writing into a missing directory succeeded")
			}
		})
	}
}
