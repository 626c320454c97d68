#!/usr/bin/env bash
# vs-slurm.sh: submit rates of Debian's Slurm 22.05 (the peer in
# ../shared/peers/slurm) and of a Shoal cluster, measured in one run, so
# every ratio in BENCHMARKS.md comes from one run on one machine state.
#
#   make build && contrib/bench/vs-slurm.sh        (as root: the peer's
#                                                  daemons run in namespaces)
#
# Both sides are driven by the same commands, a Slurm `sbatch` each:
#   runnable  N x `sbatch --parsable -J vsrun -o /dev/null --wrap true`,
#             1 sequential client (jobs run as they are submitted); also the
#             time until all have left the queue after the last submit
#   held      N x `sbatch --hold --parsable -J vshold -o /dev/null --wrap true`,
#             CLIENTS parallel clients
# Three columns: Slurm (/usr/bin/sbatch); Shoal through links to
# shoal-slurm (what install-shims makes when it is installed); Shoal
# through links to the full shoal binary (how every call started before
# shoal-slurm). Shoal is `shoal dev` (NODES agents on loopback, simulated
# GPUs), and the clients talk to agent n1's Unix socket.
#
# The machine is shared and its speed drifts: the three columns are
# measured in ROUNDS interleaved chunks of N/ROUNDS submits (the order
# rotating every round) and each one's chunk times summed, so drift hits
# all three alike.
# Knobs (environment): N=500 ROUNDS=10 CLIENTS=4 NODES=4 BIN=bin/shoal
#   PEER=../shared/peers/slurm SLURMPEER_DIR=/tmp/slurmpeer
# The Slurm peer is left as found: brought down at the end only if this
# script brought it up. Only this script's jobs (names vsrun, vshold) are
# cancelled on it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
N=${N:-500}
ROUNDS=${ROUNDS:-10}
CLIENTS=${CLIENTS:-4}
NODES=${NODES:-4}
BIN=${BIN:-bin/shoal}
SHIM=$(dirname "$BIN")/shoal-slurm
PEER=${PEER:-../shared/peers/slurm}
export SLURMPEER_DIR=${SLURMPEER_DIR:-/tmp/slurmpeer}

