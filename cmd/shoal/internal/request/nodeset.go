package request

import (
	"fmt"
	"os"
	"strings"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// HostsArg expands a -w or -x value: a hostlist, or, when it names a
// file (it contains '/', as Slurm decides), the hostlists in that file,
// one or more a line. Repeated names are dropped.
func HostsArg(flag, v string) ([]string, error) {
	if v == "" {
		return nil, nil
	}
	if strings.Contains(v, "/") {
		return hostsFile(flag, v)
	}
	names, err := slurm.ExpandHostlist(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return slurm.UniqueHosts(names), nil
}

// maxHostsFileBytes bounds a -w/-x file.
const maxHostsFileBytes = 1 << 20

func hostsFile(flag, path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	if len(b) > maxHostsFileBytes {
		return nil, fmt.Errorf("%s %s: %d bytes, want at most %d", flag, path, len(b), maxHostsFileBytes)
	}
	var names []string
	for _, field := range strings.Fields(string(b)) {
		more, err := slurm.ExpandHostlist(field)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		names = append(names, more...)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s %s: no node names in the file", flag, path)
	}
	return slurm.UniqueHosts(names), nil
}

// nodeSetFromOptions maps sbatch/srun's -w, -x, -C and --exclusive into
// req; slurm.Options has expanded the hostlists already, or kept a file
// name to read here. -N grows to the node list's size, as in Slurm.
func nodeSetFromOptions(opts slurm.Options, req *api.SubmitRequest) error {
	var err error
	req.NodeList = opts.NodeList
	if opts.NodeListFile != "" {
		if req.NodeList, err = hostsFile("--nodelist", opts.NodeListFile); err != nil {
			return err
		}
	}
	req.Exclude = opts.Exclude
	if opts.ExcludeFile != "" {
		if req.Exclude, err = hostsFile("--exclude", opts.ExcludeFile); err != nil {
			return err
		}
	}
	if opts.Constraint != "" {
		if _, err := cluster.ParseConstraint(opts.Constraint); err != nil {
			return fmt.Errorf("--constraint: %w", err)
		}
	}
	req.Constraint = opts.Constraint
	req.Exclusive = opts.Exclusive
	if req.Nodes < len(req.NodeList) {
		req.Nodes = len(req.NodeList)
	}
	return nil
}
