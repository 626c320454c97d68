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
# CPU per submit, so that ratios from a loaded box can be read: every
# process of each side is accounted in a cgroup of its own (cgroup v1's
# cpuacct, or v2's cpu.stat), created for the run: the Slurm daemons
# (munged, slurmctld, slurmd, and what they start: slurmstepd, the jobs)
# are moved into one for the run and back at the end; `shoal dev` starts in
# another (the agents put their tasks' cgroups under their own); each
# system's clients run in a third. A phase's CPU is the cgroups' usage from
# its start to its end (the runnable phase: until its jobs are gone), over
# the submits that succeeded; the Shoal agents' share is split over both
# Shoal columns' submits. The clients' figure includes the shell loop and
# timeout(1) around every call, printed alone as "loop floor" (the same loop
# running /bin/true). Without a writable cgroup hierarchy the CPU rows say
# "-". Measured on cgroup v1 only: on v2 the agents' cgroup holds the
# agents themselves, so they cannot enable controllers below it and may
# run their tasks without cgroup limits there.
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
# ---------------------------------------------------------------- CPU accounting
# CG is this run's cgroup directory (empty: no CPU figures); CGV its version.
CG= CGV=
CGROUPS=(slurmd shoald slurm-client fast-client full-client nop-client)
declare -A CG_BACK # daemon pid -> the cgroup it came from
if [[ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]]; then
	CGV=1 CG=/sys/fs/cgroup/cpuacct/vs-slurm.$$
elif [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
	CGV=2 CG=/sys/fs/cgroup/vs-slurm.$$
fi
if [[ -n $CG ]] && ! mkdir "$CG" 2>/dev/null; then
	log "cannot create $CG: no CPU figures"
	CG=
fi
for g in "${CGROUPS[@]}"; do [[ -z $CG ]] || mkdir "$CG/$g"; done
# cg_join GROUP PID: move PID (all its threads) into GROUP.
cg_join() { [[ -z $CG ]] || echo "$2" >"$CG/$1/cgroup.procs"; }
# cg_usage GROUP: nanoseconds of CPU used in GROUP and below so far.
cg_usage() {
	if [[ -z $CG ]]; then
		echo 0
	elif ((CGV == 1)); then
		cat "$CG/$1/cpuacct.usage"
	else
		awk '$1 == "usage_usec" { print $2 * 1000 }' "$CG/$1/cpu.stat"
	fi
}
# cg_own PID: the cgroup (relative) PID is in, in our hierarchy.
cg_own() {
	if ((CGV == 1)); then
		awk -F: '$2 ~ /(^|,)cpuacct(,|$)/ { print $3 }' "/proc/$1/cgroup"
	else
		awk -F: '$1 == "0" { print $3 }' "/proc/$1/cgroup"
	fi
}
# cg_slurm: move the Slurm peer's daemons (by the pid files up.sh and the
# daemons write) into slurmd, remembering where each came from.
cg_slurm() {
	local f pid root=${CG%/*}
	[[ -n $CG ]] || return 0
	for f in "$SLURMPEER_DIR"/run/*.pid "$SLURMPEER_DIR"/run/*.pid.ours "$SLURMPEER_DIR"/run/ctl/*.pid; do
		[[ -s $f ]] || continue
		pid=$(<"$f")
		[[ $pid =~ ^[0-9]+$ && -d /proc/$pid && -z ${CG_BACK[$pid]:-} ]] || continue
		case $(readlink "/proc/$pid/exe" 2>/dev/null) in
		*/munged | */slurmctld* | */slurmd*) ;;
		*) continue ;;
		esac
		CG_BACK[$pid]=$root$(cg_own "$pid")
		cg_join slurmd "$pid"
	done
}
# cg_cleanup: daemons back where they were, then the run's cgroups away
# (a process still in one is moved to the hierarchy's root first).
cg_cleanup() {
	local pid d p
	[[ -n $CG ]] || return 0
	for pid in "${!CG_BACK[@]}"; do
		[[ -d /proc/$pid ]] && echo "$pid" >"${CG_BACK[$pid]}/cgroup.procs" 2>/dev/null
	done
	while read -r d; do
		while read -r p; do echo "$p" >"${CG%/*}/cgroup.procs" 2>/dev/null; done <"$d/cgroup.procs"
		rmdir "$d" 2>/dev/null || log "could not remove $d"
	done < <(find "$CG" -depth -type d)
}

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
	cg_cleanup
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
# shoal dev and its agents start inside shoald (a subshell moves itself in).
(
	cg_join shoald "$BASHPID"
	exec "$BIN" dev --detach --no-demo --nodes "$NODES" --data-dir "$work/shoal" >"$work/dev.log" 2>&1
) || { cat "$work/dev.log" >&2; die "shoal dev failed"; }
cg_slurm
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
mkdir -p "$work/nop"
ln -s /bin/true "$work/nop/sbatch"
declare -A DIR=([slurm]=/usr/bin [fast]=$work/fast [full]=$work/full [nop]=$work/nop)
declare -A GROUP=([/usr/bin]=slurm-client [$work/fast]=fast-client [$work/full]=full-client [$work/nop]=nop-client)

