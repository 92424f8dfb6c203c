#!/usr/bin/env bash
# What sharing the client budgets through PostgreSQL would cost: pgbench takes one token per
# transaction from a bucket row, the way a shared limiter would on every client request.
# `users` buckets spread the load (per-user budgets); `users=1` is the per-client-key budget,
# one row every request of an app would lock. Usage: shared-bucket.sh postgres://… [seconds]
set -euo pipefail
url=${1:?postgres URL}
seconds=${2:-15}
here=$(cd "$(dirname "$0")" && pwd)
psql -q "$url" -c "DROP TABLE IF EXISTS bench_buckets; CREATE TABLE bench_buckets (key TEXT PRIMARY KEY, tokens DOUBLE PRECISION NOT NULL, at DOUBLE PRECISION NOT NULL)"
for users in 10000 1; do
    echo "== users=$users (clients 16, threads 2, ${seconds} s)"
    pgbench -n -c 16 -j 2 -T "$seconds" -D users="$users" -f "$here/shared-bucket.sql" "$url" | grep -E "tps|latency average"
done
psql -q "$url" -c "DROP TABLE bench_buckets"
