package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/cluster"
	"github.com/shoal-sched/shoal/topology"
)

// reportTimeout bounds `shoal topology report`'s lldpcli run.
const reportTimeout = 10 * time.Second

func newTopologyReportCmd(g *globalFlags) *cobra.Command {
	var (
		name, lldpSocket, lldpCommand, input string
		remove                               bool
	)
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Report this switch's LLDP neighbours to the cluster (root), so its leaves find their parent on Ethernet",
		Long: `Report what a switch's own lldpd sees, so that the cluster knows which
switch is above a leaf where its nodes cannot tell (on Ethernet a node's
lldpd sees only its leaf). Run it on a leaf or spine switch that runs
Linux and lldpd (SONiC, Cumulus), or on a host that reads the switch's
LLDP table (--input FILE of 'lldpcli -f json show neighbors' output, "-"
for stdin), as root: through the local agent's socket, or from anywhere
with --addr https://HOST:7070 and a user token of root's ($SHOAL_TOKEN,
'shoal token create --user root'). The switch needs no node certificate.

The cluster keeps each switch's last report: a neighbour that says it is
a switch (LLDP's Bridge or Router capability) and is not a node is linked
to it, and a leaf none of whose nodes announces a parent takes the
smallest-named such switch that is not itself a leaf. Run it again when
cabling changes (a systemd timer or cron); --remove forgets the switch.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				h, err := os.Hostname()
				if err != nil {
					return fmt.Errorf("--switch: not given, and the host name: %w", err)
				}
				name, _, _ = strings.Cut(h, ".")
			}
			if err := topology.CheckName(name); err != nil {
				return fmt.Errorf("--switch: %w", err)
			}
			r := cluster.SwitchReport{Switch: name}
			if !remove {
				ns, err := lldpNeighbors(cmd, input, lldpSocket, lldpCommand)
				if err != nil {
					return err
				}
				var refused []error
				r.Neighbors, refused = topology.SwitchNeighbors(ns)
				for _, err := range refused {
					fmt.Fprintln(os.Stderr, "shoal topology report: warning: left out:", err)
				}
				if len(r.Neighbors) == 0 {
					return errors.New("no LLDP neighbours to report (is lldpd running, and are the switch's ports up?); --remove forgets the switch")
				}
			}
			c, err := g.client()
			if err != nil {
				return err
			}
			if err := c.ReportSwitch(cmd.Context(), r); err != nil {
				return err
			}
			if remove {
				fmt.Printf("switch %s: report removed\n", name)
				return nil
			}
			var switches []string
			for _, n := range r.Neighbors {
				if n.Bridge {
					switches = append(switches, n.Name)
				}
			}
			fmt.Printf("switch %s: %d neighbours reported (switches among them: %s)\n", name, len(r.Neighbors), orNone(strings.Join(switches, ", ")))
			return nil
		},
	}
	cmd.Flags().StringVar(&name, "switch", "", "this switch's name, as its nodes' lldpd see it (default: the host name up to the first dot)")
	cmd.Flags().StringVar(&lldpSocket, "lldp-socket", "", "lldpd's control socket (lldpcli -u; default lldpcli's)")
	cmd.Flags().StringVar(&lldpCommand, "lldpcli", "", "lldpcli's path (default: lldpcli on PATH)")
	cmd.Flags().StringVar(&input, "input", "", `read 'lldpcli -f json show neighbors' output from FILE ("-": stdin) instead of running lldpcli`)
	cmd.Flags().BoolVar(&remove, "remove", false, "forget the switch's report")
	return cmd
}

// lldpNeighbors are the neighbours in input (a file, "-" for stdin), or
// those lldpcli reports here.
func lldpNeighbors(cmd *cobra.Command, input, socket, command string) ([]topology.LLDPNeighbor, error) {
	if input != "" {
		var data []byte
		var err error
		if input == "-" {
			data, err = io.ReadAll(io.LimitReader(os.Stdin, 16<<20))
		} else {
			data, err = os.ReadFile(input)
		}
		if err != nil {
			return nil, fmt.Errorf("--input: %w", err)
		}
		ns, err := topology.ParseLLDP(data)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", input, err)
		}
		return ns, nil
	}
	ns, ok, err := topology.LLDP{Socket: socket, Command: command, Timeout: reportTimeout}.Neighbors(cmd.Context())
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errors.New("no lldpd to ask: install lldpd (and lldpcli), give --lldp-socket, or --input a saved 'lldpcli -f json show neighbors'")
	}
	return ns, nil
}
