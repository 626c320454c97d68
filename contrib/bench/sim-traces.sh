#!/bin/bash
# Every placement policy on every shared trace, both limit models, with
# and without --fairshare: the tables of BENCHMARKS.md "Placement
# policies on real traces". Runs `shoal sim --json` JOBS at a time, keeps
# each summary in OUT (reused when present: delete OUT to measure again),
# then prints two markdown tables whose "avg ÷ backfill" is each row's
# average wait over EASY backfill's under the same limits and ordering.
# MODES picks the tables (plain: jobs by ID; fairshare: --fairshare).
# Usage: make build && contrib/bench/sim-traces.sh [OUT]
set -eu
BIN=${BIN:-bin/shoal}
TRACES=${TRACES:-../shared/traces}
JOBS=${JOBS:-2}
MODES=${MODES:-plain fairshare}
OUT=${1:-sim-traces.out}
mkdir -p "$OUT"
# trace file, nodes (sized so that the queue is long; BENCHMARKS.md says why)
SIZES="philly_dirlab_subset.csv:128 helios_dirlab_subset.csv:64 alibaba_gpu_v2023_openb.csv:6"
POLICIES="fifo backfill shoal qssf"
runs() {
	for fs in $MODES; do
		for tn in $SIZES; do
			for l in exact noisy; do
				for p in $POLICIES; do echo "$tn $l $p $fs"; done
			done
		done
	done
}
one() { # trace:nodes limits policy plain|fairshare
	local t=${1%%:*} n=${1##*:} f="$OUT/${1%%_*}.$2.$3.$4.json" extra=()
	[ -s "$f" ] && return 0
	[ "$4" = fairshare ] && extra=(--fairshare)
	"$BIN" sim --trace "$TRACES/$t" --nodes "$n" --gpus-per-node 8 --leaf-size 8 \
		--limits "$2" --policy "$3" "${extra[@]}" --json >"$f.tmp"
	mv "$f.tmp" "$f"
}
export -f one
export BIN TRACES OUT
runs | xargs -P "$JOBS" -L 1 bash -c 'one "$@"' _
table() { # plain|fairshare
	echo "| trace (nodes × 8 GPUs) | limits | policy | wait avg / p50 / p95 / p99 / max | avg ÷ backfill | bsld avg / p99 | avg JCT | makespan | GPU util | 1leaf (lv) | decisions/s |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|"
	for tn in $SIZES; do
		local tr=${tn%%_*}
		for l in exact noisy; do
			local base first=1
			base=$(jq .avg_wait_s "$OUT/$tr.$l.backfill.$1.json")
			for p in $POLICIES; do
				local lead="|  |  "
				[ $first = 1 ] && lead="|  | $l "
				[ $first = 1 ] && [ $l = exact ] && lead="| $tr (${tn##*:}) | $l "
				first=0
				jq -r --arg lead "$lead" --argjson base "$base" '
					def r: . + 0.5 | floor | tostring;
					def fx(d): . * pow(10; d) + 0.5 | floor | tostring
						| if length <= d then "0" * (d + 1 - length) + . else . end
						| .[0:length - d] + "." + .[length - d:];
					def f3: fx(3);
					def ratio: . / $base | fx(2);
					"\($lead)| \(.policy) | \(.avg_wait_s|r) / \(.p50_wait_s|r) / \(.p95_wait_s|r) / \(.p99_wait_s|r) / \(.max_wait_s|r) | "
					+ (if .policy == "qssf" then "**\(.avg_wait_s|ratio)x**" else "\(.avg_wait_s|ratio)x" end)
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
