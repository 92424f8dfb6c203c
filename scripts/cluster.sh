#!/usr/bin/env bash
# The cluster trial (docs/DEPLOYMENT.md, "Several processes behind a load balancer"): a throwaway
# PostgreSQL cluster of its own, HAProxy from the distribution with deploy/haproxy/haproxy.cfg in
# front of two `storekeeper serve --no-workers` processes, two `storekeeper worker` processes and
# the App Store simulator (slow, 200-800 ms). Under a paced load of receipts, each bought by a
# buyer of its own, it kills -9 one API process, then one worker, then stops PostgreSQL with
# `pg_ctl -m immediate` and starts it again. It passes when every answer while the database was
# gone came within a second (503 with Retry-After, never a 500), and afterwards every accepted
# receipt is verified once, granted once, booked once and owned by its buyer, all final within
# 30 s of the database's return.
#
#   scripts/cluster.sh                      # short (CI): 600 receipts at 40/s
#   scripts/cluster.sh --receipts 5000 --rate 100 --down-seconds 10
#   STOREKEEPER_BENCH_BIN=… scripts/cluster.sh   # the bench binary (its `storekeeper` beside it)
set -euo pipefail
cd "$(dirname "$0")/.."

bench=${STOREKEEPER_BENCH_BIN:-.build/debug/storekeeper-bench}
name=cluster
. scripts/lib/check.sh
[ "${PREPARE_ONLY:-0}" = 1 ] && exit 0
command -v haproxy >/dev/null 2>&1 || fail "HAProxy is not installed (apt-get install haproxy)"
[ -x "$bench" ] || fail "no storekeeper-bench at $bench (swift build first, or set STOREKEEPER_BENCH_BIN)"
[ -x "$(dirname "$bench")/storekeeper" ] || fail "no storekeeper beside $bench"

# Its own cluster: the trial stops it, so it must not be the suite's.
export STOREKEEPER_PG_STATE=$work/postgres.state
url=$(./scripts/postgres.sh start) || fail "PostgreSQL did not start"
stop_cluster() { ./scripts/postgres.sh stop || true; }
trap 'stop_cluster; cleanup' EXIT

if "$bench" cluster --database "$url" --postgres-state "$STOREKEEPER_PG_STATE" --haproxy "$(command -v haproxy)" \
  --directory "$work/logs" "$@"; then
  echo "cluster: 1 passed, 0 failed"
else
  for log in "$work"/logs/*.log; do
    echo "--- $log (last 30 lines)"
    tail -30 "$log"
  done
  fail "the trial found a problem (above)"
fi
