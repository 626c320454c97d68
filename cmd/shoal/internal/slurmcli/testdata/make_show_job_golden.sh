#!/usr/bin/env bash
# make_show_job_golden.sh: capture Debian's Slurm 22.05 `scontrol show job`
# (plain, -dd and -o) for jobs in the states Shoal's PrintJob must lay out
# the same way, into show_job/CASE.MODE.txt. Needs the peer cluster of
# shared/peers/slurm (up.sh): 4 nodes n1..n4 with 8 GPUs each.
#
#   SLURM_CONF=/tmp/slurmpeer/etc/slurm.conf cmd/shoal/internal/slurmcli/testdata/make_show_job_golden.sh
#
# The test (TestShowJobLayoutGolden) compares the layout: the keys of every
# line, in order; values (ids, times, paths) differ from run to run.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$HERE/show_job
: "${SLURM_CONF:=/tmp/slurmpeer/etc/slurm.conf}"
export SLURM_CONF
W=$(mktemp -d /tmp/showjob.XXXXXX)
trap 'rm -rf "$W"' EXIT
cd "$W"
printf '#!/bin/bash\nsleep 60\n' >job.sh

running=$(sbatch --parsable --mem=500M -N2 -n4 -t 5 -J golden --wrap 'sleep 60')
gpu=$(sbatch --parsable --mem=500M -N1 --gpus-per-node=2 -t 10 -o out-%j.log -e err-%j.log job.sh)
pending=$(sbatch --parsable --mem=500M -d "afterok:$running" -N1 -t 1:00:00 --wrap true)
held=$(sbatch --parsable --mem=500M --hold -N1 --wrap true)
failed=$(sbatch --parsable --mem=500M -N1 --wrap 'exit 3')
array=$(sbatch --parsable --mem=500M -a 1-2 -N1 --wrap 'sleep 60')
# An interactive job (srun outside an allocation): no batch script.
srun -N1 --mem=500M -J interactive sleep 60 >/dev/null 2>&1 &
srun_pid=$!

# Wait (bounded) until the running ones run and the failed one has ended.
for _ in $(seq 60); do
	st=$(squeue -h -j "$running,$gpu" -o %T | sort -u | tr '\n' ' ')
	fs=$(scontrol -o show job "$failed" | grep -o 'JobState=[A-Z]*')
	interactive=$(squeue -h -n interactive -t R -o %i | head -n1)
	[ "$st" = "RUNNING " ] && [ "$fs" = "JobState=FAILED" ] && [ -n "$interactive" ] && break
	sleep 1
done

for c in running gpu pending held failed array interactive; do
	id=${!c}
	[ "$c" = array ] && id=${array}_1
	scontrol show job "$id" >"$OUT/$c.plain.txt"
	scontrol show job -dd "$id" >"$OUT/$c.dd.txt"
	scontrol -o show job "$id" >"$OUT/$c.oneliner.txt"
done
scancel "$running" "$gpu" "$pending" "$held" "$array" "$interactive"
wait "$srun_pid" || true
echo "wrote $OUT" >&2
