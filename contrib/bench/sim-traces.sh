#!/bin/bash
# Every placement policy on every shared trace, both limit models, with
# and without --fairshare: the tables of BENCHMARKS.md "Placement
# policies on real traces". Runs `shoal sim --json` JOBS at a time, keeps
# each summary in OUT (reused when present: delete OUT to measure again),
# then prints two markdown tables whose "avg / p99 / max ÷ backfill" are
# each row's average, p99 and longest wait over EASY backfill's under the
# same limits, seed and ordering. MODES picks the tables (plain: jobs by
# ID; fairshare: --fairshare); SEEDS the --limit-seed values of the noisy
# rows (default 1).
# Usage: make build && contrib/bench/sim-traces.sh [OUT]
set -eu
BIN=${BIN:-bin/shoal}
TRACES=${TRACES:-../shared/traces}
JOBS=${JOBS:-2}
MODES=${MODES:-plain fairshare}
SEEDS=${SEEDS:-1}
OUT=${1:-sim-traces.out}
mkdir -p "$OUT"
# limit models: exact, then noisy under each seed (noisyN)
LIMITS="exact"
for s in $SEEDS; do LIMITS="$LIMITS noisy$s"; done
# trace file, nodes (sized so that the queue is long; BENCHMARKS.md says why)
SIZES="philly_dirlab_subset.csv:128 helios_dirlab_subset.csv:64 alibaba_gpu_v2023_openb.csv:6"
POLICIES="fifo backfill shoal qssf"
runs() {
	for fs in $MODES; do
		for tn in $SIZES; do
			for l in $LIMITS; do
				for p in $POLICIES; do echo "$tn $l $p $fs"; done
			done
		done
	done
}
one() { # trace:nodes exact|noisyN policy plain|fairshare
	local t=${1%%:*} n=${1##*:} f="$OUT/${1%%_*}.$2.$3.$4.json" extra=() seed=1
	[ -s "$f" ] && return 0
	[ "$4" = fairshare ] && extra=(--fairshare)
	[ "$2" != exact ] && seed=${2#noisy}
	nice "$BIN" sim --trace "$TRACES/$t" --nodes "$n" --gpus-per-node 8 --leaf-size 8 \
		--limits "${2%%[0-9]*}" --limit-seed "$seed" --policy "$3" "${extra[@]}" --json >"$f.tmp"
	mv "$f.tmp" "$f"
}
export -f one
export BIN TRACES OUT
runs | xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _
table() { # plain|fairshare
	echo "| trace (nodes × 8 GPUs) | limits | policy | wait avg / p50 / p95 / p99 / max | avg / p99 / max ÷ backfill | bsld avg / p99 | avg JCT | makespan | GPU util | 1leaf (lv) | decisions/s |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	for tn in $SIZES; do
		local tr=${tn%%_*}
		for l in $LIMITS; do
			local base first=1 name=$l
			[ "$l" != exact ] && name="noisy (seed ${l#noisy})"
			base=$(jq -c '{a: .avg_wait_s, p: .p99_wait_s, m: .max_wait_s}' "$OUT/$tr.$l.backfill.$1.json")
			for p in $POLICIES; do
				local lead="|  |  "
				[ $first = 1 ] && lead="|  | $name "
				[ $first = 1 ] && [ $l = exact ] && lead="| $tr (${tn##*:}) | $l "
				first=0
				jq -r --arg lead "$lead" --argjson base "$base" '
					def r: . + 0.5 | floor | tostring;
					def fx(d): . * pow(10; d) + 0.5 | floor | tostring
						| if length <= d then "0" * (d + 1 - length) + . else . end
						| .[0:length - d] + "." + .[length - d:];
					def f3: fx(3);
					def ratio(b): if b > 0 then . / b | fx(2) + "x" else "-" end;
					def ratios: "\(.avg_wait_s|ratio($base.a)) / \(.p99_wait_s|ratio($base.p)) / \(.max_wait_s|ratio($base.m))";
					"\($lead)| \(.policy) | \(.avg_wait_s|r) / \(.p50_wait_s|r) / \(.p95_wait_s|r) / \(.p99_wait_s|r) / \(.max_wait_s|r) | "
					+ (if .policy == "qssf" then "**\(ratios)**" else ratios end)
					+ " | \(.avg_bsld|fx(1)) / \(.p99_bsld|fx(1))"
					+ " | \(.avg_jct_s|r) | \(.makespan_s|r) | \(.gpu_util|f3) | "
					+ (if .multi_node_jobs > 0 then "\(.one_leaf_frac|f3) (\(.mean_leaves_multi|fx(2)))" else "n/a" end)
					+ " | \(.decisions_per_s|r) |"' "$OUT/$tr.$l.$p.$1.json"
			done
		done
	done
}
for m in $MODES; do
	echo "$m:"
	echo
	table "$m"
	echo
done
