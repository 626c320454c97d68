#!/bin/bash
# Agent CPU per second at rest, 8 simulated GPUs held by a job, with and
# without GPU sampling every second and a /metrics scrape every second.
set -u
BIN=${BIN:-bin/shoal}
run() { # $1: label, $2: sample interval, $3: scrape (1/0)
	d=$(mktemp -d)
	$BIN agent --name m1 --data-dir $d --gpus 8 --sim-gpu-load 50 --insecure \
		--http-port 17170 --raft-port 17171 --gossip-port 17172 --gpu-sample-interval $2 --log-level warn 2>$d/log &
	pid=$!
	for i in $(seq 50); do $BIN --data-dir $d status >/dev/null 2>&1 && break; sleep 0.2; done
	$BIN --data-dir $d submit --gpus-per-node 8 -- sleep 600 >/dev/null
	sleep 5
	t0=$(awk '{print $14+$15}' /proc/$pid/stat)
	for i in $(seq 60); do
		[ "$3" = 1 ] && curl -s --unix-socket $d/shoal.sock http://x/metrics >/dev/null
		sleep 1
	done
	t1=$(awk '{print $14+$15}' /proc/$pid/stat)
	echo "$1: $(( (t1-t0) ))/6000 of a core over 60 s ($(echo "scale=2; ($t1-$t0)/60" | bc) % )"
	kill $pid; wait $pid 2>/dev/null
	rm -rf $d
}
run "no sampling (1h), no scrape" 1h 0
run "sampling 1s, scrape 1s" 1s 1
run "no sampling (1h), no scrape" 1h 0
run "sampling 1s, scrape 1s" 1s 1
