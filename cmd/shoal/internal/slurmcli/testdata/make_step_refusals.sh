#!/usr/bin/env bash
# make_step_refusals.sh: ask Debian's Slurm (the peer,
# ../../../../../../shared/peers/slurm) whether srun inside an allocation
# (a step) accepts each option of step_refusal_cases.txt, and write the
# answers to step_refusals_golden.txt beside this script:
# "ARGS<TAB>accept" when `srun ARGS true` exits 0 within 15 s in a `sbatch -N2 -n2`
# job, else "ARGS<TAB>refuse<TAB>Slurm's first error line".
# TestStepRefusalsGolden holds srun's step options to it.
#
# Usage: peers/slurm/up.sh first; then bash make_step_refusals.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export SLURM_CONF=${SLURM_CONF:-/tmp/slurmpeer/etc/slurm.conf}
sinfo -h >/dev/null || { echo "the peer is not up (peers/slurm/up.sh)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$HERE/step_refusal_cases.txt" "$WORK/cases.txt"
cat >"$WORK/job.sh" <<'JOB'
#!/bin/bash
while IFS= read -r args; do
	[[ -z $args || $args == \#* ]] && continue
	# shellcheck disable=SC2086 # ARGS are words
	if err=$(timeout 15 srun $args true </dev/null 2>&1 >/dev/null); then
		printf '%s\taccept\n' "$args"
	else
		printf '%s\trefuse\t%s\n' "$args" "$(grep -m1 -i error <<<"$err" || head -1 <<<"$err" || true)"
	fi
done <cases.txt
JOB
(cd "$WORK" && sbatch --wait -N2 -n2 -o out.txt job.sh >/dev/null)
{
	echo "# srun ARGS inside sbatch -N2 -n2 on Debian's Slurm 22.05 (make_step_refusals.sh)"
	cat "$WORK/out.txt"
} >"$HERE/step_refusals_golden.txt"
