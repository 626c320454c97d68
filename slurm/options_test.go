package slurm

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func ptr[T any](v T) *T { return &v }

// TestParseArgs checks the ordinary forms of each option, as the Slurm
// commands take them.
func TestParseArgs(t *testing.T) {
	tests := []struct {
		name string
		cmd  Command
		args []string
		rest []string
		want func(o *Options)
		set  []string
	}{
		{"nodes long eq", Sbatch, []string{"--nodes=2", "job.sh", "-N", "9"}, []string{"job.sh", "-N", "9"},
			func(o *Options) { o.Nodes = Nodes{2, 2} }, []string{"nodes"}},
		{"nodes range short attached", Sbatch, []string{"-N2-4"}, nil,
			func(o *Options) { o.Nodes = Nodes{2, 4} }, []string{"nodes"}},
		{"nodes short separate", Srun, []string{"-N", "1k", "hostname"}, []string{"hostname"},
			func(o *Options) { o.Nodes = Nodes{1024, 1024} }, []string{"nodes"}},
		{"long space", Srun, []string{"--ntasks", "8", "--cpus-per-task", "4", "--", "-x"}, []string{"-x"},
			func(o *Options) { o.NTasks, o.CPUsPerTask = 8, 4 }, []string{"ntasks", "cpus-per-task"}},
		{"grouped flags", Srun, []string{"-lN2", "-K", "python"}, []string{"python"},
			func(o *Options) { o.Label, o.Nodes, o.KillOnBadExit = true, Nodes{2, 2}, ptr(true) }, []string{"label", "nodes", "kill-on-bad-exit"}},
		{"step in a job from outside", Srun, []string{"--jobid=42", "--overlap", "nvidia-smi"}, []string{"nvidia-smi"},
			func(o *Options) { o.JobID, o.Overlap = 42, true }, []string{"jobid", "overlap"}},
		{"optional short attached", Srun, []string{"-K0", "true"}, []string{"true"},
			func(o *Options) { o.KillOnBadExit = ptr(false) }, []string{"kill-on-bad-exit"}},
		{"prefix", Sbatch, []string{"--part=gpu", "--ntasks-per-n=4"}, nil,
			func(o *Options) { o.Partition, o.NTasksPerNode = "gpu", 4 }, []string{"partition", "ntasks-per-node"}},
		{"time name output", Sbatch, []string{"-t", "1-02:00:00", "-J", "train", "-o", "logs/%x-%j.out", "-e", "logs/%x-%j.err", "-D", "/scratch"}, nil,
			func(o *Options) {
				o.TimeLimit, o.Name, o.Output, o.Error, o.ChDir = 26*time.Hour, "train", "logs/%x-%j.out", "logs/%x-%j.err", "/scratch"
			}, []string{"time", "job-name", "output", "error", "chdir"}},
		{"input file", Sbatch, []string{"-i", "in-%j.txt"}, nil,
			func(o *Options) { o.Input = "in-%j.txt" }, []string{"input"}},
		{"input none", Srun, []string{"--input=none", "cat"}, []string{"cat"},
			func(o *Options) { o.Input = "none" }, []string{"input"}},
		{"input task attached", Srun, []string{"-i0", "-n2", "cat"}, []string{"cat"},
			func(o *Options) { o.Input, o.NTasks = "0", 2 }, []string{"input", "ntasks"}},
		{"nodelist expanded deduplicated", Sbatch, []string{"-w", "n[1-3],n2", "-x", "n[7-8]"}, nil,
			func(o *Options) { o.NodeList, o.Exclude = []string{"n1", "n2", "n3"}, []string{"n7", "n8"} }, []string{"nodelist", "exclude"}},
		{"nodelist file", Srun, []string{"--nodelist=./hosts", "true"}, []string{"true"},
			func(o *Options) { o.NodeListFile = "./hosts" }, []string{"nodelist"}},
		{"gpus and gres", Sbatch, []string{"-N2", "--gres=gpu:a100:4", "-G", "a100:8"}, nil,
			func(o *Options) {
				o.Nodes, o.GPUs, o.GPUsPerNode, o.GPUType = Nodes{2, 2}, 8, 4, "a100"
				o.Gres = []Gres{{Name: "gpu", Type: "a100", Count: 4}}
			}, []string{"nodes", "gres", "gpus"}},
		{"gpus per task", Srun, []string{"-n", "4", "--gpus-per-task=1", "--gpus-per-node", "4", "x"}, []string{"x"},
			func(o *Options) { o.NTasks, o.GPUsPerTask, o.GPUsPerNode = 4, 1, 4 }, []string{"ntasks", "gpus-per-task", "gpus-per-node"}},
		{"memory", Sbatch, []string{"--mem=0", "--constraint=[rack1|rack2]&a100"}, nil,
			func(o *Options) { o.MemAll, o.Constraint = true, "[rack1|rack2]&a100" }, []string{"mem", "constraint"}},
		{"mem per gpu", Srun, []string{"--mem-per-gpu=80G", "x"}, []string{"x"},
			func(o *Options) { o.MemPerGPU = 80 << 10 }, []string{"mem-per-gpu"}},
		{"requeue signal open-mode export", Sbatch, []string{"--no-requeue", "--requeue", "--signal=B:USR1@90", "--open-mode=a", "--export=NONE,CUDA_LAUNCH_BLOCKING=1,HOME"}, nil,
			func(o *Options) {
				o.Requeue = ptr(true)
				o.Signal = &Signal{Name: "USR1", Number: 10, Seconds: 90, BatchOnly: true}
				o.OpenMode = "append"
				o.Export = &Export{Vars: []ExportVar{{"CUDA_LAUNCH_BLOCKING", "1", true}, {"HOME", "", false}}}
			}, []string{"no-requeue", "requeue", "signal", "open-mode", "export"}},
		{"sbatch flags", Sbatch, []string{"--parsable", "--test-only", "-H", "--nice", "--exclusive", "--wrap", "hostname"}, nil,
			func(o *Options) {
				o.Parsable, o.TestOnly, o.Hold, o.Nice, o.Exclusive, o.Wrap = true, true, true, 100, true, "hostname"
			},
			[]string{"parsable", "test-only", "hold", "nice", "exclusive", "wrap"}},
		{"array dependency switches", Sbatch, []string{"-a", "0-7:2%2", "-d", "afterok:12:13_2", "--switches=1@10:00", "--nice=-5"}, nil,
			func(o *Options) {
				o.Array = &Array{Indices: []int{0, 2, 4, 6}, Throttle: 2}
				o.Dependency = &Dependency{Conditions: []DepCondition{{Type: DepAfterOK, Jobs: []DepJob{{ID: 12, Task: -1}, {ID: 13, Task: 2}}}}}
				o.Switches = &Switches{Count: 1, MaxWait: 10 * time.Minute}
				o.Nice = -5
			}, []string{"array", "dependency", "switches", "nice"}},
		{"warnings", Sbatch, []string{"-A", "proj", "-q", "high", "--mail-type=END,FAIL", "--comment", "hi"}, nil,
			func(o *Options) {
				o.Account, o.QOS = "proj", "high"
				o.Warnings = []string{
					"--mail-type=END,FAIL ignored: Shoal sends no mail",
					"--comment=hi ignored: Shoal has no accounting",
				}
			}, []string{"account", "qos", "mail-type", "comment"}},
		{"allowed values of rejected options", Srun, []string{"--cpu-bind=none", "--mpi=none", "-m", "block", "--gpu-bind=NONE", "x"}, []string{"x"},
			func(o *Options) { o.Distribution = Distribution{Kind: DistBlock}; o.MPI = "none" }, []string{"cpu-bind", "mpi", "distribution", "gpu-bind"}},
		{"distribution", Sbatch, []string{"-m", "plane=4:CYCLIC"}, nil,
			func(o *Options) { o.Distribution = Distribution{Kind: DistPlane, Plane: 4, Levels: ":cyclic"} }, []string{"distribution"}},
		{"binding as a hint, as Slurm with task/none", Srun, []string{"--cpu-bind=cores", "--mem-bind=local", "-O", "--hint=nomultithread", "x"}, []string{"x"},
			func(o *Options) {
				o.Warnings = []string{
					"--cpu-bind=cores ignored: Shoal does not bind tasks to CPUs, memory or GPUs (as Slurm with task/none)",
					"--mem-bind=local ignored: Shoal does not bind tasks to CPUs, memory or GPUs (as Slurm with task/none)",
					"--overcommit ignored: Shoal allocates what the tasks ask for",
					"--hint=nomultithread ignored: Shoal does not place or bind tasks by socket, core or thread",
				}
			}, []string{"cpu-bind", "mem-bind", "overcommit", "hint"}},
		{"binding verbosity only (srun --cpu-bind=quiet)", Srun, []string{"--cpu-bind=quiet", "--mem-bind=v,none", "--gpu-bind=verbose", "x"}, []string{"x"},
			func(o *Options) {}, []string{"cpu-bind", "mem-bind", "gpu-bind"}},
		{"dash is a script", Sbatch, []string{"-N1", "-", "a"}, []string{"-", "a"},
			func(o *Options) { o.Nodes = Nodes{1, 1} }, []string{"nodes"}},
		{"option value starting with dash", Sbatch, []string{"-J", "-x-"}, nil,
			func(o *Options) { o.Name = "-x-" }, []string{"job-name"}},
		{"verbose counted", Srun, []string{"-vv", "-v", "x"}, []string{"x"},
			func(o *Options) { o.Verbose = 3 }, []string{"verbose"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest, err := ParseArgs(tt.cmd, tt.args)
			if err != nil {
				t.Fatalf("ParseArgs(%s, %q) = error %v; want success", tt.cmd, tt.args, err)
			}
			want := Options{Set: map[string]bool{}}
			tt.want(&want)
			for _, s := range tt.set {
				want.Set[s] = true
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("ParseArgs(%s, %q) =\n%+v\nwant\n%+v", tt.cmd, tt.args, got, want)
			}
			if !slices.Equal(rest, tt.rest) {
				t.Errorf("ParseArgs(%s, %q) rest = %q; want %q", tt.cmd, tt.args, rest, tt.rest)
			}
		})
	}
}

