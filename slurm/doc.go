// Package slurm reads and writes the text formats Slurm users and their
// scripts already know: hostlist expressions ("n[1-4,7]"), the --time
// syntax, squeue's time columns, SLURM_TASKS_PER_NODE, and the options of
// sbatch, srun and salloc, on their command lines and in #SBATCH
// directives (ParseArgs, ScriptDirectives, ParseBatch), with the parsers
// of their values (ParseArray, ParseDependency, ParseSignal, ParseMemory,
// ParseGres, ParseExport, ParseNodes, ParseSwitches), job references as
// every command names a job or array tasks (ParseJobRef: N, N_M, N_[a-b]),
// job state codes (JobStateCode, ParseJobState), the order sinfo lists
// node names in (CompareNodeNames), the names of the commands Shoal plays
// (Commands) and output filename patterns (ExpandOutputPattern).
//
// It owns only pure string conversions. It must never touch the clock, the
// file system, the network or the environment of the process; callers pass
// strings in and get strings (or values) out.
//
// Contracts that are not obvious:
//
//   - ExpandHostlist keeps the order and the duplicates of its input, as
//     Slurm 22.05 does: "n[1-3],n2" is n1 n2 n3 n2. With several brackets
//     in one name the last bracket varies fastest, then the first, then the
//     second, and so on ("a[1-2]b[3-4]c[5-6]" is a1b3c5 a1b3c6 a2b3c5 ...),
//     which is Slurm's order, not the lexicographic one.
//   - CompressHostlist is `scontrol show hostlist` of the names joined by
//     commas: it never sorts and never drops a duplicate, so the first name
//     of SLURM_JOB_NODELIST stays rank 0's node (where MASTER_ADDR points).
//     For every valid expression x, ExpandHostlist(CompressHostlist(
//     ExpandHostlist(x))) equals ExpandHostlist(x).
//   - The zero-padding width of a range is the width of its low bound:
//     "n[01-3]" is n01 n02 n03 and "n[1-03]" is n1 n2 n3.
//   - ExpandHostlist is stricter than Slurm where Slurm silently invents a
//     name or a number: an unclosed bracket ("n[1-2", which Slurm turns
//     into the host "n]"), a number that does not fit 64 bits (Slurm
//     saturates), an open range "n[1-]" and empty items inside brackets
//     are errors here. Everything Slurm rejects is rejected too.
//   - Expansion is bounded: at most MaxRangeHosts names per range (Slurm's
//     own limit), MaxHostlistNames names and MaxHostlistBytes bytes in all,
//     checked before any name is built.
//   - One table (table.go) lists every option with the commands that take
//     it, as Slurm 22.05 does, and what Shoal does with it: sets a field of
//     Options; accepts it and adds a line to Options.Warnings (only
//     accounting, mail, and preferences a job cannot tell apart from their
//     absence); or refuses it, naming the reason, where ignoring it would
//     change what runs, where or when. An option of another command is an
//     error that names the command that takes it.
//   - Getopt is the one command-line scanner of every Slurm front-end,
//     getopt_long as Slurm calls it: sbatch, srun and salloc stop at the
//     first non-option (RequireOrder); squeue, scancel, sinfo, sacct and
//     sprio mix options and operands (Permute). Both accept unambiguous
//     prefixes of long names and take an optional argument only when
//     attached (--nice=5, -K1).
//   - Directives are read as sbatch reads them (see ScriptDirectives) and
//     parsed as one argument list before the command line, whose options
//     win; cross-option checks (--mem vs --mem-per-cpu, --gpus vs
//     --gpus-per-node) run once on the merged result, as in Slurm, so a
//     script's --mem and a command line's --mem-per-cpu conflict.
//   - The parsers read no files and no environment: a --nodelist naming a
//     file is kept as a name, and SBATCH_* / SLURM_* input variables are
//     the caller's business.
//   - ParseTime returns 0 for "no limit" (UNLIMITED, INFINITE, -1 and any
//     spelling of zero), which is what cluster.Request.TimeLimit means by 0.
package slurm
