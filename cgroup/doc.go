// Package cgroup confines a task's processes with Linux control groups,
// as Slurm's task/cgroup does, over either hierarchy the host has: cgroup
// v1 (one mount per controller) or v2 (the unified hierarchy). One small
// interface, Hierarchy, hides which.
//
// # What it owns
//
//   - Detecting the host's hierarchy and controllers (Detect): v2 when
//     /sys/fs/cgroup is a cgroup2 mount whose root lists controllers, else
//     v1 with whichever of cpuset, cpu(acct), memory, devices, freezer and
//     pids are mounted.
//   - One directory tree per agent, under the cgroup the agent runs in
//     (so an agent confined by its own cgroup, a container or a systemd
//     unit, puts its jobs inside it): <own>/shoal_<node>/ in every
//     controller. Several agents on one machine never share a tree.
//     Under it, a cgroup per job incarnation holding the job's limits
//     (cpuset, memory, devices) and a child per task (the job's own task,
//     or a step's) holding the pids limit and the processes.
//   - Limits: cpuset.cpus (cpuset.mems copied from the parent on v1),
//     the memory limit without swap, pids.max, and the NVIDIA GPUs
//     (major 195) the job was not given denied: on v1 by the devices
//     controller's deny list, on v2 by a BPF_PROG_TYPE_CGROUP_DEVICE
//     program attached to the job's cgroup (bpf.go), as runc does;
//     Hierarchy.Has reports Devices on v2 only where such a program loads.
//   - Starting a process inside a cgroup from birth (ForkIn): on v2 with
//     clone3's CLONE_INTO_CGROUP (SysProcAttr.UseCgroupFD); on v1 the
//     forking OS thread joins the cgroup, forks, and leaves again, and
//     the child, which inherits its parent thread's cgroups, never runs
//     outside.
//   - Killing every process of a cgroup (Kill): cgroup.kill on v2; on v1
//     freeze, SIGKILL every member, thaw, until the cgroup is empty or a
//     bound passes.
//   - Reading usage: peak memory, user and system CPU time, memory now
//     (for averages) and the kernel's count of OOM kills.
//
// # What it must never touch
//
// Cgroups outside the agent's tree: it creates, writes and removes only
// directories under its root (Root.Dirs), and kills only processes it
// finds in them. It knows nothing of jobs beyond the names and limits its
// callers pass.
//
// # CPU numbering
//
// cpus.go maps the CPU positions of an allocation (cluster.Node's
// numbering: thread 0 of every core socket by socket, then thread 1, ...)
// to the host's CPU ids, from the CPUs this process may run on and their
// topology in sysfs. A node that claims more CPUs than the host has (a
// simulated node) maps positions modulo the host's CPUs: the cpuset is
// then an approximation, which MapCPUs reports.
package cgroup
