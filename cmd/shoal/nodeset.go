package main

import (
	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/cmd/shoal/internal/request"
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
	if req.NodeList, err = request.HostsArg("--nodelist", n.nodelist); err != nil {
		return err
	}
	if req.Exclude, err = request.HostsArg("--exclude", n.exclude); err != nil {
		return err
	}
	return request.SetFeatures(req, n.constraint, n.exclusive)
}