// TestParseArgsErrors checks the exact message of each kind of mistake.
func TestParseArgsErrors(t *testing.T) {
	tests := []struct {
		cmd  Command
		args []string
		want string
	}{
		{Sbatch, []string{"--foo", "x"}, "unrecognized option '--foo'"},
		{Sbatch, []string{"--=x"}, "unrecognized option '--'"},
		{Sbatch, []string{"-y"}, "invalid option -- 'y'"},
		{Srun, []string{"--jobid", "abc"}, `--jobid: job id "abc": want a positive integer N, or N_M (one array task), N_[a-b] or N_[a,b-c] (array tasks)`},
		{Srun, []string{"--jobid", "4_2"}, `--jobid: job id "4_2": names array tasks; want the job's own id N (each array task has one: squeue -r shows it)`},
		{Sbatch, []string{"--label"}, "unrecognized option '--label': srun takes it, sbatch does not"},
		{Sbatch, []string{"-l"}, "invalid option -- 'l': srun takes -l, sbatch does not"},
		{Srun, []string{"--wrap=hostname"}, "unrecognized option '--wrap': sbatch takes it, srun does not"},
		{Srun, []string{"--array=1-3", "x"}, "unrecognized option '--array': sbatch takes it, srun does not"},
		{Salloc, []string{"--parsable"}, "unrecognized option '--parsable': sbatch takes it, salloc does not"},
		{Salloc, []string{"--requeue"}, "unrecognized option '--requeue': sbatch takes it, salloc does not"},
		{Sbatch, []string{"--gpus-per=1"}, "option '--gpus-per' is ambiguous; possibilities: '--gpus-per-node' '--gpus-per-socket' '--gpus-per-task'"},
		{Sbatch, []string{"--parsable=1"}, "option '--parsable' doesn't allow an argument"},
		{Sbatch, []string{"--time"}, "option '--time' requires an argument"},
		{Sbatch, []string{"-t"}, "option requires an argument -- 't'"},
		{Sbatch, []string{"-t", "90x"}, `--time "90x": want MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED`},
		{Sbatch, []string{"-N", "x"}, `--nodes "x": want N or N-M (each a positive number, optionally with a k or m suffix)`},
		{Sbatch, []string{"-N", "3-2"}, `--nodes "3-2": the maximum 2 is below the minimum 3; want N or N-M (each a positive number, optionally with a k or m suffix)`},
		{Sbatch, []string{"-n", "0"}, `--ntasks "0": want a positive whole number`},
		{Sbatch, []string{"--array=0-x"}, `--array "0-x": bad item "0-x"; want N, N-M, N-M:S or lists of them, with an optional %LIMIT`},
		{Sbatch, []string{"--array=0-2000"}, `--array "0-2000": index 2000 is above 1000 (MaxArraySize 1001); want N, N-M, N-M:S or lists of them, with an optional %LIMIT`},
		{Sbatch, []string{"-w", "n[1-"}, `--nodelist: hostlist "n[1-": "n[1-": unclosed or nested '['; want PREFIX[RANGES] with RANGES like 1-4,7`},
		{Sbatch, []string{"--mem=1X"}, `--mem: memory size "1X": want a size in MiB, or a number with a K, M, G or T suffix`},
		{Sbatch, []string{"--mem=1G", "--mem-per-cpu=1G"}, "--mem, --mem-per-cpu and --mem-per-gpu are mutually exclusive"},
		{Sbatch, []string{"--signal=FOO"}, `--signal "FOO": want [B:]SIG[@SECONDS] (SIG a name such as USR1 or SIGUSR1, or a number 1-64; SECONDS 0-65535)`},
		{Srun, []string{"--signal=B:USR1"}, `--signal "B:USR1": B: (batch shell only) is an sbatch option; want [B:]SIG[@SECONDS] (SIG a name such as USR1 or SIGUSR1, or a number 1-64; SECONDS 0-65535)`},
		{Sbatch, []string{"--open-mode=x"}, `--open-mode "x": want append or truncate`},
		{Sbatch, []string{"--exclusive=user"}, "--exclusive=user: not supported by Shoal: only whole-node --exclusive (no =user or =mcs)"},
		{Sbatch, []string{"--gres=nic:1"}, `--gres "nic": not supported by Shoal: it allocates only GPUs (--gres=gpu[:TYPE][:COUNT])`},
		{Sbatch, []string{"--kill-on-invalid-dep=no"}, "--kill-on-invalid-dep=no: not supported by Shoal: Shoal always cancels a job whose dependency can never hold; accepted: yes"},
		{Srun, []string{"--het-group=1"}, "--het-group=1: not supported by Shoal: heterogeneous jobs are not supported by Shoal; accepted: 0, the whole job"},
		{Srun, []string{"-m", "arbitrary"}, `distribution "arbitrary": arbitrary needs a host file per rank, which Shoal does not read; use block, cyclic or plane=N`},
		{Sbatch, []string{"--reservation=maint"}, "--reservation=maint: not supported by Shoal: Shoal has no reservations (Slurm refuses a job naming one that does not exist)"},
		{Sbatch, []string{"--batch=haswell"}, "--batch=haswell: not supported by Shoal: Shoal has no node features to pick the batch host by"},
		{Sbatch, []string{":", "-N1", "b.sh"}, `":": heterogeneous jobs are not supported by Shoal`},
		{Srun, []string{"-N1", "a", ":", "-N2", "b"}, `":": heterogeneous jobs are not supported by Shoal`},
		{Sbatch, []string{"--wrap=hostname", "job.sh"}, `--wrap: script arguments "job.sh" are not permitted with --wrap`},
		{Sbatch, []string{"-N2", "-G3", "--gpus-per-node=2"}, "--gpus=3 is not a multiple of --gres=gpu/--gpus-per-node (2)"},
		{Sbatch, []string{"-N2", "-G8", "--gpus-per-node=2"}, "--gpus=8 at 2 per node needs 4 nodes, outside --nodes 2-2"},
		{Sbatch, []string{"--gres=gpu:2", "--gpus-per-node=4"}, "--gres=gpu:2 and --gpus-per-node=4 disagree: give one of them"},
		{Srun, []string{"--gpus-per-task=1", "x"}, "--gpus-per-task needs --gpus or -n/--ntasks"},
		{Sbatch, []string{"-n2", "--gpus-per-task=1", "-G3"}, "--gpus=3, --gpus-per-task=1 and --ntasks=2 disagree: want gpus = gpus-per-task × ntasks"},
		{Sbatch, []string{"--gpus=a100:1", "--gpus-per-node=h100:1"}, `--gpus-per-node "h100:1": GPU type "h100" differs from "a100" given before: want one GPU type per job`},
		{Sbatch, []string{"-C", "a&&b"}, `--constraint "a&&b": a feature is missing at byte 2; want features joined by & or |, each optionally *COUNT, grouped with ( ) and at most one [ ] set`},
		{Sbatch, []string{"-d", "afterok:1,afterany:2?singleton"}, `--dependency "afterok:1,afterany:2?singleton": "afterok:1,afterany:2?singleton" mixes ',' and '?' (Slurm allows one kind of separator); ` + dependencyForms},
		{Sbatch, []string{"--nice=x"}, `--nice "x": want a whole number from -2147483645 to 2147483645`},
		{Srun, []string{"-K", "x"}, ""}, // -K takes no separate argument: x is the command
		{Command("squeue"), nil, `command "squeue": want sbatch, srun or salloc`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(append([]string{string(tt.cmd)}, tt.args...), " "), func(t *testing.T) {
			_, _, err := ParseArgs(tt.cmd, tt.args)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("ParseArgs(%s, %q) error = %q; want %q", tt.cmd, tt.args, got, tt.want)
			}
		})
	}
}

