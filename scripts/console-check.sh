#!/usr/bin/env bash
# The console in a real browser (Debian's chromium + chromium-driver, PyPI's selenium), as an
# operator would use it: `storekeeper serve --simulator` with two apps on free ports with a throwaway
# database, a scripted history bought through the simulator in each (subscribers, a trial, credits,
# a refund, a renewal turned off, euros beside dollars, subscriptions expired, in billing retry
# and in grace, a customer whose id is an
# HTML injection, a verification stuck while Apple answered 503), then
# scripts/console_check.py signs in, opens every page, checks the figures shown against the API,
# searches, presses retry on the stuck verification and sees it verified, tries a form without
# its CSRF token and a read-only operator's action (both refused); every page shot is judged by
# axe-core (PyPI's axe-selenium-python) for WCAG 2.0 A and AA. Screenshots are kept in
# CONSOLE_SCREENSHOTS (.build/console-screenshots). Exits non-zero on any failure.
#
#   scripts/console-check.sh          # uses .build/debug/storekeeper (build it first)
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${STOREKEEPER_BIN:-.build/debug/storekeeper}
venv=${CONSOLE_VENV:-.build/console-venv}
shots=${CONSOLE_SCREENSHOTS:-.build/console-screenshots}
# Pinned, so CI does not change under us.
selenium_version=4.27.1
axe_version=2.1.6

name=console
. scripts/lib/check.sh
command -v chromium >/dev/null || fail "chromium is required (apt-get install chromium chromium-driver)"
command -v chromedriver >/dev/null || fail "chromedriver is required (apt-get install chromium-driver)"
ensure_venv "$venv" selenium "$selenium_version" axe-selenium-python "$axe_version"
[ -x "$bin" ] || fail "no storekeeper binary at $bin (build it, or set STOREKEEPER_BIN)"

port=$(free_port)
sim_port=$(free_port)
while [ "$sim_port" = "$port" ]; do sim_port=$(free_port); done
base=http://127.0.0.1:$port
# A read-only operator with a password of this run.
reader_password="reader-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
reader=$(printf '%s\n' "$reader_password" | "$bin" console-password --name reader --role read_only)

# Three apps, as an operator with several would configure them: the demo app (its keys and
# products as in the README), a puzzle app that sells in euros, and one whose daily subscription
# lasts ten seconds on the simulator's clock (300 s a month), so its subscribers lapse, enter
# billing retry and a grace period while the check runs.
cat >"$work/config.json" <<'JSON'
{
  "adminKey": "demo-admin-key-0123456789",
  "apps": [
    {
      "id": "demo", "bundleId": "com.example.storekeeper.demo", "sharedSecret": "demo-shared-secret",
      "apiKey": "demo-app-key-0123456789",
      "products": [
        {"productId": "com.example.coins100", "type": "consumable", "status": "ready_for_sale", "creditAmount": 100, "priceMicros": 990000, "currency": "USD"},
        {"productId": "com.example.removeads", "type": "non_consumable", "status": "ready_for_sale", "priceMicros": 2990000, "currency": "USD"},
        {"productId": "com.example.pro.monthly", "type": "auto_renewable", "status": "ready_for_sale", "duration": "P1M", "priceMicros": 4990000, "currency": "USD"},
        {"productId": "com.example.season.pass", "type": "non_renewing", "status": "ready_for_sale", "duration": "P3M", "priceMicros": 9990000, "currency": "USD"}
      ],
      "entitlements": [
        {"id": "pro", "products": ["com.example.pro.monthly", "com.example.season.pass"]},
        {"id": "no_ads", "products": ["com.example.removeads", "com.example.pro.monthly"]}
      ]
    },
    {
      "id": "puzzles", "bundleId": "com.example.puzzles", "sharedSecret": "puzzles-shared-secret",
      "apiKey": "puzzles-app-key-0123456789",
      "products": [
        {"productId": "com.example.puzzles.hints10", "type": "consumable", "status": "ready_for_sale", "creditAmount": 10, "priceMicros": 1990000, "currency": "EUR"},
        {"productId": "com.example.puzzles.yearly", "type": "auto_renewable", "status": "ready_for_sale", "duration": "P1Y", "priceMicros": 29990000, "currency": "EUR"}
      ],
      "entitlements": [{"id": "all_puzzles", "products": ["com.example.puzzles.yearly"]}]
    },
    {
      "id": "quick", "bundleId": "com.example.quick", "sharedSecret": "quick-shared-secret",
      "apiKey": "quick-app-key-0123456789",
      "products": [
        {"productId": "com.example.quick.daily", "type": "auto_renewable", "status": "ready_for_sale", "duration": "P1D", "priceMicros": 190000, "currency": "USD"}
      ],
      "entitlements": [{"id": "quick", "products": ["com.example.quick.daily"]}]
    }
  ]
}
JSON

STOREKEEPER_CONSOLE_OPERATORS="$reader" "$bin" serve --simulator --config "$work/config.json" --database "$work/db.sqlite" --port "$port" \
  --simulator-port "$sim_port" --log-level warning >"$work/server.log" 2>&1 &
pids+=($!)
wait_healthy "$base"

mkdir -p "$shots"
"$venv/bin/python" scripts/console_check.py "$base" "http://127.0.0.1:$sim_port" "$reader_password" "$shots" ||
  { tail -30 "$work/server.log" >&2; fail "the browser check failed (screenshots in $shots)"; }
echo "console: 1 passed, 0 failed (screenshots in $shots)"
