#!/usr/bin/env bash
# Scale on a real PostgreSQL: fills a schema with a deployment's worth of rows (by default 1
# million subscribers with 10 monthly renewals each: 10 million transactions and 10 million
# ledger rows), then times the hot reads on it with pgbench. docs/SCALING.md has the figures.
#
#   scripts/scale/run.sh postgres://user@host:port/db [SUBSCRIBERS] [RENEWALS]
#
# The schema (SCALE_SCHEMA, default `scale`) is created by `storekeeper migrate` (STOREKEEPER_BIN,
# default .build/debug/storekeeper) and refilled on every run. Needs psql and pgbench (Debian's
# postgresql-client). PGBENCH_SECONDS (10) and PGBENCH_CLIENTS (4) set each measurement.
set -euo pipefail
cd "$(dirname "$0")/../.."
url=$1
subscribers=${2:-1000000}
renewals=${3:-10}
schema=${SCALE_SCHEMA:-scale}
bin=${STOREKEEPER_BIN:-.build/debug/storekeeper}
seconds=${PGBENCH_SECONDS:-10}
clients=${PGBENCH_CLIENTS:-4}
separator='?'
[[ $url == *\?* ]] && separator='&'

"$bin" migrate --database "$url${separator}schema=$schema" >/dev/null
export PGOPTIONS="-c search_path=$schema"
echo "== fill: $subscribers subscribers x $renewals renewals"
start=$SECONDS
psql "$url" -q -v subscribers="$subscribers" -v per="$renewals" -f scripts/scale/fill.sql
echo "fill took $((SECONDS - start)) s"
for query in subscriber grant-facts ledger-hour ledger-day; do
    echo "== $query: pgbench -c $clients -T $seconds"
    pgbench -n -c "$clients" -j 2 -T "$seconds" -D subscribers="$subscribers" -D per="$renewals" -f "scripts/scale/$query.sql" "$url" 2>&1 \
        | grep -E '^(latency average|latency stddev|tps)'
done
