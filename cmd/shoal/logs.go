package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/shoal-sched/shoal/api"
	"github.com/shoal-sched/shoal/slurm"
)

func newLogsCmd(g *globalFlags) *cobra.Command {
	var (
		label  bool
		stderr bool
	)
	cmd := &cobra.Command{
		Use:   "logs ID",
		Short: "Print a job's output from every rank, read through any agent",
		Args:  cobra.ExactArgs(1),
		RunE: showArgRun(g, slurm.ParseJobID, (*api.Client).Logs, func(_ *cobra.Command, chunks []api.LogChunk) error {
			printLogs(os.Stdout, os.Stderr, chunks, label, stderr)
			return nil
		}),
	}
	cmd.Flags().BoolVarP(&label, "label", "l", false, "prefix each line with its rank, like srun --label")
	cmd.Flags().BoolVar(&stderr, "stderr", false, "also print the ranks' stderr (to stderr)")
	cmd.Flags().BoolVar(&g.json, "json", false, "print JSON")
	return cmd
}

func printLogs(out, errOut io.Writer, chunks []api.LogChunk, label, withStderr bool) {
	for _, c := range chunks {
		if c.Error != "" {
			fmt.Fprintf(errOut, "shoal: output of node %s unavailable: %s\n", c.Node, c.Error)
			continue
		}
		w := out
		if c.Stream == "stderr" {
			if !withStderr {
				continue
			}
			w = errOut
		}
		if !label {
			io.WriteString(w, c.Data)
			continue
		}
		sc := bufio.NewScanner(strings.NewReader(c.Data))
		sc.Buffer(make([]byte, 64*1024), 16<<20)
		for sc.Scan() {
			fmt.Fprintf(w, "%d: %s\n", c.Rank, sc.Text())
		}
	}
}
