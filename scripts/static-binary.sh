#!/usr/bin/env bash
# The unit that ships: `storekeeper` built in release with the Swift runtime linked in
# (`--static-swift-stdlib`), copied alone into an empty directory and started there on the
# embedded default (SQLite in that directory, the built-in simulator). A purchase made in the
# simulator is posted and must end verified. The binary must not need Swift's shared libraries.
#
#   scripts/static-binary.sh       # builds the release binary first (a few minutes when cold)
set -euo pipefail
cd "$(dirname "$0")/.."

name=static-binary
. scripts/lib/check.sh

swift build -c release --product storekeeper --static-swift-stdlib
bin="$(swift build -c release --product storekeeper --static-swift-stdlib --show-bin-path)/storekeeper"
[ -x "$bin" ] || fail "no release binary at $bin"
if ldd "$bin" | grep -q 'libswift\|libFoundation'; then
  ldd "$bin" >&2
  fail "the binary links Swift's shared libraries"
fi

cp "$bin" "$work/storekeeper"
cd "$work"
port=$(free_port)
sim_port=$(free_port)
./storekeeper serve --simulator --port "$port" --simulator-port "$sim_port" --log-level warning >server.log 2>&1 &
pids+=($!)
# A bounded wait for the child process: it has no signal this script could await.
for _ in $(seq 1200); do
  curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
  sleep 0.1
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" || { tail -50 server.log >&2; fail "the server did not become healthy"; }
[ -f storekeeper.sqlite ] || fail "no database in the empty directory it was started in"

device=$(curl -fsS -X POST "http://127.0.0.1:$sim_port/sim/devices" \
  -d '{"bundleId":"com.example.storekeeper.demo","environment":"sandbox"}' | sed -E 's/.*"deviceId":"([^"]+)".*/\1/')
receipt=$(curl -fsS -X POST "http://127.0.0.1:$sim_port/sim/devices/$device/purchases" -d '{"productId":"com.example.coins100"}' \
  | sed -E 's/.*"receipt":"([^"]+)".*/\1/; s#\\/#/#g')
answer=$(curl -sS -X POST "http://127.0.0.1:$port/v1/receipts?wait=30" -H 'Authorization: Bearer demo-app-key-0123456789' \
  -H 'Content-Type: application/json' -d "{\"appUserId\":\"static\",\"receipt\":\"$receipt\"}")
grep -q '"state":"verified"' <<<"$answer" || { echo "$answer" >&2; tail -20 server.log >&2; fail "the posted receipt did not verify"; }
echo "$name: 1 passed, 0 failed ($(du -h storekeeper | cut -f1) binary, needs: $(ldd storekeeper | awk '{print $1}' | tr '\n' ' '))"
