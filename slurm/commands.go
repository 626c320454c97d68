package slurm

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
)

// Commands are the Slurm commands the shoal binary answers to when run
// under their name. It is the one list: `shoal install-shims` links each
// of them, `shoal slurm NAME` takes them, and the agent puts them on
// every batch script's and step's PATH, so a script's squeue, scancel or
// sacct reaches the cluster that runs it.
var Commands = []Command{Sbatch, Srun, Salloc, Scontrol, Squeue, Scancel, Sinfo, Sacct, Sprio, Sacctmgr, Sshare, Sreport}
