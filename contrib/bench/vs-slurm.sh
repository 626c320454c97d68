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
#             time until all N have left the queue
#   held      N x `sbatch --hold --parsable -J vshold -o /dev/null --wrap true`,
#             CLIENTS parallel clients of N/CLIENTS each
# Three columns: Slurm (/usr/bin/sbatch); Shoal through links to
# shoal-slurm (what install-shims makes when it is installed); Shoal
# through links to the full shoal binary (how every call started before
# shoal-slurm). Shoal is `shoal dev` (NODES agents on loopback, simulated
# GPUs), and the clients talk to agent n1's Unix socket.
#
# Knobs (environment): N=500 CLIENTS=4 NODES=4 BIN=bin/shoal
#   PEER=../shared/peers/slurm SLURMPEER_DIR=/tmp/slurmpeer
# The Slurm peer is left as found: brought down at the end only if this
# script brought it up. Only this script's jobs (names vsrun, vshold) are
# cancelled on it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
N=${N:-500}
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

# drained DIR NAME: no job called NAME is left in the queue.
drained() {
	local out
	out=$("$1/squeue" -h -n "$2" -o %i 2>/dev/null) || return 1
	[[ -z $out ]]
}

# wait_drained DIR NAME LIMIT: poll until drained, at most LIMIT seconds.
wait_drained() {
	local t0
	t0=$(now)
	until drained "$1" "$2"; do
		awk "BEGIN { exit !($(now) - $t0 > $3) }" && { log "$2 still queued after $3 s"; return 1; }
		sleep 0.2
	done
}

declare -A rate fails drain
# runnable KEY DIR: 1 client, N runnable jobs; then until they are gone.
runnable() {
	local key=$1 dir=$2 t0 t1 f
	log "$key: $N x sbatch --wrap true, 1 client"
	t0=$(now)
	f=$(submit "$dir" "$N" -J vsrun)
	t1=$(now)
	rate[run.$key]=$(calc "($N - $f) / ($t1 - $t0)")
	fails[run.$key]=$f
	if wait_drained "$dir" vsrun 600; then
		drain[$key]=$(calc "$(now) - $t0")
	else
		drain[$key]=">600"
		"$dir/scancel" -n vsrun >/dev/null 2>&1 || true
	fi
}

# held KEY DIR: CLIENTS parallel clients, N held jobs in all; then cancel.
held() {
	local key=$1 dir=$2 per=$((N / CLIENTS)) t0 t1 c f=0
	log "$key: $((per * CLIENTS)) x sbatch --hold --wrap true, $CLIENTS clients"
	t0=$(now)
	for ((c = 0; c < CLIENTS; c++)); do
		submit "$dir" "$per" --hold -J vshold >"$work/held.$c" &
	done
	wait
	t1=$(now)
	for ((c = 0; c < CLIENTS; c++)); do f=$((f + $(<"$work/held.$c"))); done
	rate[hold.$key]=$(calc "($per * $CLIENTS - $f) / ($t1 - $t0)")
	fails[hold.$key]=$f
	"$dir/scancel" -n vshold >/dev/null 2>&1 || true
	wait_drained "$dir" vshold 120 || true
}

# Each figure is taken for the three in turn, Slurm first.
/usr/bin/scancel -n vsrun >/dev/null 2>&1 || true
/usr/bin/scancel -n vshold >/dev/null 2>&1 || true
runnable slurm /usr/bin
runnable fast "$work/fast"
runnable full "$work/full"
held slurm /usr/bin
held fast "$work/fast"
held full "$work/full"

# ---------------------------------------------------------------- table
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
cat <<EOF
Submit rates, one run ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, load before: $(cut -d' ' -f1-3 /proc/loadavg))
Slurm: $(/usr/bin/sbatch --version), 4 slurmd + 2 slurmctld (peer up.sh). Shoal: $NODES agents (shoal dev), clients on n1's socket, leader ${leader:-?}.

| figure | Slurm | Shoal, shoal-slurm | ratio | Shoal, full shoal binary | ratio |
|---|---|---|---|---|---|
| sbatch --wrap true, 1 client (jobs/s) | ${rate[run.slurm]} | ${rate[run.fast]} | $(ratio "${rate[run.fast]}" "${rate[run.slurm]}") | ${rate[run.full]} | $(ratio "${rate[run.full]}" "${rate[run.slurm]}") |
| those $N jobs gone from the queue after (s) | ${drain[slurm]} | ${drain[fast]} | | ${drain[full]} | |
| sbatch --hold --wrap true, $CLIENTS clients (jobs/s) | ${rate[hold.slurm]} | ${rate[hold.fast]} | $(ratio "${rate[hold.fast]}" "${rate[hold.slurm]}") | ${rate[hold.full]} | $(ratio "${rate[hold.full]}" "${rate[hold.slurm]}") |
| failed submits (run / hold) | ${fails[run.slurm]} / ${fails[hold.slurm]} | ${fails[run.fast]} / ${fails[hold.fast]} | | ${fails[run.full]} / ${fails[hold.full]} | |
EOF
if [[ -s $work/sbatch.err ]]; then
	log "sbatch errors (first 3):"
	head -3 "$work/sbatch.err" >&2
fi
