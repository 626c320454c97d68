#!/usr/bin/env bash
# make_refusals.sh: ask Debian's Slurm (the peer, ../../../shared/peers/slurm)
# whether it accepts each option Shoal's option table refuses (the rows of
# slurm/table.go with reject:), with each command the row lists, and write
# the answers to refusals_golden.txt beside this script. TestRefusalsGolden
# checks the table against it: Shoal refuses only what Slurm refuses too,
# or what the test lists with its reason.
#
# Each case runs the real command with a trivial job: sbatch --test-only
# (sbatch's checks at submit; a submit that would succeed prints "to
# start at"), srun and salloc running `true` for real under a timeout. A
# case is "accept" when the command exits 0, else "refuse" with Slurm's
# first error line. Rows with ok: are tried with a value outside the
# accepted class (--cpu-bind=cores, not none).
#
# Usage: peers/slurm/up.sh first; then bash slurm/testdata/make_refusals.sh
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TABLE=$HERE/../table.go
OUT=$HERE/refusals_golden.txt
export SLURM_CONF=${SLURM_CONF:-/tmp/slurmpeer/etc/slurm.conf}
sinfo -h >/dev/null || { echo "the peer is not up (peers/slurm/up.sh)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
printf '0 true\n*  true\n' >multi.conf

# The value each option is tried with (the option's whole argument list;
# "" for options without a value).
declare -A SAMPLE=(
	[reservation]="--reservation=maint" [licenses]="--licenses=matlab:1"
	[begin]="--begin=now+1" [deadline]="--deadline=now+1hour" [immediate]="--immediate=5"
	[kill-on-invalid-dep]="--kill-on-invalid-dep=yes" [no-kill]="--no-kill"
	[get-user-env]="--get-user-env" [export-file]="--export-file=/dev/null"
	[propagate]="--propagate=ALL" [preserve-env]="--preserve-env" [mincpus]="--mincpus=2"
	[tmp]="--tmp=10" [contiguous]="--contiguous" [spread-job]="--spread-job"
	[extra-node-info]="--extra-node-info=1:1:1" [sockets-per-node]="--sockets-per-node=1"
	[cores-per-socket]="--cores-per-socket=1" [threads-per-core]="--threads-per-core=1"
	[ntasks-per-core]="--ntasks-per-core=1" [ntasks-per-socket]="--ntasks-per-socket=1"
	[ntasks-per-gpu]="--ntasks-per-gpu=1 --gpus=1" [gpus-per-socket]="--gpus-per-socket=1 --sockets-per-node=1"
	[hint]="--hint=nomultithread" [core-spec]="--core-spec=1" [thread-spec]="--thread-spec=1"
	[overcommit]="--overcommit" [cpu-bind]="--cpu-bind=cores" [mem-bind]="--mem-bind=local"
	[gpu-bind]="--gpu-bind=closest --gpus=1" [accel-bind]="--accel-bind=g"
	[gres-flags]="--gres-flags=enforce-binding" [batch]="--batch=haswell" [bb]="--bb=capacity=1G"
	[bbf]="--bbf=/dev/null" [container]="--container=/tmp" [clusters]="--clusters=other"
	[cluster-constraint]="--cluster-constraint=x" [uid]="--uid=0" [gid]="--gid=0"
	[het-group]="--het-group=0" [multi-prog]="--multi-prog" [mpi]="--mpi=pmi2"
	[overlap]="--overlap" [exact]="--exact" [jobid]="--jobid=999999" [relative]="--relative=0"
	[no-allocate]="--no-allocate" [pty]="--pty" [x11]="--x11" [task-prolog]="--task-prolog=/bin/true"
	[task-epilog]="--task-epilog=/bin/true" [prolog]="--prolog=/bin/true" [epilog]="--epilog=/bin/true"
	[bcast]="--bcast" [compress]="--compress" [send-libs]="--send-libs" [resv-ports]="--resv-ports"
	[wait]="--wait=10" [no-shell]="--no-shell" [kill-command]="--kill-command"
	[help]="--help" [usage]="--usage" [version]="--version"
)

# pairs prints "command option" for each command of each reject: row of
# the table, and each pair of the golden written before (a row Shoal
# refused once stays in the golden after it is accepted).
pairs() {
	{
		# The golden's rows first, in its order, so a rerun keeps it.
		if [ -f "$OUT" ]; then grep -v '^#' "$OUT" | cut -f1,2 | tr '\t' ' '; fi
		grep -E '^\s*\{long: "[^"]+".*reject:' "$TABLE" |
			sed -E 's/^\s*\{long: "([^"]+)".*cmds: ([^,]+),.*/\1 \2/' |
			while read -r long cmds; do
				for cmd in sbatch srun salloc; do
					case $cmds in
					cAll) echo "$cmd $long" ;;
					*) if grep -qi "c$cmd" <<<"$cmds"; then echo "$cmd $long"; fi ;;
					esac
				done
			done
	} | awk '!seen[$0]++'
}

try() { # cmd args...: prints accept or refuse: first error line
	local cmd=$1 out rc
	shift
	case $cmd in
	sbatch) out=$(timeout 30 sbatch --test-only -N1 "$@" --wrap true 2>&1) && rc=0 || rc=$? ;;
	srun)
		if [[ " $* " == *" --multi-prog "* ]]; then
			out=$(timeout 30 srun -N1 -n1 "$@" multi.conf 2>&1 </dev/null) && rc=0 || rc=$?
		else
			out=$(timeout 30 srun -N1 "$@" true 2>&1 </dev/null) && rc=0 || rc=$?
		fi ;;
	salloc) out=$(timeout 30 salloc -N1 "$@" true 2>&1 </dev/null) && rc=0 || rc=$? ;;
	esac
	if [ "$rc" = 0 ]; then
		echo accept
	else
		echo "refuse: $(printf '%s\n' "$out" | grep -m1 -iE 'error|invalid|unrecognized|fatal' || printf '%s\n' "$out" | head -n1)"
	fi
}

{
	echo "# Debian's Slurm $(sinfo -V | cut -d' ' -f2) on the peer: each option Shoal's table refuses, with each"
	echo "# command its row lists. Written by make_refusals.sh; read by TestRefusalsGolden."
	echo "# command<TAB>option<TAB>arguments tried<TAB>accept, or refuse: Slurm's error"
	pairs | while read -r cmd long; do
		sample=${SAMPLE[$long]-}
		[ -n "$sample" ] || { echo "no sample for --$long" >&2; exit 1; }
		# shellcheck disable=SC2086 # the sample is an argument list
		printf '%s\t%s\t%s\t%s\n' "$cmd" "$long" "$sample" "$(try "$cmd" $sample | tr '\t' ' ' | cut -c1-200)"
	done
} >"$OUT.tmp"
mv "$OUT.tmp" "$OUT"
echo "wrote $OUT" >&2
