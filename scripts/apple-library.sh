#!/usr/bin/env bash
# Apple's own code as the judge of the simulator (issue #14): the official App Store Server
# Library for Python (PyPI `app-store-server-library`, which nobody here wrote) must accept
# everything the simulator makes and every answer it serves. Starts `storekeeper serve
# --simulator` on free ports, takes the In-App Purchase key the run generated for the demo app
# (`--export-keys`) and checks the app's Apple id, then, in both environments:
#
# - buys every product of the app and lives a subscription (renewal, billing retry, recovery,
#   auto-renew off, refund);
# - `SignedDataVerifier` (strict chain, the simulator's root, online checks off, then on against
#   the simulator's OCSP) verifies every signed transaction, renewal info and notification;
# - `AppStoreServerAPIClient` calls every Server API endpoint the simulator serves; every answer
#   must deserialise, and hold no field the library's model lacks (nor may a decoded payload);
# - `ReceiptUtility` reads a transaction id out of each device's app receipt.
#
#   scripts/apple-library.sh            # uses .build/debug/storekeeper (build it first)
#   STOREKEEPER_BIN=path/to/storekeeper scripts/apple-library.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${STOREKEEPER_BIN:-.build/debug/storekeeper}
venv=${APPLE_LIBRARY_VENV:-.build/apple-library-venv}
# Pinned, so CI does not change under us.
library_version=3.1.2

name=apple-library
. scripts/lib/check.sh
ensure_venv "$venv" app-store-server-library "$library_version"
[ -x "$bin" ] || fail "no storekeeper binary at $bin (build it, or set STOREKEEPER_BIN)"

port=$(free_port)
sim_port=$(free_port)
"$bin" serve --simulator --simulator-port "$sim_port" --port "$port" --database "$work/storekeeper.sqlite" --export-keys "$work/keys" \
  --log-level warning >"$work/server.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  curl -fsS "http://127.0.0.1:$sim_port/sim/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "http://127.0.0.1:$sim_port/sim/health" >/dev/null 2>&1 || { cat "$work/server.log" >&2; fail "the simulator did not start"; }

if ! "$venv/bin/python" scripts/apple_library_check.py "http://127.0.0.1:$sim_port" "$work/keys" "http://127.0.0.1:$port"; then
  echo "--- server log" >&2
  tail -n 40 "$work/server.log" >&2
  fail "Apple's library refused something the simulator made (above)"
fi
echo "apple-library: 1 passed, 0 failed"
