package exec

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/shoal-sched/shoal/cluster"
)

// defaultPath is the PATH a rank gets when the submitter gave none; it is
// the PATH slurmstepd hands to tasks (see the golden environments).
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// contractKeys are every variable the contract may set, also those it sets
// only sometimes (SLURM_RESTART_COUNT, the GPU lists). A submitter's value
// for any of them is dropped so that a stale copy from the submit shell
// (sbatch exports the caller's environment) never reaches a rank.
var contractKeys = map[string]bool{
	"MASTER_ADDR": true, "MASTER_PORT": true, "WORLD_SIZE": true, "RANK": true,
	"LOCAL_RANK": true, "LOCAL_WORLD_SIZE": true, "NODE_RANK": true,
	"GROUP_RANK": true, "CUDA_VISIBLE_DEVICES": true, "CUDA_DEVICE_ORDER": true,

	"SLURM_JOB_ID": true, "SLURM_JOBID": true, "SLURM_JOB_NAME": true,
	"SLURM_JOB_NODELIST": true, "SLURM_NODELIST": true, "SLURM_NNODES": true,
	"SLURM_JOB_NUM_NODES": true, "SLURM_NTASKS": true, "SLURM_NPROCS": true,
	"SLURM_NTASKS_PER_NODE": true, "SLURM_TASKS_PER_NODE": true,
	"SLURM_PROCID": true, "SLURM_LOCALID": true, "SLURM_NODEID": true,
	"SLURM_GPUS_ON_NODE": true, "SLURM_JOB_GPUS": true, "SLURM_STEP_GPUS": true,
	"SLURM_CPUS_PER_TASK": true, "SLURM_SUBMIT_DIR": true, "SLURMD_NODENAME": true,
	"SLURM_JOB_USER": true, "SLURM_JOB_UID": true, "SLURM_JOB_GID": true,
	"SLURM_RESTART_COUNT": true,

	"SHOAL_JOB_ID": true, "SHOAL_JOB_NAME": true, "SHOAL_NODELIST": true,
	"SHOAL_NNODES": true, "SHOAL_NTASKS": true, "SHOAL_PROCID": true,
	"SHOAL_LOCALID": true, "SHOAL_NODEID": true, "SHOAL_NODE_NAME": true,
	"SHOAL_INCARNATION": true,
}

// Env returns the complete environment of one rank, sorted by key, as
// KEY=VALUE strings. localRank is the rank's index on this node, from 0 to
// TasksPerNode-1. It is pure: it reads no clock, file or user database.
//
// Spec.Env comes first, later entries winning over earlier ones; entries
// for any variable the contract owns are dropped, so the contract always
// wins. PATH, USER and LOGNAME are filled in when Spec.Env lacks them.
// HOME needs the user database, so Env leaves it to the submitter; Start
// adds it from the user's passwd entry.
//
// Values follow Slurm's formats (see the golden environments under
// shared/peers/slurm/env_golden), with two deliberate differences:
// CUDA_VISIBLE_DEVICES is set, empty, on a node given no GPUs, so a job
// without GPUs cannot touch another job's (Slurm relies on device cgroups
// for that); and SLURM_NTASKS_PER_NODE and SLURM_CPUS_PER_TASK are always
// set, from the request with its defaults.
func Env(l Launch, localRank int) []string {
	return contractEnv(l, localRank, "")
}

