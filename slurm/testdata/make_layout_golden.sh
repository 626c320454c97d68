#!/usr/bin/env bash
# make_layout_golden.sh: record how Debian's Slurm (the peer,
# ../../../shared/peers/slurm: 4 nodes n1-n4 of 16 CPUs and 8 GPUs, idle
# between cases) lays out a job's tasks and a step's, for the cases in
# layout_cases.txt, into layout_golden.txt beside this script. A case is
#   [hold HOLD ;] JOB [:: STEP]
# JOB alone runs `srun JOB` (a job of its own); with STEP, `salloc JOB
# srun STEP` (a step inside the allocation); with hold, `salloc --no-shell
# HOLD` first holds CPUs (HOLD names its node with -w) until the case is
# done. Every task prints its node and rank; the golden line is the case,
# a tab, and per node in node order its name, "=" and its ranks, nodes
# separated by " | " ("n1=0,1,2,3 | n2=4" for -n5 -N2), or "refused".
# TestLayoutGolden checks slurm.Spread and slurm.Deal against it.
#
# Usage: peers/slurm/up.sh first; then bash slurm/testdata/make_layout_golden.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SLURM_CONF=${SLURM_CONF:-/tmp/slurmpeer/etc/slurm.conf}
out=$HERE/layout_golden.txt
# shellcheck disable=SC2016 # the task expands them
task='echo "$SLURM_NODEID $SLURMD_NODENAME $SLURM_PROCID"'
{
echo "# [hold HOLD ;] JOB [:: STEP] on Debian's Slurm 22.05 (nodes of 16 CPUs, 8 GPUs): each node's name and ranks, in node order"
while IFS= read -r line; do
	[[ -z $line || $line == \#* ]] && continue
	hold= job=$line step=
	if [[ $job == hold\ *\;* ]]; then hold=${job%%;*}; hold=${hold#hold }; job=${job#*; }; fi
	if [[ $job == *' :: '* ]]; then step=${job#* :: }; job=${job%% :: *}; fi
	holdid=
	if [[ -n $hold ]]; then
		# shellcheck disable=SC2086
		holdid=$(salloc --no-shell -J layout-hold $hold 2>&1 | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
		[[ -n $holdid ]] || { echo "hold $hold: no allocation" >&2; exit 1; }
	fi
	# shellcheck disable=SC2086 # ARGS are words
	if [[ -n $step ]]; then
		res=$(timeout 120 salloc $job srun $step bash -c "$task" </dev/null 2>/dev/null) || res=
	else
		res=$(timeout 120 srun $job bash -c "$task" </dev/null 2>/dev/null) || res=
	fi
	if [[ -n $holdid ]]; then scancel "$holdid"; fi
	lines=$(sort -n -k1,1 -k3,3 <<<"$res")
	layout=$(awk 'NF == 3 { if ($1 != n && NR > 1) printf " | %s=", $2; else if (NR > 1) printf ","; else printf "%s=", $2; printf "%s", $3; n = $1 } END { print "" }' <<<"$lines")
	printf "%s\t%s\n" "$line" "${layout:-refused}"
	# let the nodes finish completing before the next case
	for _ in $(seq 50); do [[ -z $(squeue -h -t CG,R 2>/dev/null) ]] && break; sleep 0.2; done
done <"$HERE/layout_cases.txt"
} >"$out.tmp"
mv "$out.tmp" "$out"
