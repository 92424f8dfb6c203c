#!/usr/bin/env bash
# The console in a real browser (Debian's chromium + chromium-driver, PyPI's selenium), as an
# operator would use it: `storekeeper serve --simulator` on free ports with a throwaway database,
# a scripted history bought through the simulator (subscribers, a trial, credits, a refund, a
# customer whose id is an HTML injection, a verification stuck while Apple answered 503), then
# scripts/console_check.py signs in, opens every page, checks the figures shown against the API,
# searches, presses retry on the stuck verification and sees it verified, tries a form without
# its CSRF token and a read-only operator's action (both refused). Screenshots are kept in
# CONSOLE_SCREENSHOTS (.build/console-screenshots). Exits non-zero on any failure.
#
#   scripts/console-check.sh          # uses .build/debug/storekeeper (build it first)
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${STOREKEEPER_BIN:-.build/debug/storekeeper}
venv=${CONSOLE_VENV:-.build/console-venv}
shots=${CONSOLE_SCREENSHOTS:-.build/console-screenshots}
selenium_version=4.27.1

fail() { echo "console: $*" >&2; exit 1; }
[ -x "$bin" ] || fail "no storekeeper binary at $bin (build it, or set STOREKEEPER_BIN)"
command -v chromium >/dev/null || fail "chromium is required (apt-get install chromium chromium-driver)"
command -v chromedriver >/dev/null || fail "chromedriver is required (apt-get install chromium-driver)"

if [ ! -x "$venv/bin/python" ] || [ "$("$venv/bin/python" -m pip show selenium 2>/dev/null | sed -n 's/^Version: //p')" != "$selenium_version" ]; then
  echo "console: installing selenium $selenium_version into $venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "selenium==$selenium_version"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/storekeeper-console.XXXXXX")
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
reader_password="reader-$(python3 -c 'import secrets; print(secrets.token_hex(8))')"
reader=$(printf '%s\n' "$reader_password" | "$bin" console-password --name reader --role read_only)

STOREKEEPER_CONSOLE_OPERATORS="$reader" "$bin" serve --simulator --database "$work/db.sqlite" --port "$port" \
  --simulator-port "$sim_port" --log-level warning >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 600); do
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; fail "the server exited at start"; }
  curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break
  sleep 0.1
done
curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" || { tail -50 "$work/server.log" >&2; fail "the server did not become healthy"; }

mkdir -p "$shots"
if ! "$venv/bin/python" scripts/console_check.py "http://127.0.0.1:$port" "http://127.0.0.1:$sim_port" "$reader_password" "$shots"; then
  tail -30 "$work/server.log" >&2
  echo "console: 0 passed, 1 failed"
  exit 1
fi
echo "console: 1 passed, 0 failed (screenshots in $shots)"