// TestOptionTable checks the table itself: no command sees one long name
// or one short letter twice, and every row says what Shoal does with it.
func TestOptionTable(t *testing.T) {
	for _, c := range []Command{Sbatch, Srun, Salloc} {
		longs, shorts := map[string]bool{}, map[byte]string{}
		for _, d := range optionTable {
			if d.cmds&c.set() == 0 {
				continue
			}
			if longs[d.long] {
				t.Errorf("%s: --%s twice", c, d.long)
			}
			longs[d.long] = true
			if d.short != 0 {
				if prev, ok := shorts[d.short]; ok {
					t.Errorf("%s: -%c is both --%s and --%s", c, d.short, prev, d.long)
				}
				shorts[d.short] = d.long
			}
			n := 0
			for _, has := range []bool{d.apply != nil, d.warn != "", d.reject != ""} {
				if has {
					n++
				}
			}
			if n != 1 {
				t.Errorf("--%s: %d of apply, warn, reject; want exactly 1", d.long, n)
			}
		}
	}
}

// torchrunScript is a realistic multi-node training script: a shebang,
// an #SBATCH header with comments and quoting, and a body whose #SBATCH
// lines must be ignored.
const torchrunScript = `#!/bin/bash
# Train a 7B model on 4 nodes x 8 GPUs.
#SBATCH --job-name="llm 7b"        # name shown by squeue
#SBATCH -N 4                       # four nodes
#SBATCH --ntasks-per-node=1        # torchrun starts the 8 local ranks
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=96
#SBATCH --mem=0
#SBATCH -t 2-00:00:00
#SBATCH -o logs/%x-%j.out
#SBATCH --signal=B:USR1@300
#SBATCH --requeue
#SBATCH --exclusive
#SBATCH --export=ALL,NCCL_DEBUG=INFO
#SBATCH --account=ml-research

  # an indented comment does not end the header
#SBATCH --constraint='a100&ib'

set -euo pipefail
#SBATCH --partition=ignored-after-the-first-command
export MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
export MASTER_PORT=29500
echo "#SBATCH -N 99 inside a string"
srun --kill-on-bad-exit=1 torchrun \
  --nnodes "$SLURM_NNODES" --nproc_per_node 8 \
  --rdzv_backend c10d --rdzv_endpoint "$MASTER_ADDR:$MASTER_PORT" \
  train.py --config configs/7b.yaml "$@"
`

