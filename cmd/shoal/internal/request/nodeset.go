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

// HostLists are -w's and -x's node names, read from the file either
// names when it names one (a value with '/'), as Slurm reads them.
func HostLists(opts slurm.Options) (nodeList, exclude []string, err error) {
	nodeList, exclude = opts.NodeList, opts.Exclude
	if opts.NodeListFile != "" {
		if nodeList, err = hostsFile("--nodelist", opts.NodeListFile); err != nil {
			return nil, nil, err
		}
	}
	if opts.ExcludeFile != "" {
		if exclude, err = hostsFile("--exclude", opts.ExcludeFile); err != nil {
			return nil, nil, err
		}
	}
	return nodeList, exclude, nil
}

// nodeSetFromOptions maps sbatch/srun's -w, -x, -C and --exclusive into
// req; slurm.Options has expanded the hostlists already, or kept a file
// name to read here. -N grows to the node list's size, as in Slurm.
func nodeSetFromOptions(opts slurm.Options, req *api.SubmitRequest) error {
	var err error
	if req.NodeList, req.Exclude, err = HostLists(opts); err != nil {
		return err
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
