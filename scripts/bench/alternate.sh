#!/usr/bin/env bash
# Runs one storekeeper-bench command with two builds in turn (A B, then B A, …), so both meet
# the same machine state and neither always runs first, and prints each run's last lines. For
# "no figure worse beyond the run-to-run spread" comparisons between two commits.
#
#   scripts/bench/alternate.sh BENCH_A BENCH_B ROUNDS -- ingest --receipts 10000 --full-sync
#
# BENCH_A / BENCH_B: paths of two `storekeeper-bench` binaries (`swift build -c release
# --product storekeeper-bench` at each commit, e.g. in a `git worktree`).
set -euo pipefail
a=$1 b=$2 rounds=$3
shift 3
[ "${1:-}" = "--" ] && shift
for round in $(seq 1 "$rounds"); do
    order="A B"
    [ $((round % 2)) -eq 0 ] && order="B A"
    for side in $order; do
        bin=$a
        [ "$side" = B ] && bin=$b
        echo "== round $round $side: $*"
        rm -f /tmp/storekeeper-bench.sqlite*
        "$bin" "$@" 2>&1 | tail -n "${TAIL_LINES:-6}"
    done
done
