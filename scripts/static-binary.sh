#!/usr/bin/env bash
# The unit that ships is one file: `storekeeper` with the Swift runtime and Foundation linked in,
# copied alone into an empty directory and started there on the embedded default (SQLite in that
# directory, the built-in simulator). A purchase made in the simulator is posted and must end
# verified. The binary must not need Swift's shared libraries.
#
# It links the debug build's objects (the build CI has just made) with SwiftPM's own link command
# for the product, read from .build/debug.yaml, plus `-static-stdlib` and Foundation's static
# libraries (a dynamic build's objects name only Foundation's shared ones): seconds, where a
# release build of its own took ten minutes. The file it writes, STATIC_BIN
# (.build/static/storekeeper), is what scripts/test.sh gives the other outside checks. The release
# image (deploy/Dockerfile) builds the same product with `swift build -c release --static-swift-stdlib`.
#
#   scripts/static-binary.sh       # after `swift build`
set -euo pipefail
cd "$(dirname "$0")/.."

name=static-binary
. scripts/lib/check.sh

out=${STATIC_BIN:-.build/static/storekeeper}
manifest=.build/debug.yaml
[ -f "$manifest" ] || fail "no $manifest: build first (swift build)"
mkdir -p "$(dirname "$out")"
link=$(python3 - "$manifest" "$out" <<'PY'
import json, os, shlex, sys

manifest, out = sys.argv[1], os.path.abspath(sys.argv[2])
args = None
lines = open(manifest).read().splitlines()
for index, line in enumerate(lines):
    # The product's link step: `description: "Linking …/debug/storekeeper"`, its args two lines on.
    if line.strip().startswith('description: "Linking') and line.strip().endswith('/debug/storekeeper"'):
        for following in lines[index + 1:index + 4]:
            if following.strip().startswith("args: "):
                args = json.loads(following.strip()[len("args: "):])
        break
if not args or "-o" not in args:
    sys.exit("no link command for storekeeper in " + manifest)
args[args.index("-o") + 1] = out
args.insert(1, "-static-stdlib")
# What a static Foundation needs beyond the shared libraries a dynamic build's objects name;
# the ICU data last, for the single-pass linker.
args += ["-lFoundation", "-lFoundationInternationalization", "-lCoreFoundation", "-lFoundationEssentials",
         "-l_FoundationCShims", "-l_FoundationCollections", "-l_FoundationICU"]
print(shlex.join(args))
PY
) || fail "could not read the link command from $manifest"
# The static archives' own linker warnings (mktemp and the like) are not ours to fix.
eval "$link" 2>"$work/link.log" || { grep -v 'warning:' "$work/link.log" | tail -20 >&2; fail "the static link failed"; }
bin=$out
[ -x "$bin" ] || fail "no static binary at $bin"
if ldd "$bin" | grep -q 'libswift\|libFoundation\|libdispatch\|libBlocksRuntime'; then
  ldd "$bin" >&2
  fail "the binary links Swift's shared libraries"
fi

cp "$bin" "$work/storekeeper"
cd "$work"
port=$(free_port)
sim_port=$(free_port)
./storekeeper serve --simulator --port "$port" --simulator-port "$sim_port" --log-level warning >server.log 2>&1 &
pids+=($!)
wait_healthy "http://127.0.0.1:$port"
[ -f storekeeper.sqlite ] || fail "no database in the empty directory it was started in"

device=$(curl -fsS -X POST "http://127.0.0.1:$sim_port/sim/devices" \
  -d '{"bundleId":"com.example.storekeeper.demo","environment":"sandbox"}' | sed -E 's/.*"deviceId":"([^"]+)".*/\1/')
receipt=$(curl -fsS -X POST "http://127.0.0.1:$sim_port/sim/devices/$device/purchases" -d '{"productId":"com.example.coins100"}' \
  | sed -E 's/.*"receipt":"([^"]+)".*/\1/; s#\\/#/#g')
# Held until the verification is final (the server's own signal), up to the server's cap of
# 30 s; on a machine too busy for that, the same receipt posted again (the same verification)
# waits on the same signal once more.
post() {
  curl -sS -X POST "http://127.0.0.1:$port/v1/receipts?wait=30" -H 'Authorization: Bearer demo-app-key-0123456789' \
    -H 'Content-Type: application/json' -d "{\"appUserId\":\"static\",\"receipt\":\"$receipt\"}"
}
answer=$(post)
for _ in $(seq 20); do
  grep -q '"state":"\(verified\|invalid\)"' <<<"$answer" && break
  answer=$(post)
done
grep -q '"state":"verified"' <<<"$answer" || { echo "$answer" >&2; tail -20 server.log >&2; fail "the posted receipt did not verify"; }
echo "$name: 1 passed, 0 failed ($(du -h storekeeper | cut -f1) binary, needs: $(ldd storekeeper | awk '{print $1}' | tr '\n' ' '))"
