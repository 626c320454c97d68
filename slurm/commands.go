package slurm

import (
	"os"
	"path/filepath"
)

// The other Slurm commands Shoal plays (Sbatch, Srun and Salloc are with
// the option parser).
const (
	Scontrol Command = "scontrol"
	Squeue   Command = "squeue"
	Scancel  Command = "scancel"
	Sinfo    Command = "sinfo"
	Sacct    Command = "sacct"
	Sprio    Command = "sprio"
	Sacctmgr Command = "sacctmgr"
	Sshare   Command = "sshare"
	Sreport  Command = "sreport"
	Sbcast   Command = "sbcast"
)

// Commands are the Slurm commands the shoal binary answers to when run
// under their name. It is the one list: `shoal install-shims` links each
// of them, `shoal slurm NAME` takes them, and the agent puts them on
// every batch script's and step's PATH, so a script's squeue, scancel or
// sacct reaches the cluster that runs it.
var Commands = []Command{Sbatch, Srun, Salloc, Scontrol, Squeue, Scancel, Sinfo, Sacct, Sprio, Sacctmgr, Sshare, Sreport, Sbcast}

// ShimBinary is the name of the small client binary (cmd/shoal/shim) that
// plays Commands and nothing else. It links the Slurm front-ends and the
// API client only, none of the agent (raft, gossip, metrics, plotting), so
// a script's thousands of sbatch or squeue calls each cost less
// (BENCHMARKS.md, "CLI start"). It is installed beside shoal; links to a
// Slurm command point at it when it is there (ShimTarget), else at shoal,
// which plays the same commands.
const ShimBinary = "shoal-slurm"

// ShimTarget is what a link named after one of Commands should point at,
// given self, the running shoal binary's resolved path: ShimBinary in
// self's directory when that is an executable file, else self.
func ShimTarget(self string) string {
	p := filepath.Join(filepath.Dir(self), ShimBinary)
	if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
		return p
	}
	return self
}
