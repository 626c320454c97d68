// Package slurmcli holds Shoal's Slurm front-ends: for each Slurm
// command it plays, the option table (read with slurm.Getopt), the
// parsing of its command line into a query, and its output in Slurm's
// formats (squeue -o/-O and sinfo -o fields, sacct --format, sprio's
// columns, scancel's messages). A reader looking for "how does squeue
// print %T" finds it here.
//
// The submitting commands (sbatch, srun, salloc) are here too; the
// translation of their options into a job request is package request's,
// which shoal submit shares. Shoal's native commands that print a Slurm
// format call this package for it (shoal job: PrintJob; shoal queue:
// Elapsed, JobIDString; shoal priority: PrintPriorities; shoal run and
// shoal step: RunOwnJob and Srun).
//
// A command runs as parse, fetch, print: its arguments are parsed first
// (a usage error needs no agent), then Connect is called for the agent's
// client and the data fetched, and the printing is a pure function of
// that data, the clock and the time zone (slurmView), which the table
// tests here drive with fixed values. Package main (cmd/shoal) only wires
// a command's name, the client and its exit code.
//
// What it must never do: exit the process, read flags of the native
// CLI, or print a native (non-Slurm) format. An error that only carries
// an exit code, its message already printed, is an exitcode.Code;
// other errors are printed by the caller as "CMD: error: MSG".
//
// The parsing shared with the rest of Shoal lives in package slurm
// (getopt, job references, states, hostlists, times); this package only
// words it as each command does.
package slurmcli
