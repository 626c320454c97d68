// Package slurm reads and writes the text formats Slurm users and their
// scripts already know: hostlist expressions ("n[1-4,7]"), the --time
// syntax, squeue's time columns and SLURM_TASKS_PER_NODE.
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
//   - ParseTime returns 0 for "no limit" (UNLIMITED, INFINITE, -1 and any
//     spelling of zero), which is what cluster.Request.TimeLimit means by 0.
package slurm