// TestParseBatchTorchrun protects the header rule (directives end at the
// first command) and the override rule (the command line wins).
func TestParseBatchTorchrun(t *testing.T) {
	dirs, err := ScriptDirectives([]byte(torchrunScript))
	if err != nil {
		t.Fatalf("ScriptDirectives = %v", err)
	}
	wantDirs := []string{"--job-name=llm 7b", "-N", "4", "--ntasks-per-node=1", "--gpus-per-node=8", "--cpus-per-task=96",
		"--mem=0", "-t", "2-00:00:00", "-o", "logs/%x-%j.out", "--signal=B:USR1@300", "--requeue", "--exclusive",
		"--export=ALL,NCCL_DEBUG=INFO", "--account=ml-research", "--constraint=a100&ib"}
	if !slices.Equal(dirs, wantDirs) {
		t.Errorf("ScriptDirectives = %q; want %q", dirs, wantDirs)
	}

	o, rest, err := ParseBatch([]byte(torchrunScript), []string{"-N", "2", "--time=30", "--no-requeue", "-J", "smoke", "train.sbatch", "--lr", "3e-4"})
	if err != nil {
		t.Fatalf("ParseBatch = %v", err)
	}
	want := Options{
		Nodes: Nodes{2, 2}, NTasksPerNode: 1, GPUsPerNode: 8, CPUsPerTask: 96, MemAll: true,
		TimeLimit: 30 * time.Minute, Name: "smoke", Output: "logs/%x-%j.out",
		Signal:  &Signal{Name: "USR1", Number: 10, Seconds: 300, BatchOnly: true},
		Requeue: ptr(false), Exclusive: true,
		Export:  &Export{All: true, Vars: []ExportVar{{"NCCL_DEBUG", "INFO", true}}},
		Account: "ml-research", Constraint: "a100&ib",
		Set: map[string]bool{},
	}
	for _, s := range []string{"job-name", "nodes", "ntasks-per-node", "gpus-per-node", "cpus-per-task", "mem", "time",
		"output", "signal", "requeue", "no-requeue", "exclusive", "export", "account", "constraint"} {
		want.Set[s] = true
	}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("ParseBatch =\n%+v\nwant\n%+v", o, want)
	}
	if wantRest := []string{"--lr", "3e-4"}; !slices.Equal(rest, wantRest) {
		t.Errorf("ParseBatch rest = %q; want %q", rest, wantRest)
	}
}

