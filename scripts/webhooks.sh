#!/usr/bin/env bash
# Standard Webhooks check: the signatures of real deliveries are verified, live, by the reference
# library (PyPI `standardwebhooks`, which nobody here wrote). Starts `storekeeper serve --simulator`
# and a Python receiver on free ports, creates an endpoint with the admin API, then has the server
# deliver a test event and a real purchase's event. Each delivery must verify; the same delivery
# with one byte of the body changed, or its timestamp changed, must not. The server and the
# receiver are always stopped.
#
#   scripts/webhooks.sh            # uses .build/debug/storekeeper (build it first)
#   STOREKEEPER_BIN=path/to/storekeeper scripts/webhooks.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${STOREKEEPER_BIN:-.build/debug/storekeeper}
venv=${WEBHOOKS_VENV:-.build/webhooks-venv}
# Pinned, so CI does not change under us.
standardwebhooks_version=1.1.0
app_key=demo-app-key-0123456789
admin_key=demo-admin-key-0123456789

name=webhooks
. scripts/lib/check.sh
ensure_venv "$venv" standardwebhooks "$standardwebhooks_version"
[ -x "$bin" ] || fail "no storekeeper binary at $bin (build it, or set STOREKEEPER_BIN)"

port=$(free_port)
sim_port=$(free_port)
hook_port=$(free_port)
base=http://127.0.0.1:$port

# The receiver: verifies each delivery with the secret the admin API returned (read per request).
"$venv/bin/python" - "$hook_port" "$work" <<'PY' >"$work/receiver.log" 2>&1 &
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from standardwebhooks.webhooks import Webhook

port, work = int(sys.argv[1]), sys.argv[2]

def verifies(secret, body, headers):
    try:
        Webhook(secret).verify(body, headers)
        return True
    except Exception:
        return False

class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        headers = {name.lower(): value for name, value in self.headers.items()}
        secret = open(work + "/secret").read().strip()
        tampered = bytearray(body)
        tampered[len(tampered) // 2] ^= 0x01
        later = dict(headers, **{"webhook-timestamp": str(int(headers.get("webhook-timestamp", "0")) + 1)})
        result = {
            "type": json.loads(body).get("type"),
            "valid": verifies(secret, body, headers),
            "tamperedBodyRejected": not verifies(secret, bytes(tampered), headers),
            "tamperedTimestampRejected": not verifies(secret, body, later),
        }
        with open(work + "/results.jsonl", "a") as out:
            out.write(json.dumps(result) + "\n")
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass

ThreadingHTTPServer(("127.0.0.1", port), Receiver).serve_forever()
PY
pids+=($!)

"$bin" serve --simulator --allow-private-webhooks --database "$work/db.sqlite" --port "$port" --simulator-port "$sim_port" \
  --log-level warning >"$work/server.log" 2>&1 &
pids+=($!)
wait_healthy "$base"

# The endpoint, then a test event and a real purchase's event.
"$venv/bin/python" - "$base" "http://127.0.0.1:$sim_port" "http://127.0.0.1:$hook_port/hook" "$app_key" "$admin_key" "$work" <<'PY' ||
import json, sys, urllib.request

api, sim, hook, app_key, admin_key, work = sys.argv[1:]

def call(url, body=None, key=None):
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if body is not None else "GET")
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)

created = call(api + "/v1/admin/apps/demo/webhooks", {"url": hook}, admin_key)
open(work + "/secret", "w").write(created["secret"])
call(api + f"/v1/admin/apps/demo/webhooks/{created['endpoint']['id']}/test", {}, admin_key)
device = call(sim + "/sim/devices", {"bundleId": "com.example.storekeeper.demo", "environment": "sandbox"})["deviceId"]
purchase = call(sim + f"/sim/devices/{device}/purchases", {"productId": "com.example.removeads"})
verification = call(api + "/v1/receipts?wait=20", {"appUserId": "webhooks-user", "receipt": purchase["receipt"]}, app_key)
if verification["state"] != "verified":
    sys.exit(f"the receipt did not verify: {verification}")
PY
  fail "setting up the endpoint and the events failed"

for _ in $(seq 600); do
  [ -f "$work/results.jsonl" ] && [ "$(wc -l <"$work/results.jsonl")" -ge 2 ] && break
  sleep 0.1
done
[ -f "$work/results.jsonl" ] || { tail -20 "$work/server.log" "$work/receiver.log" >&2; fail "no delivery arrived"; }
cat "$work/results.jsonl"
python3 - "$work/results.jsonl" <<'PY' || fail "a signature did not verify as the Standard Webhooks library expects"
import json, sys
results = [json.loads(line) for line in open(sys.argv[1])]
types = sorted(r["type"] for r in results)
ok = len(results) >= 2 and "test" in types and "non_consumable_purchase" in types and all(
    r["valid"] and r["tamperedBodyRejected"] and r["tamperedTimestampRejected"] for r in results)
print(f"webhooks: {len(results)} deliveries checked by standardwebhooks: {types}")
sys.exit(0 if ok else 1)
PY
echo "webhooks: 1 passed, 0 failed"