# submit DIR COUNT ARGS...: COUNT sequential sbatch from DIR, in DIR's
# clients' cgroup; prints the number that failed.
submit() {
	local dir=$1 count=$2 i fail=0
	shift 2
	cg_join "${GROUP[$dir]}" "$BASHPID"
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

declare -A secs count fails drain cpu0 cpu
# cpu_mark KEY: remember every cgroup's usage at a phase's start.
cpu_mark() {
	local g
	for g in "${CGROUPS[@]}"; do cpu0[$1.$g]=$(cg_usage "$g"); done
}
# cpu_take KEY: each cgroup's usage since cpu_mark KEY, in ns.
cpu_take() {
	local g
	for g in "${CGROUPS[@]}"; do cpu[$1.$g]=$(($(cg_usage "$g") - ${cpu0[$1.$g]})); done
}
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

# The loop floor: the same client loop running /bin/true.
cpu_mark nop
f=$(submit "${DIR[nop]}" $((N / ROUNDS)) -J nop)
cpu_take nop
nop_ms=$(awk -v c="${cpu[nop.nop-client]}" -v n=$((N / ROUNDS)) 'BEGIN { printf "%.2f", c / n / 1e6 }')

log "runnable: $N x sbatch --wrap true per system, 1 client, $ROUNDS interleaved rounds"
cpu_mark run
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
cpu_take run

log "held: $N x sbatch --hold --wrap true per system, $CLIENTS clients, $ROUNDS interleaved rounds"
cpu_mark hold
phase hold psubmit vshold --hold
cpu_take hold
load1=$(cut -d' ' -f1-3 /proc/loadavg)
/usr/bin/scancel -n vshold >/dev/null 2>&1 || true

# ---------------------------------------------------------------- table
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
r_run_slurm=$(rate run.slurm) r_run_fast=$(rate run.fast) r_run_full=$(rate run.full)
r_hold_slurm=$(rate hold.slurm) r_hold_fast=$(rate hold.fast) r_hold_full=$(rate hold.full)
# per_submit PHASE SYS: "clients + servers = total" ms of CPU per submit.
per_submit() {
	local k=$1 sys=$2 client server n
	[[ -n $CG ]] || { echo -; return; }
	if [[ $sys == slurm ]]; then
		server=${cpu[$k.slurmd]} n=${count[$k.slurm]}
	else
		server=${cpu[$k.shoald]} n=$((count[$k.fast] + count[$k.full]))
	fi
	client=${cpu[$k.$sys-client]}
	awk -v c="$client" -v nc="${count[$k.$sys]}" -v s="$server" -v ns="$n" 'BEGIN {
		if (nc == 0 || ns == 0) { print "-"; exit }
		printf "%.2f + %.2f = %.2f", c / nc / 1e6, s / ns / 1e6, c / nc / 1e6 + s / ns / 1e6 }'
}
cpu_ratio() { # cpu_ratio A B: B's total over A's (how many times cheaper A is)
	awk -v a="${1##*= }" -v b="${2##*= }" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", b / a; else print "-" }'
}
c_run_slurm=$(per_submit run slurm) c_run_fast=$(per_submit run fast) c_run_full=$(per_submit run full)
c_hold_slurm=$(per_submit hold slurm) c_hold_fast=$(per_submit hold fast) c_hold_full=$(per_submit hold full)
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
| CPU per runnable submit, clients + servers (ms) | $c_run_slurm | $c_run_fast | $(cpu_ratio "$c_run_fast" "$c_run_slurm") | $c_run_full | $(cpu_ratio "$c_run_full" "$c_run_slurm") |
| CPU per held submit, clients + servers (ms) | $c_hold_slurm | $c_hold_fast | $(cpu_ratio "$c_hold_fast" "$c_hold_slurm") | $c_hold_full | $(cpu_ratio "$c_hold_full" "$c_hold_slurm") |

CPU (${CG:+cgroup v$CGV, }${CG:-no cgroup}): a cgroup per side for the whole phase, the runnable one until its jobs were gone; the servers are
Slurm's daemons and what they start, or the Shoal agents and their tasks (their CPU split over both Shoal columns' submits).
The clients' figure includes the loop floor, ${nop_ms} ms a call (the same shell loop and timeout(1) running /bin/true).
A CPU ratio is Slurm's total over that column's: above 1x the column costs less CPU per submit than Slurm.
EOF
if [[ -s $work/sbatch.err ]]; then
	log "sbatch errors (first 3):"
	head -3 "$work/sbatch.err" >&2
fi
