#!/usr/bin/env bash
# make_layout_golden.sh: record how Debian's Slurm (the peer,
# ../../../shared/peers/slurm: 4 idle nodes of 16 CPUs) lays a job's tasks
# out on its nodes, for the cases in layout_cases.txt, into
# layout_golden.txt beside this script. Each case runs
# `srun ARGS` (a job of its own, on idle nodes) printing every task's
# node and rank; the golden line is the case, a tab, and per node in node
# order its ranks, nodes separated by " | " ("0,1,2,3 | 4" for -n5 -N2).
# TestLayoutGolden checks slurm.BlockCounts against it.
#
# Usage: peers/slurm/up.sh first; then bash slurm/testdata/make_layout_golden.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SLURM_CONF=${SLURM_CONF:-/tmp/slurmpeer/etc/slurm.conf}
sinfo -h >/dev/null || { echo "the peer is not up (peers/slurm/up.sh)" >&2; exit 1; }
out=$HERE/layout_golden.txt
{
	echo "# srun ARGS on Debian's Slurm 22.05 (idle nodes of 16 CPUs): each node's ranks, in node order"
	while IFS= read -r args; do
		[[ -z $args || $args == \#* ]] && continue
		# shellcheck disable=SC2086 # ARGS are words
		lines=$(timeout 120 srun $args bash -c 'echo "$SLURM_NODEID $SLURM_PROCID"' </dev/null 2>/dev/null | sort -n -k1,1 -k2,2) || lines=
		layout=$(awk '{ if ($1 != n && NR > 1) printf " | "; else if (NR > 1) printf ","; printf "%s", $2; n = $1 } END { print "" }' <<<"$lines")
		printf "%s\t%s\n" "$args" "${layout:-refused}"
	done <"$HERE/layout_cases.txt"
} >"$out.tmp"
mv "$out.tmp" "$out"
