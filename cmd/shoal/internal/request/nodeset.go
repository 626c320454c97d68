package request

import (
	"fmt"
	"os"
	"slices"
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
	if err := SetFeatures(req, opts.Constraint, opts.Exclusive); err != nil {
		return err
	}
	if req.Nodes < len(req.NodeList) {
		req.Nodes = len(req.NodeList)
	}
	return nil
}

// SetFeatures puts -C's feature expression, once its syntax checks, and
// --exclusive into req: for sbatch, srun and salloc as for shoal submit.
func SetFeatures(req *api.SubmitRequest, constraint string, exclusive bool) error {
	if constraint != "" {
		if _, err := cluster.ParseConstraint(constraint); err != nil {
			return fmt.Errorf("--constraint: %w", err)
		}
	}
	req.Constraint = constraint
	req.Exclusive = exclusive
	return nil
}

// LimitNodeList applies Slurm's rule for a -w list naming more nodes
// than -N allows at most (Slurm 22.05 on the peer): srun keeps the
// list's first nodes and says so (the line it returns, for srun's stderr
// as Slurm's words: "Required nodelist includes more nodes than
// permitted by max-node count (3 > 2). Eliminating nodes from the
// nodelist."); sbatch and salloc refuse ("invalid number of nodes (-N
// 3-2)": the list raises the minimum above the maximum). A list within
// -N's range, or with no -N, raises the node count to its size
// (nodeSetFromOptions). It is pure but for reading a --nodelist file.
func LimitNodeList(cmd slurm.Command, opts slurm.Options) (slurm.Options, string, error) {
	if !opts.Set["nodes"] {
		return opts, "", nil
	}
	list, _, err := HostLists(opts)
	if err != nil {
		return opts, "", err
	}
	nodes, nodesMax := NodeRange(opts.Nodes, true)
	most := max(nodes, nodesMax)
	if len(list) <= most {
		return opts, "", nil
	}
	if cmd != slurm.Srun {
		return opts, "", fmt.Errorf("invalid number of nodes (-N %d-%d)", len(list), most)
	}
	line := fmt.Sprintf("Required nodelist includes more nodes than permitted by max-node count (%d > %d). Eliminating nodes from the nodelist.", len(list), most)
	opts.NodeList, opts.NodeListFile = slices.Clone(list[:most]), ""
	return opts, line, nil
}
