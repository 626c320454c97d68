#!/bin/bash
# Loads topology_peer.conf (FormatTopology's output for the peer's nodes
# n1-n4) into Debian's Slurm 22.05 (the peer in shared/peers/slurm, brought
# up in a private directory and taken down after) and records what
# `scontrol show topology` makes of it in topology_peer_golden.txt.
# TestFormatTopologyPeer compares the two.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
peer=${PEER:-$here/../../../../shared/peers/slurm}
[ -d "$peer" ] || peer=/work/shared/peers/slurm
export SLURMPEER_DIR=${SLURMPEER_DIR:-/tmp/slurmpeer-topology}
export SLURM_CONF=$SLURMPEER_DIR/etc/slurm.conf
trap '"$peer/down.sh" --purge >/dev/null 2>&1 || true' EXIT
"$peer/up.sh" >/dev/null
grep -v '^#' "$here/topology_peer.conf" >"$SLURMPEER_DIR/etc/topology.conf"
scontrol reconfigure
for _ in $(seq 1 20); do
	out=$(scontrol show topology 2>/dev/null) && grep -q '^SwitchName=core ' <<<"$out" && break
	sleep 0.5
done
printf '%s\n' "$out" >"$here/topology_peer_golden.txt"
cat "$here/topology_peer_golden.txt"
