package cgroup

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// HostCPU is one CPU this process may run on and where it sits.
type HostCPU struct {
	ID      int // the kernel's CPU id
	Package int // physical_package_id: the socket
	Core    int // core_id, unique within its package
}

// sysCPU is where the kernel describes CPUs.
const sysCPU = "/sys/devices/system/cpu"

// HostCPUs returns the CPUs this process may run on (sched_getaffinity:
// a container or a cpuset may allow fewer than the machine has), with
// their socket and core from sysfs. A CPU whose topology cannot be read
// counts as a core of its own on socket 0.
func HostCPUs() ([]HostCPU, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("sched_getaffinity: %w", err)
	}
	var cpus []HostCPU
	for id := range maxCPUID {
		if !set.IsSet(id) {
			continue
		}
		c := HostCPU{ID: id, Core: id}
		dir := filepath.Join(sysCPU, "cpu"+strconv.Itoa(id), "topology")
		if v, err := readInt(dir, "physical_package_id"); err == nil {
			c.Package = v
		}
		if v, err := readInt(dir, "core_id"); err == nil {
			c.Core = v
		}
		cpus = append(cpus, c)
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("sched_getaffinity: no CPU allowed")
	}
	return cpus, nil
}

func readInt(dir, name string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

type hostCore struct {
	pkg, core int
	ids       []int // its threads' ids, ascending: thread 0 first
}

func cores(cpus []HostCPU) []hostCore {
	var cs []hostCore
	for _, c := range cpus {
		i := slices.IndexFunc(cs, func(h hostCore) bool { return h.pkg == c.Package && h.core == c.Core })
		if i < 0 {
			cs = append(cs, hostCore{pkg: c.Package, core: c.Core})
			i = len(cs) - 1
		}
		cs[i].ids = append(cs[i].ids, c.ID)
	}
	for i := range cs {
		slices.Sort(cs[i].ids)
	}
	slices.SortFunc(cs, func(a, b hostCore) int {
		return cmp.Or(cmp.Compare(a.pkg, b.pkg), cmp.Compare(a.core, b.core), cmp.Compare(a.ids[0], b.ids[0]))
	})
	return cs
}

// Canonical returns the host CPU ids of cpus in the order cluster.Node
// numbers CPU positions: thread 0 of every core, socket by socket and
// core by core, then thread 1 of every core in the same order, and so on
// (a core's threads ordered by id). Position p is Canonical(cpus)[p].
// It is pure.
func Canonical(cpus []HostCPU) []int {
	cs := cores(cpus)
	out := make([]int, 0, len(cpus))
	for t := 0; len(out) < len(cpus); t++ {
		for _, c := range cs {
			if t < len(c.ids) {
				out = append(out, c.ids[t])
			}
		}
	}
	return out
}

// Layout returns the sockets, cores per socket and threads per core of
// cpus, as slurm.conf says them. When cpus are not that regular (a
// cpuset that allows part of a socket, or of a core) it returns one
// socket of len(cpus) single-threaded cores, which is always true of the
// numbering. It is pure.
func Layout(cpus []HostCPU) (sockets, coresPerSocket, threadsPerCore int) {
	cs := cores(cpus)
	if len(cs) == 0 {
		return 0, 0, 0
	}
	perPkg := map[int]int{}
	threads := len(cs[0].ids)
	regular := true
	for _, c := range cs {
		perPkg[c.pkg]++
		if len(c.ids) != threads {
			regular = false
		}
	}
	sockets = len(perPkg)
	coresPerSocket = perPkg[cs[0].pkg]
	for _, n := range perPkg {
		if n != coresPerSocket {
			regular = false
		}
	}
	if !regular || sockets*coresPerSocket*threads != len(cpus) {
		return 1, len(cpus), 1
	}
	return sockets, coresPerSocket, threads
}

// MapCPUs maps CPU positions of an allocation to host CPU ids through
// canonical (Canonical's order): position p is canonical[p] or, for a
// node that claims more CPUs than the host has, canonical[p mod
// len(canonical)]; approximate is then true. The ids come back ascending,
// without repeats. It is pure.
func MapCPUs(positions, canonical []int) (ids []int, approximate bool, err error) {
	if len(positions) == 0 {
		return nil, false, nil
	}
	if len(canonical) == 0 {
		return nil, false, fmt.Errorf("cpus %v: the host has no CPU to map them to", positions)
	}
	for _, p := range positions {
		if p < 0 {
			return nil, false, fmt.Errorf("cpu position %d: want 0 or more", p)
		}
		if p >= len(canonical) {
			approximate = true
		}
		ids = append(ids, canonical[p%len(canonical)])
	}
	slices.Sort(ids)
	return slices.Compact(ids), approximate, nil
}
