package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/slurm"
)

// nodeSetFlags are shoal submit's -w, -x, -C and --exclusive, worded as
// sbatch's.
type nodeSetFlags struct {
	nodelist, exclude, constraint string
	exclusive                     bool
}

func (n *nodeSetFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVarP(&n.nodelist, "nodelist", "w", "", "nodes the job must include, as a hostlist (node[01-04]) or a file of names; -N grows to fit them")
	f.StringVarP(&n.exclude, "exclude", "x", "", "nodes the job must not use, as a hostlist or a file of names")
	f.StringVarP(&n.constraint, "constraint", "C", "", "node features every node must have: names joined by & (and) and | (or), grouped with ( )")
	f.BoolVar(&n.exclusive, "exclusive", false, "take whole nodes: no other job shares them, and the job gets all their GPUs")
}

// apply puts the flags into req.
func (n *nodeSetFlags) apply(req *api.SubmitRequest) error {
	var err error
	if req.NodeList, err = hostsArg("--nodelist", n.nodelist); err != nil {
		return err
	}
	if req.Exclude, err = hostsArg("--exclude", n.exclude); err != nil {
		return err
	}
	if n.constraint != "" {
		if _, err := cluster.ParseConstraint(n.constraint); err != nil {
			return fmt.Errorf("--constraint: %w", err)
		}
	}
	req.Constraint = n.constraint
	req.Exclusive = n.exclusive
	return nil
}

// hostsArg expands a -w or -x value: a hostlist, or, when it names a
// file (it contains '/', as Slurm decides), the hostlists in that file,
// one or more a line. Repeated names are dropped.
func hostsArg(flag, v string) ([]string, error) {
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
	return dedupe(names), nil
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
	return dedupe(names), nil
}

func dedupe(names []string) []string {
	seen := make(map[string]bool, len(names))
	out := names[:0]
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
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
