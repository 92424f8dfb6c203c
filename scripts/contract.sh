#!/usr/bin/env bash
# API contract check: docs/openapi.yaml must be a valid OpenAPI document, and the real server
# must answer as it says. Starts `storekeeper serve --simulator` on free ports with a throwaway
# SQLite database, seeds one real purchase through the simulator (so positive cases can carry a
# receipt and a signed transaction Apple would accept), then lets Schemathesis generate valid and
# invalid requests for every operation, with the app key on app routes and the admin key on
# admin routes. Exits non-zero on any failure; the server is always stopped.
#
#   scripts/contract.sh                 # uses .build/debug/storekeeper (build it first)
#   STOREKEEPER_BIN=path/to/storekeeper scripts/contract.sh
#   scripts/contract.sh --include-operation-id getLedger   # extra arguments go to `st run`
#
# Knobs (defaults keep a run to a few minutes on 2 cores and make it repeatable):
#   CONTRACT_SEED (20261122), CONTRACT_MAX_EXAMPLES (30 per operation in the fuzzing phase, besides
#   the coverage phase's boundary cases, which reach every parameter's limits anyway; 100 and more
#   for a longer hunt), CONTRACT_APPLE_EXAMPLES (1 per operation whose answer only Apple knows,
#   besides the coverage phase's cases: what the server adds to Apple's answer is the same
#   whatever the input, and the rest is Apple's, played by the simulator), CONTRACT_VENV (.build/contract-venv), CONTRACT_REPORT_DIR (.build/contract-report).
#
# The server does not keep to Apple's rate limits here (`serverAPIRateLimitShare` 1,000: the
# embedded simulator enforces none), and holds a `?wait=` answer at most 1 s (`maxWaitSeconds`):
# the contract judges answers and their shapes (a 202 is one), while the throttle is judged by
# ServerAPIThrottleTests, ServerAPIClientTests and the import check, against a simulator that
# enforces Apple's limits, and the waits by the Swift suite. Schemathesis sends a wrong admin key
# to every admin operation many times over (it checks that each one refuses it), so the limit on
# wrong admin keys per address (`adminKeyGuessesPerSecond`) is raised here; that limit is judged
# by TrustHoleTests.adminKeyGuessing.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS

bin=${STOREKEEPER_BIN:-.build/debug/storekeeper}
venv=${CONTRACT_VENV:-.build/contract-venv}
seed=${CONTRACT_SEED:-20261122}
max_examples=${CONTRACT_MAX_EXAMPLES:-30}
apple_examples=${CONTRACT_APPLE_EXAMPLES:-1}
report_dir=${CONTRACT_REPORT_DIR:-.build/contract-report}
spec=docs/openapi.yaml
app_key=demo-app-key-0123456789
admin_key=demo-admin-key-0123456789
# Pinned: checks and their defaults change between Schemathesis releases, and CI must not.
schemathesis_version=4.32.5
validator_version=0.9.0

fail() { echo "contract: $*" >&2; echo "contract: 0 passed, 1 failed"; exit 1; }

command -v python3 >/dev/null || fail "python3 is required"
command -v curl >/dev/null || fail "curl is required"

