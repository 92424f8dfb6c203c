#!/usr/bin/env bash
# Issue #27's import as CI runs it: 390 customers, 30 in each of the 13 states, told to one server
# live, then imported with `storekeeper import` into a `storekeeper serve` of their own,
# killed with -9 halfway and restarted, under Apple's published limits enforced by the simulator;
# both servers compared customer by customer, and the command run again (docs/IMPORT.md,
# docs/BENCHMARKS.md). `storekeeper-bench import` exits 1 on any difference. The 10,000-customer
# run is the benchmark (`storekeeper-bench import`, its figure in docs/BENCHMARKS.md): it proves the
# rate, this proves equivalence through the kill.
#
#   scripts/import-check.sh                     # .build/debug/storekeeper-bench, 390 customers
#   IMPORT_CUSTOMERS=10000 scripts/import-check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bench=${STOREKEEPER_BENCH_BIN:-.build/debug/storekeeper-bench}
customers=${IMPORT_CUSTOMERS:-390}
name=import-check
. scripts/lib/check.sh
[ -x "$bench" ] || fail "no storekeeper-bench binary at $bench (swift build first)"
[ -x "$(dirname "$bench")/storekeeper" ] || fail "no storekeeper binary beside $bench"

if ! "$bench" import --customers "$customers" 2>"$work/progress"; then
  tail -n 20 "$work/progress" | tr '\r' '\n' | tail -n 20 >&2
  fail "the import of $customers customers did not reproduce what was seen live"
fi
echo "$name: 1 passed, 0 failed"