// contractEnv is Env with the user's home directory, which Start looks up;
// home "" leaves HOME to Spec.Env.
func contractEnv(l Launch, localRank int, home string) []string {
	req := l.Spec.Request.WithDefaults()
	tpn := req.TasksPerNode
	nnodes := len(l.Alloc.Nodes)
	var gpus []int
	nodeName := l.NodeName
	if l.NodeIndex >= 0 && l.NodeIndex < nnodes {
		gpus = l.Alloc.Nodes[l.NodeIndex].GPUs
		if nodeName == "" {
			nodeName = l.Alloc.Nodes[l.NodeIndex].Node
		}
	}
	gpuList := joinInts(gpus)
	rank := l.NodeIndex*tpn + localRank
	itoa := strconv.Itoa
	name := jobName(l.Spec)
	job := l.Job.String()

	env := make(map[string]string, len(l.Spec.Env)+len(contractKeys)+4)
	for _, kv := range l.Spec.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || contractKeys[k] {
			continue
		}
		env[k] = v
	}
	set := func(k, v string) { env[k] = v }
	setDefault := func(k, v string) {
		if _, ok := env[k]; !ok {
			env[k] = v
		}
	}

	setDefault("PATH", defaultPath)
	if l.Spec.User != "" {
		setDefault("USER", l.Spec.User)
		setDefault("LOGNAME", l.Spec.User)
	}
	if home != "" {
		setDefault("HOME", home)
	}

	// The torch.distributed / torchrun contract.
	set("MASTER_ADDR", l.MasterAddr)
	set("MASTER_PORT", itoa(l.Alloc.MasterPort))
	set("WORLD_SIZE", itoa(nnodes*tpn))
	set("RANK", itoa(rank))
	set("LOCAL_RANK", itoa(localRank))
	set("LOCAL_WORLD_SIZE", itoa(tpn))
	set("NODE_RANK", itoa(l.NodeIndex))
	set("GROUP_RANK", itoa(l.NodeIndex))
	set("CUDA_VISIBLE_DEVICES", gpuList)
	// GPU indices are NVML's, which follow the PCI bus; CUDA's default
	// order is "fastest first". Pin CUDA to the bus order so both agree.
	set("CUDA_DEVICE_ORDER", "PCI_BUS_ID")

	// Slurm's names, formatted as slurmstepd formats them.
	set("SLURM_JOB_ID", job)
	set("SLURM_JOBID", job)
	set("SLURM_JOB_NAME", name)
	set("SLURM_JOB_NODELIST", l.NodeList)
	set("SLURM_NODELIST", l.NodeList)
	set("SLURM_NNODES", itoa(nnodes))
	set("SLURM_JOB_NUM_NODES", itoa(nnodes))
	set("SLURM_NTASKS", itoa(nnodes*tpn))
	set("SLURM_NPROCS", itoa(nnodes*tpn))
	set("SLURM_NTASKS_PER_NODE", itoa(tpn))
	set("SLURM_TASKS_PER_NODE", tasksPerNode(tpn, nnodes))
	set("SLURM_PROCID", itoa(rank))
	set("SLURM_LOCALID", itoa(localRank))
	set("SLURM_NODEID", itoa(l.NodeIndex))
	set("SLURM_GPUS_ON_NODE", itoa(len(gpus)))
	if len(gpus) > 0 { // Slurm sets the GPU lists only when GPUs were given
		set("SLURM_JOB_GPUS", gpuList)
		set("SLURM_STEP_GPUS", gpuList)
	}
	set("SLURM_CPUS_PER_TASK", itoa(req.CPUsPerTask))
	set("SLURM_SUBMIT_DIR", l.Spec.WorkDir)
	set("SLURMD_NODENAME", nodeName)
	set("SLURM_JOB_USER", l.Spec.User)
	set("SLURM_JOB_UID", itoa(l.Spec.UID))
	set("SLURM_JOB_GID", itoa(l.Spec.GID))
	if l.Incarnation > 1 { // Slurm sets it only after a requeue
		set("SLURM_RESTART_COUNT", strconv.FormatUint(l.Incarnation-1, 10))
	}

	// Shoal's own names.
	set("SHOAL_JOB_ID", job)
	set("SHOAL_JOB_NAME", name)
	set("SHOAL_NODELIST", l.NodeList)
	set("SHOAL_NNODES", itoa(nnodes))
	set("SHOAL_NTASKS", itoa(nnodes*tpn))
	set("SHOAL_PROCID", itoa(rank))
	set("SHOAL_LOCALID", itoa(localRank))
	set("SHOAL_NODEID", itoa(l.NodeIndex))
	set("SHOAL_NODE_NAME", nodeName)
	set("SHOAL_INCARNATION", strconv.FormatUint(l.Incarnation, 10))

	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.SortFunc(out, func(a, b string) int {
		ka, _, _ := strings.Cut(a, "=")
		kb, _, _ := strings.Cut(b, "=")
		return strings.Compare(ka, kb)
	})
	return out
}

// jobName is the job's name, or like sbatch's default the base name of the
// program it runs.
func jobName(s cluster.Spec) string {
	if s.Name != "" || len(s.Command) == 0 {
		return s.Name
	}
	return filepath.Base(s.Command[0])
}

// tasksPerNode formats Slurm's SLURM_TASKS_PER_NODE for an even spread:
// "2" on one node, "2(x3)" on three.
func tasksPerNode(tpn, nnodes int) string {
	if nnodes <= 1 {
		return strconv.Itoa(tpn)
	}
	return strconv.Itoa(tpn) + "(x" + strconv.Itoa(nnodes) + ")"
}

func joinInts(xs []int) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}