func TestScriptDirectives(t *testing.T) {
	tests := []struct {
		name, script string
		want         []string
	}{
		{"empty", "", nil},
		{"no header", "#!/bin/sh\nhostname\n#SBATCH -N 2\n", nil},
		{"blank and comment lines", "#!/bin/sh\n\n   \n# c\n\t#SBATCH -N 9\n#SBATCH -N 2\n", []string{"-N", "2"}},
		{"inline comment", "#SBATCH -N 2 # two nodes\n#SBATCH -J a#b\n", []string{"-N", "2", "-J", "a"}},
		{"quotes and escapes", `#SBATCH -J "a b" --comment='x "y"' -o a\ b\#c` + "\n", []string{"-J", "a b", "--comment=x \"y\"", "-o", "a", "b#c"}},
		{"quoted empty ends the line", `#SBATCH -J "" -N 2` + "\n", []string{"-J"}},
		{"glued magic word", "#SBATCH-N2\n", []string{"-N2"}},
		{"no newline at end", "#SBATCH --wait", []string{"--wait"}},
		{"carriage return is space", "#SBATCH -N 2\r\n", []string{"-N", "2"}},
		{"first command ends header", "#!/bin/sh\necho hi # #SBATCH\n#SBATCH -N 2\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ScriptDirectives([]byte(tt.script))
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ScriptDirectives(%q) = %q, %v; want %q, nil", tt.script, got, err, tt.want)
			}
		})
	}
}

