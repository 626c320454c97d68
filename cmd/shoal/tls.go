package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/agent"
	"github.com/shoal-sched/shoal/pki"
)

func newTLSCmd(g *globalFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tls",
		Short: "The cluster's certificates: create the CA, certify nodes",
	}
	var (
		name, cluster, advertise string
	)
	initCmd := &cobra.Command{
		Use:   "init",
		Short: "Create the cluster CA, this node's certificate and the gossip key in --data-dir/tls",
		Long: `Creates, in <data-dir>/tls: the cluster CA (ca.pem, and its key ca-key.pem,
mode 0600), this node's certificate and key (node.pem, node-key.pem) and the
gossip encryption key (gossip.key). Run it once, on the first node, before
its first 'shoal agent'; an agent started on a fresh data dir that joins
nobody does the same by itself. Certify the other nodes with
'shoal tls cert create'.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := dataDirOf(g)
			if name == "" {
				h, err := os.Hostname()
				if err != nil {
					return fmt.Errorf("--name: not given and the host name is unknown: %w", err)
				}
				name, _, _ = strings.Cut(h, ".")
			}
			p := pki.DefaultPaths(dir)
			if _, err := os.Stat(p.Cert); err == nil {
				return fmt.Errorf("%s already exists: this data dir is certified already", p.Cert)
			}
			b, err := agent.InitTLS(p, cluster, name, advertise, time.Now())
			if err != nil {
				return err
			}
			fmt.Printf("Created in %s:\n", filepath.Dir(p.CA))
			fmt.Printf("  cluster CA   %s (fingerprint sha256:%s)\n", p.CA, b.CA.Fingerprint())
			fmt.Printf("  CA key       %s (keep it secret: it certifies nodes)\n", p.CAKey)
			fmt.Printf("  node %-7s %s, key %s (expires %s)\n", b.Name, p.Cert, p.Key, b.NotAfter().Format(time.DateOnly))
			fmt.Printf("  gossip key   %s\n", p.GossipKey)
			fmt.Printf("Certify another node with: shoal tls cert create --data-dir %s --name NAME --ip IP --out DIR\n", dir)
			return nil
		},
	}
	initCmd.Flags().StringVar(&name, "name", "", "this node's name (default: the host name), as 'shoal agent --name'")
	initCmd.Flags().StringVar(&cluster, "cluster-name", "shoal", "name written into the CA")
	initCmd.Flags().StringVar(&advertise, "advertise", "", "the IP this node advertises, written into its certificate")
	cmd.AddCommand(initCmd, newTLSCertCmd(g))
	return cmd
}

func newTLSCertCmd(g *globalFlags) *cobra.Command {
	cert := &cobra.Command{Use: "cert", Short: "Node certificates"}
	var (
		name, out string
		ips       []string
		days      int
	)
	create := &cobra.Command{
		Use:   "create",
		Short: "Certify a node with the CA in --data-dir/tls: writes its key, certificate, the CA and the gossip key to --out",
		Long: `Generates a key for node --name, signs its certificate with the cluster CA
(which must be in <data-dir>/tls with its key), and writes to --out:
node.pem, node-key.pem (0600), ca.pem and gossip.key (0600). Copy that folder
to the node as <its data-dir>/tls, then start 'shoal agent --name NAME
--join ...' there.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if name == "" {
				return errors.New("--name: empty, want the node's name (as its 'shoal agent --name')")
			}
			if out == "" {
				return errors.New("--out: empty, want a directory to write the node's files to")
			}
			var addrs []net.IP
			for _, s := range ips {
				ip := net.ParseIP(strings.TrimSpace(s))
				if ip == nil {
					return fmt.Errorf("--ip %q: want an IP address", s)
				}
				addrs = append(addrs, ip)
			}
			if len(addrs) == 0 || !slicesHasLoopback(addrs) {
				addrs = append(addrs, net.IPv4(127, 0, 0, 1))
			}
			if days < 1 || time.Duration(days)*24*time.Hour > pki.MaxNodeLifetime {
				return fmt.Errorf("--days %d: want 1 to %d", days, int(pki.MaxNodeLifetime/(24*time.Hour)))
			}
			src := pki.DefaultPaths(dataDirOf(g))
			ca, err := pki.LoadCA(src)
			if err != nil {
				return err
			}
			if ca.Key == nil {
				return fmt.Errorf("%s: the CA's key is not here; run this on the node that has it", src.CAKey)
			}
			gossipKeys, err := pki.LoadGossipKeys(src.GossipKey)
			if err != nil {
				return err
			}
			dst := pki.Paths{
				CA: filepath.Join(out, "ca.pem"), Cert: filepath.Join(out, "node.pem"),
				Key: filepath.Join(out, "node-key.pem"), GossipKey: filepath.Join(out, "gossip.key"),
			}
			if _, err := os.Stat(dst.Cert); err == nil {
				return fmt.Errorf("%s already exists; choose another --out", dst.Cert)
			}
			b, err := pki.IssueNodeFiles(ca, dst, name, addrs, time.Duration(days)*24*time.Hour, time.Now())
			if err != nil {
				return err
			}
			if err := pki.WriteGossipKeys(dst.GossipKey, gossipKeys); err != nil {
				return err
			}
			fmt.Printf("Certified node %s until %s in %s.\nCopy it to the node as <data-dir>/tls (keep node-key.pem and gossip.key mode 0600).\n",
				b.Name, b.NotAfter().Format(time.DateOnly), out)
			return nil
		},
	}
	f := create.Flags()
	f.StringVar(&name, "name", "", "the node's name, as its 'shoal agent --name'")
	f.StringSliceVar(&ips, "ip", nil, "IP addresses the node's API answers on (repeatable); loopback is always added")
	f.StringVar(&out, "out", "", "directory to write the node's files to")
	f.IntVar(&days, "days", int(pki.DefaultNodeLifetime/(24*time.Hour)), "days the certificate is valid")
	cert.AddCommand(create)
	return cert
}

func slicesHasLoopback(ips []net.IP) bool {
	for _, ip := range ips {
		if ip.IsLoopback() {
			return true
		}
	}
	return false
}

// dataDirOf is --data-dir, or its default.
func dataDirOf(g *globalFlags) string {
	if g.dataDir != "" {
		return g.dataDir
	}
	return defaultDataDir()
}
