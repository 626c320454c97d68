#!/usr/bin/env bash
# golden.sh: record Debian Slurm 22.05's sshare layouts for TestSshareGolden.
# The peer (/work/shared/peers/slurm, up.sh) runs no slurmdbd: sshare still
# prints its header lines (the association list is empty), which fixes the
# columns, headers, widths and delimiters of each option set below. Each
# case is one line of cases.txt (the arguments) and its output in
# NN.golden. Run with the peer up:
#   /work/shared/peers/slurm/up.sh && cmd/shoal/internal/slurmcli/testdata/sshare/golden.sh
set -euo pipefail
cd "$(dirname "$0")"
export SLURM_CONF=${SLURM_CONF:-/tmp/slurmpeer/etc/slurm.conf}
rm -f ./*.golden
n=0
while IFS= read -r args; do
	[[ -z $args ]] && continue
	# shellcheck disable=SC2086 # the arguments are split on purpose
	sshare $args >"$(printf '%02d' "$n").golden"
	n=$((n + 1))
done <cases.txt
echo "recorded $n cases with $(sshare --version)"