func TestParseBatchErrors(t *testing.T) {
	tests := []struct {
		script string
		args   []string
		want   string
	}{
		{"hostname\n", nil, "batch script: the first line must start with #! followed by the path to an interpreter, for instance #!/bin/sh"},
		{"#!/bin/sh\r\nhostname\r\n", nil, `batch script: DOS line breaks (\r\n) instead of Unix line breaks (\n)`},
		{"#!/bin/sh\n#SBATCH -N \"2\n", nil, `#SBATCH line 2 "#SBATCH -N \"2": unmatched "`},
		{"#!/bin/sh\n#SBATCH :\n", nil, `#SBATCH line 2 "#SBATCH :": unexpected ':' (heterogeneous jobs are not supported by Shoal)`},
		{"#!/bin/sh\n#SBATCH -N 2\n#SBATCH foo\n", nil, `#SBATCH line 3: invalid directive "foo": want options only`},
		{"#!/bin/sh\n#SBATCH -N 2\n#SBATCH --label\n", nil, "#SBATCH line 3: unrecognized option '--label': srun takes it, sbatch does not"},
		{"#!/bin/sh\n#SBATCH -t 1x\n", nil, `#SBATCH line 2: --time "1x": want MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS or UNLIMITED`},
		{"#!/bin/sh\n#SBATCH --mem=4G\n", []string{"--mem-per-cpu=1G", "x.sh"}, "--mem, --mem-per-cpu and --mem-per-gpu are mutually exclusive"},
		{"#!/bin/sh\n#SBATCH --wrap=hostname\n", nil, "#SBATCH --wrap: a batch script cannot wrap another command"},
		{"#!/bin/sh\n", []string{"--wrap=hostname"}, "--wrap: a batch script was given as well"},
		{"#!/bin/sh\n#SBATCH -N\n", nil, "#SBATCH line 2: option requires an argument -- 'N'"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			_, _, err := ParseBatch([]byte(tt.script), tt.args)
			if err == nil || err.Error() != tt.want {
				t.Errorf("ParseBatch(%q, %q) error = %v; want %q", tt.script, tt.args, err, tt.want)
			}
		})
	}
}