log() { printf '[vs-slurm %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
calc() { awk "BEGIN { printf \"%.1f\", $1 }"; }

[[ $(id -u) == 0 ]] || die "run as root: the Slurm peer starts its daemons in namespaces"
[[ -x $BIN && -x $SHIM ]] || die "$BIN and $SHIM: missing; run make build first"
[[ -x $PEER/up.sh ]] || die "$PEER/up.sh: missing; set PEER to the Slurm peer's directory"
BIN=$(realpath "$BIN")
[[ -x /usr/bin/sbatch ]] || log "no /usr/bin/sbatch yet: up.sh installs Debian's Slurm"

work=$(mktemp -d /tmp/vs-slurm.XXXXXX)
peer_was_up=0
shoal_up=0
cleanup() {
	if ((shoal_up)); then
		"$BIN" dev stop --data-dir "$work/shoal" >/dev/null 2>&1 || log "shoal dev stop failed; agents may be left in $work/shoal"
	fi
	if [[ -n ${SLURM_CONF:-} ]]; then
		/usr/bin/scancel -n vsrun >/dev/null 2>&1 || true
		/usr/bin/scancel -n vshold >/dev/null 2>&1 || true
	fi
	if ((!peer_was_up)) && [[ -x $PEER/down.sh ]]; then
		"$PEER/down.sh" >/dev/null 2>&1 || log "the Slurm peer's down.sh failed"
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# ---------------------------------------------------------------- bring up
export SLURM_CONF=$SLURMPEER_DIR/etc/slurm.conf
if [[ -f $SLURM_CONF ]] && timeout 10 /usr/bin/scontrol ping 2>/dev/null | grep -q 'ctl1 is UP'; then
	peer_was_up=1
fi
log "Slurm peer: up.sh (it was $( ((peer_was_up)) && echo up || echo down))"
"$PEER/up.sh" >"$work/up.log" 2>&1 || { cat "$work/up.log" >&2; die "$PEER/up.sh failed"; }

log "Shoal: $NODES agents (shoal dev) in $work/shoal"
shoal_up=1
"$BIN" dev --detach --no-demo --nodes "$NODES" --data-dir "$work/shoal" >"$work/dev.log" 2>&1 ||
	{ cat "$work/dev.log" >&2; die "shoal dev failed"; }
export SHOAL_DATA_DIR=$work/shoal/n1
leader=$(grep -o 'leader is [^ .]*' "$work/dev.log" | cut -d' ' -f3)

# Two link dirs to the same cluster: install-shims links to shoal-slurm
# beside BIN; the other links each name to the full binary.
"$BIN" install-shims "$work/fast" >/dev/null
[[ $(readlink "$work/fast/sbatch") == "$(realpath "$SHIM")" ]] || die "install-shims did not link to $SHIM"
mkdir -p "$work/full"
for c in sbatch squeue scancel; do ln -s "$BIN" "$work/full/$c"; done

# ---------------------------------------------------------------- measure
SYSTEMS=(slurm fast full)
declare -A DIR=([slurm]=/usr/bin [fast]=$work/fast [full]=$work/full)

# submit DIR COUNT ARGS...: COUNT sequential sbatch from DIR; prints the
# number that failed.
submit() {
	local dir=$1 count=$2 i fail=0
	shift 2
	for ((i = 0; i < count; i++)); do
		timeout 60 "$dir/sbatch" --parsable -o /dev/null "$@" --wrap true >/dev/null 2>>"$work/sbatch.err" || fail=$((fail + 1))
	done
	echo "$fail"
}

# psubmit DIR COUNT ARGS...: COUNT submits from CLIENTS parallel clients;
# prints the number that failed.
psubmit() {
	local dir=$1 per=$(($2 / CLIENTS)) c f=0
	shift 2
	for ((c = 0; c < CLIENTS; c++)); do
		submit "$dir" "$per" "$@" >"$work/par.$c" &
	done
	wait
	for ((c = 0; c < CLIENTS; c++)); do f=$((f + $(<"$work/par.$c"))); done
	echo "$f"
}

# drained DIR NAME: no job called NAME is left in the queue.
drained() {
	local out
	out=$("$1/squeue" -h -n "$2" -o %i 2>/dev/null) || return 1
	[[ -z $out ]]
}

declare -A secs count fails drain
# phase KEY FN NAME ARGS...: ROUNDS rounds, each running FN (submit or
# psubmit) for one chunk on every system, in an order that rotates.
phase() {
	local key=$1 fn=$2 name=$3 r i sys t0 f chunk=$((N / ROUNDS))
	shift 3
	[[ $fn == psubmit ]] && chunk=$((chunk / CLIENTS * CLIENTS))
	for sys in "${SYSTEMS[@]}"; do secs[$key.$sys]=0 count[$key.$sys]=0 fails[$key.$sys]=0; done
	for ((r = 0; r < ROUNDS; r++)); do
		for ((i = 0; i < ${#SYSTEMS[@]}; i++)); do
			sys=${SYSTEMS[$(((i + r) % ${#SYSTEMS[@]}))]}
			t0=$(now)
			f=$("$fn" "${DIR[$sys]}" "$chunk" -J "$name" "$@")
			secs[$key.$sys]=$(awk -v a="${secs[$key.$sys]}" -v t0="$t0" -v t1="$(now)" 'BEGIN { printf "%.6f", a + t1 - t0 }')
			count[$key.$sys]=$((count[$key.$sys] + chunk - f))
			fails[$key.$sys]=$((fails[$key.$sys] + f))
		done
	done
}
rate() { awk -v n="${count[$1]}" -v s="${secs[$1]}" 'BEGIN { if (s > 0) printf "%.1f", n / s; else print "-" }'; }

/usr/bin/scancel -n vsrun >/dev/null 2>&1 || true
/usr/bin/scancel -n vshold >/dev/null 2>&1 || true
load0=$(cut -d' ' -f1-3 /proc/loadavg)

log "runnable: $N x sbatch --wrap true per system, 1 client, $ROUNDS interleaved rounds"
phase run submit vsrun
t_end=$(now)
# How long after the last submit the runnable jobs are all gone (each
# system's jobs ran beside the others'; both Shoal columns share a cluster).
for sys in slurm fast; do
	until drained "${DIR[$sys]}" vsrun; do
		if awk "BEGIN { exit !($(now) - $t_end > 600) }"; then drain[$sys]=">600"; break; fi
		sleep 0.2
	done
	[[ -n ${drain[$sys]:-} ]] || drain[$sys]=$(calc "$(now) - $t_end")
done

log "held: $N x sbatch --hold --wrap true per system, $CLIENTS clients, $ROUNDS interleaved rounds"
phase hold psubmit vshold --hold
load1=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/scancel -n vshold >/dev/null 2>&1 || true

# ---------------------------------------------------------------- table
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
r_run_slurm=$(rate run.slurm) r_run_fast=$(rate run.fast) r_run_full=$(rate run.full)
r_hold_slurm=$(rate hold.slurm) r_hold_fast=$(rate hold.fast) r_hold_full=$(rate hold.full)
cat <<EOF
Submit rates, one run ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load average $load0 before, $load1 after)
Slurm: $(/usr/bin/sbatch --version), 4 slurmd + 2 slurmctld (peer up.sh). Shoal: $NODES agents (shoal dev), clients on n1's socket, leader ${leader:-?}.
Per system: ${count[run.slurm]} runnable and ${count[hold.slurm]} held submits that succeeded, in $ROUNDS interleaved rounds.

| figure | Slurm | Shoal, shoal-slurm | ratio | Shoal, full shoal binary | ratio |
|---|---|---|---|---|---|
| sbatch --wrap true, 1 client (jobs/s) | $r_run_slurm | $r_run_fast | $(ratio "$r_run_fast" "$r_run_slurm") | $r_run_full | $(ratio "$r_run_full" "$r_run_slurm") |
| sbatch --hold --wrap true, $CLIENTS clients (jobs/s) | $r_hold_slurm | $r_hold_fast | $(ratio "$r_hold_fast" "$r_hold_slurm") | $r_hold_full | $(ratio "$r_hold_full" "$r_hold_slurm") |
| runnable jobs all gone, after the last submit (s) | ${drain[slurm]} | ${drain[fast]} (both Shoal columns' jobs) | | | |
| failed submits (runnable / held) | ${fails[run.slurm]} / ${fails[hold.slurm]} | ${fails[run.fast]} / ${fails[hold.fast]} | | ${fails[run.full]} / ${fails[hold.full]} | |
EOF
if [[ -s $work/sbatch.err ]]; then
	log "sbatch errors (first 3):"
	head -3 "$work/sbatch.err" >&2
fi