# 1. Tools, in a virtualenv of their own (reused while the pinned versions are there).
installed() { "$venv/bin/python" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p'; }
if [ ! -x "$venv/bin/st" ] || [ "$(installed schemathesis)" != "$schemathesis_version" ] ||
  [ "$(installed openapi-spec-validator)" != "$validator_version" ]; then
  echo "contract: installing schemathesis $schemathesis_version and openapi-spec-validator $validator_version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "schemathesis==$schemathesis_version" "openapi-spec-validator==$validator_version"
fi
# scripts/test.sh makes the virtualenv while the build starts (PREPARE_ONLY=1).
if [ "${PREPARE_ONLY:-0}" = 1 ]; then exit 0; fi
[ -x "$bin" ] || fail "no storekeeper binary at $bin (build it, or set STOREKEEPER_BIN)"

# 2. The document itself.
"$venv/bin/openapi-spec-validator" "$spec" >/dev/null || fail "$spec is not a valid OpenAPI document"
echo "contract: $spec is valid OpenAPI"

# 3. The server, on ports nobody else uses, always stopped on the way out.
work=$(mktemp -d "${TMPDIR:-/tmp}/storekeeper-contract.XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
port=$(free_port)
sim_port=$(free_port)
while [ "$sim_port" = "$port" ]; do sim_port=$(free_port); done
base=http://127.0.0.1:$port

STOREKEEPER_SERVER_API_RATE_LIMIT_SHARE=1000 STOREKEEPER_MAX_WAIT_SECONDS=1 STOREKEEPER_ADMIN_KEY_GUESSES_PER_SECOND=100000 "$bin" serve --simulator --database "$work/db.sqlite" --port "$port" --simulator-port "$sim_port" \
  --log-level warning >"$work/server.log" 2>&1 &
server_pid=$!

for _ in $(seq 600); do
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "the server exited at start"; }
  curl -fsS -o /dev/null "$base/healthz" 2>/dev/null && break
  sleep 0.1
done
curl -fsS -o /dev/null "$base/healthz" || { tail -50 "$work/server.log" >&2; fail "the server did not become healthy"; }
echo "contract: server on $base (simulator on $sim_port)"

# 4. Real data: one sandbox device buys a subscription and a consumable; the receipt is granted
#    to `contract-user`. Its values go into Schemathesis dictionaries below, so generated valid
#    requests can reach the code behind the signature checks instead of stopping at them.
"$venv/bin/python" - "$base" "http://127.0.0.1:$sim_port" "$app_key" "$work/seed.json" <<'PY' || fail "seeding through the simulator failed"
import json, sys, urllib.request

api, sim, key, out = sys.argv[1:]

def call(url, body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json", **(headers or {})})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.load(response)

device = call(sim + "/sim/devices", {"bundleId": "com.example.storekeeper.demo", "environment": "sandbox"})["deviceId"]
call(sim + f"/sim/devices/{device}/purchases", {"productId": "com.example.coins100"})
purchase = call(sim + f"/sim/devices/{device}/purchases", {"productId": "com.example.pro.monthly"})
auth = {"Authorization": "Bearer " + key}
# The server holds an answer at most 1 s here: the same receipt posted again is the same
# verification, each post held on the server's signal until it is final.
for _ in range(300):
    verification = call(api + "/v1/receipts?wait=1", {"appUserId": "contract-user", "receipt": purchase["receipt"]}, auth)
    if verification["state"] in ("verified", "invalid"):
        break
if verification["state"] != "verified":
    sys.exit(f"seed: the receipt did not verify: {verification}")
app_transaction = call(sim + f"/sim/devices/{device}/app-transaction")["signedAppTransaction"]
json.dump({"receipt": purchase["receipt"], "signedTransaction": purchase["signedTransaction"],
           "signedAppTransaction": app_transaction, "verificationId": verification["id"]}, open(out, "w"))
PY
echo "contract: seeded one verified purchase for contract-user"

# 5. Schemathesis configuration: the key of each security scheme; real ids offered often for
#    path parameters (random ones are tried too); the real receipt and signed transaction in
#    place of every schema-valid one; and the few answers a schema cannot promise.
"$venv/bin/python" - "$work/seed.json" "$work/schemathesis.toml" "$base" "$app_key" "$admin_key" "$seed" "$max_examples" "$apple_examples" <<'PY' || fail "could not write the Schemathesis configuration"
import json, sys

seed_file, out, base, app_key, admin_key, seed, max_examples, apple_examples = sys.argv[1:]
s = json.load(open(seed_file))
q = json.dumps  # a JSON string is a valid TOML basic string for these values
open(out, "w").write(f"""
base-url = {q(base)}
seed = {int(seed)}
workers = 1
request-timeout = 60
continue-on-failure = true

[generation]
max-examples = {int(max_examples)}
database = "none"

[phases.stateful]
enabled = false

[auth.openapi.appBearer]
bearer = {q(app_key)}
[auth.openapi.adminBearer]
bearer = {q(admin_key)}

[dictionaries.apps]
values = ["demo"]
[dictionaries.users]
values = ["contract-user"]
[dictionaries.verifications]
values = [{q(s["verificationId"])}]
[dictionaries.products]
values = ["com.example.coins100", "com.example.removeads", "com.example.season.pass"]
[dictionaries.receipts]
values = [{q(s["receipt"])}]
[dictionaries.signed-transactions]
values = [{q(s["signedTransaction"])}]
[dictionaries.app-transactions]
values = [{q(s["signedAppTransaction"])}]

[parameters]
"path.app" = {{ dictionary = "apps", probability = 0.8 }}
"path.appUserId" = {{ dictionary = "users", probability = 0.5 }}
"path.id" = {{ dictionary = "verifications", probability = 0.5 }}
"path.productId" = {{ dictionary = "products", probability = 0.3 }}
"body.receipt" = {{ dictionary = "receipts", probability = 1.0 }}
"body.signedTransaction" = {{ dictionary = "signed-transactions", probability = 1.0 }}
"body.signedAppTransaction" = {{ dictionary = "app-transactions", probability = 1.0 }}

# Apple's signature cannot be produced from a schema: a valid-looking notification is still
# refused for what it is (400 not a JWS, 403 bad signature or password, 422 unknown bundle id).
[[operations]]
include-operation-id = "receiveAppStoreNotification"
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "403", "422"]

# Where a webhook may go is decided on the host's address (loopback, private, link-local,
# reserved, numeric spellings: docs/EVENTS.md), which a pattern cannot state: a schema-valid
# URL may still be refused with 400 webhook_destination_refused.
[[operations]]
include-operation-id = ["createWebhookEndpoint", "updateWebhookEndpoint"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404"]

# What a schema cannot state about an offering or a targeting: package ids and products, and
# rule ids, unique by field (not only whole items); a rule's maxAppVersion not below its
# minAppVersion; metadata at most 4096 bytes encoded. Such a body is 400 invalid_request.
[[operations]]
include-operation-id = ["putOffering", "putOfferingTargeting"]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404"]

# Apple's Retention Messaging configuration: what only Apple knows cannot be stated by a
# schema. An image must be a PNG without transparency at Apple's sizes, an identifier may
# already be used, a default may name a message or product Apple does not know, a production
# realtime URL waits for a passing performance test, a performance test needs a sandbox
# subscription of the app: Apple refuses such a request, answered 422 apple_rejected or 404.
# A body of random bytes is not a PNG (400), and headerPosition ABOVE_IMAGE without an image is
# a cross-field rule (400).
[[operations]]
include-operation-id = [
  "listRetentionMessages", "uploadRetentionMessage", "deleteRetentionMessage",
  "listRetentionImages", "uploadRetentionImage", "deleteRetentionImage",
  "getDefaultRetentionMessage", "putDefaultRetentionMessage", "deleteDefaultRetentionMessage",
  "getRetentionRealtimeURL", "putRetentionRealtimeURL", "deleteRetentionRealtimeURL",
  "startRetentionPerformanceTest", "getRetentionPerformanceTest",
]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404", "422"]

# Operations whose answer only Apple knows (the App Store Server API's calls, Retention
# Messaging's configuration, the notification history behind a gap fill): a few generated
# requests each in the fuzzing phase, besides the coverage phase's boundary cases. Every
# request still passes through the server's own checks, which are what this contract judges.
[[operations]]
include-operation-id = [
  "gapFillNotifications", "setAppAccountToken", "sendConsumptionInformation", "getAppTransactionInfo",
  "getRefundHistory", "lookUpOrder", "extendRenewalDate", "extendRenewalDates", "getRenewalExtensionStatus",
  "listRetentionMessages", "uploadRetentionMessage", "deleteRetentionMessage",
  "listRetentionImages", "uploadRetentionImage", "deleteRetentionImage",
  "getDefaultRetentionMessage", "putDefaultRetentionMessage", "deleteDefaultRetentionMessage",
  "getRetentionRealtimeURL", "putRetentionRealtimeURL", "deleteRetentionRealtimeURL",
  "startRetentionPerformanceTest", "getRetentionPerformanceTest",
]
generation.max-examples = {int(apple_examples)}

# The App Store Server API's own refusals of what only Apple knows (a transaction id that is not
# an original one, an order or request identifier Apple never issued, an extension Apple
# declines): the server answers 422 apple_rejected, or 404 for what Apple does not have.
[[operations]]
include-operation-id = [
  "setAppAccountToken", "sendConsumptionInformation", "getAppTransactionInfo", "getRefundHistory", "lookUpOrder",
  "extendRenewalDate", "extendRenewalDates", "getRenewalExtensionStatus", "gapFillNotifications",
]
checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "404", "409", "422"]

# The coverage phase draws its valid receipts and transactions from the schema, not from the
# dictionaries, so there they are refused for what they contain (400 invalid_receipt or
# invalid_signed_transaction or invalid_app_transaction, 422 signed_transaction_rejected or
# app_transaction_rejected). The fuzzing phase sends the
# real ones and must be accepted.
[[operations]]
include-operation-id = ["submitReceipt", "submitSignedTransaction", "postAppTransaction"]
phases.coverage.checks.positive_data_acceptance.expected-statuses = ["2xx", "400", "422"]
""")
PY

cat >"$work/hooks.py" <<'PY'
# Cross-field rules a schema cannot state.
import datetime

import schemathesis


def _instant(text):
    try:
        value = datetime.datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=datetime.timezone.utc)


@schemathesis.hook
def map_query(context, query):
    # The ledger and the figures refuse `from` after `to` (400); keep generated valid ranges in
    # order.
    ranged = ("/ledger", "/metrics/revenue", "/metrics/subscriptions", "/metrics/cohorts", "/metrics/ltv")
    if context.operation is None or not context.operation.path.endswith(ranged) or not query:
        return query
    start, end = _instant(query.get("from")), _instant(query.get("to"))
    if start is not None and end is not None and start > end:
        query = dict(query)
        query["from"], query["to"] = query["to"], query["from"]
    return query
PY

# 6. The run. Both keys in one run: each operation gets its own scheme's key. No examples
#    phase: the examples in the spec illustrate (alice has bought nothing), and the real receipt
#    and transaction exist only at run time, as dictionary values.
rm -rf "$report_dir"
mkdir -p "$report_dir"
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance
checks=$checks,negative_data_rejection,positive_data_acceptance,response_headers_conformance
checks=$checks,unsupported_method,allow_header_conformance,ignored_auth,missing_required_header
set +e
SCHEMATHESIS_HOOKS="$work/hooks.py" "$venv/bin/st" --config-file "$work/schemathesis.toml" --no-color run "$spec" \
  --checks "$checks" --phases coverage,fuzzing \
  --report junit,ndjson --report-dir "$report_dir" --report-junit-path "$report_dir/junit.xml" \
  --report-ndjson-path "$report_dir/events.ndjson" \
  "$@" >"$report_dir/schemathesis.txt" 2>&1
status=$?
set -e
cat "$report_dir/schemathesis.txt"
cp "$work/server.log" "$report_dir/server.log" 2>/dev/null || true
if ! kill -0 "$server_pid" 2>/dev/null; then
  # A crash is the worst contract failure: say so plainly, with the runtime's own reason.
  echo "contract: the server died during the run; its last words:" >&2
  grep -m 3 -E 'Fatal error|fatal|panic|Illegal' "$work/server.log" >&2 || tail -5 "$work/server.log" >&2
  status=1
fi

# 7. What each operation answered (to see that generated requests got past the front door),
#    then one line to read: operations that passed and failed (from the JUnit report).
summary=$("$venv/bin/python" - "$report_dir/junit.xml" "$report_dir/events.ndjson" <<'PY'
import collections, json, sys, xml.etree.ElementTree as ET

statuses = collections.defaultdict(collections.Counter)
try:
    for line in open(sys.argv[2]):
        event = json.loads(line).get("ScenarioFinished")
        if event:
            for interaction in event["recorder"]["interactions"].values():
                code = (interaction.get("response") or {}).get("status_code", "no answer")
                statuses[event["recorder"]["label"]][code] += 1
except OSError:
    pass
for label in sorted(statuses, key=lambda l: (l.split(" ", 1)[1], l)):
    seen = " ".join(f"{code}x{n}" for code, n in sorted(statuses[label].items(), key=lambda kv: str(kv[0])))
    print(f"contract:   {label:55} {seen}", file=sys.stderr)
passed = failed = 0
try:
    for case in ET.parse(sys.argv[1]).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is None:
            passed += 1
except (OSError, ET.ParseError):
    pass
print(passed, failed)
PY
)
read -r passed failed <<<"$summary"
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
echo "contract: $((SECONDS - started)) s, seed $seed, reports in $report_dir"
echo "contract: $passed passed, $failed failed"
exit "$status"