// TestParseBatchValueOnNextLine checks that, as in sbatch, all directive
// arguments form one list: an option's value may follow on the next line.
func TestParseBatchValueOnNextLine(t *testing.T) {
	o, _, err := ParseBatch([]byte("#!/bin/sh\n#SBATCH -N\n#SBATCH 3\n"), nil)
	if err != nil || o.Nodes != (Nodes{3, 3}) {
		t.Errorf("ParseBatch(-N / 3) = %+v, %v; want 3 nodes", o.Nodes, err)
	}
}

func FuzzScriptDirectives(f *testing.F) {
	f.Add([]byte(torchrunScript))
	f.Add([]byte("#SBATCH -N 2 # c\n#SBATCH -J \"a b\" 'c'\\ d\n"))
	f.Add([]byte("#SBATCH :\n"))
	f.Add([]byte("#SBATCH \"\n"))
	f.Add([]byte("\n\n#SBATCH\\"))
	f.Fuzz(func(t *testing.T, script []byte) {
		args, err := ScriptDirectives(script)
		if err != nil {
			return
		}
		if len(args) > MaxDirectiveArgs {
			t.Fatalf("ScriptDirectives gave %d args; want at most %d", len(args), MaxDirectiveArgs)
		}
		for _, a := range args {
			if a == "" {
				t.Fatalf("ScriptDirectives(%q) gave an empty argument", script)
			}
		}
		// Quoting each argument back gives the same arguments.
		var b strings.Builder
		b.WriteString(directiveMagic)
		for _, a := range args {
			b.WriteString(` "`)
			for i := 0; i < len(a); i++ {
				if a[i] == '\\' || a[i] == '"' {
					b.WriteByte('\\')
				}
				b.WriteByte(a[i])
			}
			b.WriteString(`"`)
		}
		again, err := ScriptDirectives([]byte(b.String()))
		if err != nil || !slices.Equal(again, args) {
			t.Fatalf("ScriptDirectives(requoted %q) = %q, %v; want %q", b.String(), again, err, args)
		}
		// ParseBatch must not panic on any header.
		_, _, _ = ParseBatch(append([]byte("#!/bin/sh\n"), script...), nil)
	})
}

func FuzzParseArgs(f *testing.F) {
	f.Add("sbatch", "-N2\x00--gres=gpu:a100:4\x00-t\x001-00:00\x00job.sh\x00--lr")
	f.Add("srun", "-lK1\x00-n\x008\x00--gpus-per-task=1\x00torchrun")
	f.Add("salloc", "--exclusive\x00--nice\x00--mem=0\x00bash")
	f.Add("sbatch", "-a\x000-15%4\x00-d\x00afterok:1_2?after:3+5\x00--signal=B:10@5")
	f.Add("sbatch", "--gpus-per\x00--no\x00-")
	f.Fuzz(func(t *testing.T, cmd, joined string) {
		args := strings.Split(joined, "\x00")
		o, rest, err := ParseArgs(Command(cmd), args)
		if err != nil {
			return
		}
		if len(rest) > len(args) {
			t.Fatalf("ParseArgs rest %q longer than args %q", rest, args)
		}
		if o.Array != nil {
			if a, err := ParseArray(o.Array.String()); err != nil || !reflect.DeepEqual(a, *o.Array) {
				t.Fatalf("ParseArray(%q) = %v, %v; want %v", o.Array.String(), a, err, *o.Array)
			}
		}
		if o.Dependency != nil {
			if d, err := ParseDependency(o.Dependency.String()); err != nil || !reflect.DeepEqual(d, *o.Dependency) {
				t.Fatalf("ParseDependency(%q) = %v, %v; want %v", o.Dependency.String(), d, err, *o.Dependency)
			}
		}
	})
}

// TestNoKillAndKillCommand: --no-kill[=set|off|no] and salloc's
// -K/--kill-command[=SIGNAL] as Slurm's arg_set_no_kill and
// arg_set_kill_command take them.
func TestNoKillAndKillCommand(t *testing.T) {
	for _, tt := range []struct {
		cmd    Command
		args   []string
		noKill bool
		kill   int
		bad    bool
	}{
		{Sbatch, []string{"-k"}, true, 0, false},
		{Sbatch, []string{"--no-kill=set"}, true, 0, false},
		{Srun, []string{"-k", "--no-kill=off"}, false, 0, false},
		{Salloc, []string{"--no-kill=NO"}, false, 0, false},
		{Salloc, []string{"--no-kill=maybe"}, false, 0, true},
		{Salloc, []string{"-K"}, false, 15, false},
		{Salloc, []string{"--kill-command=usr1"}, false, 10, false},
		{Salloc, []string{"-KSIGINT"}, false, 2, false},
		{Salloc, []string{"--kill-command=9"}, false, 9, false},
		{Salloc, []string{"--kill-command=B:USR1"}, false, 0, true},
		{Salloc, []string{"--kill-command=NOPE"}, false, 0, true},
	} {
		opts, _, err := ParseArgs(tt.cmd, append(tt.args, "true"))
		if (err != nil) != tt.bad || err == nil && (opts.NoKill != tt.noKill || opts.KillCommand != tt.kill) {
			t.Errorf("%s %q: no-kill %v, kill-command %d, err %v; want %v, %d, error %v",
				tt.cmd, tt.args, opts.NoKill, opts.KillCommand, err, tt.noKill, tt.kill, tt.bad)
		}
	}
}

// TestGetUserEnv: --get-user-env[=SECONDS][S|L] as Slurm's
// arg_set_get_user_env takes it.
func TestGetUserEnv(t *testing.T) {
	for v, ok := range map[string]bool{"": true, "=10": true, "=10L": true, "=s": true, "=L": true, "=10x": false, "=SL": false} {
		opts, _, err := ParseArgs(Sbatch, []string{"--get-user-env" + v, "--wrap", "true"})
		if (err == nil) != ok || err == nil && !opts.GetUserEnv {
			t.Errorf("--get-user-env%s: %v, set %v; want accepted %v", v, err, opts.GetUserEnv, ok)
		}
	}
}

// TestSrunWait: srun -W SECONDS as Slurm's srun reads it (a decimal, 0
// or more: "abc", "-1" and "1x" are Slurm's "Invalid numeric value";
// past 32 bits it is the most).
func TestSrunWait(t *testing.T) {
	for _, tc := range []struct {
		arg  string
		want time.Duration // -1: refused
	}{
		{"-W0", 0}, {"--wait=00", 0}, {"--wait=10", 10 * time.Second}, {"-W", -1},
		{"--wait=abc", -1}, {"--wait=-1", -1}, {"--wait=1x", -1},
		{"--wait=99999999999", math.MaxInt32 * time.Second},
	} {
		opts, _, err := ParseArgs(Srun, []string{tc.arg, "true"})
		if (err == nil) != (tc.want >= 0) || err == nil && opts.WaitTime != tc.want {
			t.Errorf("srun %s: %v, %v; want %v (-1: refused)", tc.arg, opts.WaitTime, err, tc.want)
		}
	}
}

// TestContainerOption: sbatch and srun take --container (the bundle, as
// given); salloc refuses it in the words of Debian's Slurm
// (refusals_golden.txt).
func TestContainerOption(t *testing.T) {
	for _, cmd := range []Command{Sbatch, Srun} {
		args := []string{"--container=bundle", "true"}
		if cmd == Sbatch {
			args = []string{"--container", "/b/c", "--wrap", "true"}
		}
		o, _, err := ParseArgs(cmd, args)
		want := map[Command]string{Sbatch: "/b/c", Srun: "bundle"}[cmd]
		if err != nil || o.Container != want {
			t.Errorf("ParseArgs(%v, %q) = Container %q, %v; want %q", cmd, args, o.Container, err, want)
		}
	}
	_, _, err := ParseArgs(Salloc, []string{"--container=/tmp", "true"})
	if want := "--container requires LaunchParameters=use_interactive_step"; err == nil || err.Error() != want {
		t.Errorf("salloc --container: %v; want %s", err, want)
	}
}
