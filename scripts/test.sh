#!/usr/bin/env bash
# The whole test suite: build (the crash test runs the real `storekeeper` binary), lint, test.
set -euo pipefail
cd "$(dirname "$0")/.."

# Everything the run writes to a temporary directory (the suite's databases, the checks' work
# directories, the browser's profiles, the compiler's scratch files) goes under one directory that
# is removed at the end, so a CI machine's disk is as full after a run as before it.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/storekeeper-test.XXXXXX")
export TMPDIR="$scratch"
stop_postgres=false
cleanup() {
  if $stop_postgres; then ./scripts/postgres.sh stop || true; fi
  rm -rf "$scratch"
}
trap cleanup EXIT

# What a fresh Debian machine lacks, installed first (as root; otherwise named, and the run stops),
# so this one command is the whole set-up: SQLite's headers, PostgreSQL's server binaries (the
# suite runs every storage test on it), curl and Python's venv (the checks by outside tools),
# chromium and its driver (the console's browser check).
need=()
dpkg -s libsqlite3-dev >/dev/null 2>&1 || need+=(libsqlite3-dev)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3)
python3 -m venv --help >/dev/null 2>&1 || need+=(python3-venv)
# The console is checked in a real browser (scripts/console-check.sh).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/test.sh needs: ${need[*]} (apt-get install them, or run this as root)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}"
fi

# Every import a target makes must be allowed by docs/ARCHITECTURE.md's Imports table and declared
# directly in Package.swift (SwiftPM's own check below accepts any module reachable through the
# graph); warnings are errors in our targets (Package.swift's swiftSettings).
python3 scripts/check_imports.py
swift build --build-tests --explicit-target-dependency-import-check error

# PostgreSQL: the suite runs every storage test against it too. Point STOREKEEPER_TEST_POSTGRES_URL at
# an existing server (a database the tests may create schemas in), or a throwaway cluster is started here.
if [ -z "${STOREKEEPER_TEST_POSTGRES_URL:-}" ]; then
  STOREKEEPER_PG_STATE=$(mktemp)
  export STOREKEEPER_PG_STATE
  STOREKEEPER_TEST_POSTGRES_URL=$(./scripts/postgres.sh start)
  export STOREKEEPER_TEST_POSTGRES_URL
  stop_postgres=true
fi
# With this set, a missing PostgreSQL fails the suite instead of skipping its tests.
export STOREKEEPER_REQUIRE_POSTGRES=1
swift format lint --strict --recursive Sources Tests Package.swift

log=$(mktemp)
set +e
swift test 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One plain closing line, whatever the runner printed last.
# A crashed test binary prints no summary: that is a failure to report, not a reason to skip the checks.
summary=$(grep -E "Test run with [0-9]+ tests?" "$log" | tail -n 1 || true)
total=$(sed -nE 's/.*Test run with ([0-9]+) tests?.*/\1/p' <<<"$summary")
# Failed tests, not the closing "✘ Test run with N tests … failed" line.
failed=$(grep -E '^✘ Test .* failed after' "$log" | grep -cvE '^✘ Test run with' || true)
rm -f "$log"
[ -n "$total" ] || total=0
[ "$status" -eq 0 ] && failed=0
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
  echo "✘ swift test failed without naming a failed test (did the test binary crash?)"
  failed=1
fi

# The SDK's own package and its unit tests (no server): built on their own, as an app would.
sdk_log=$(mktemp)
set +e
swift test --package-path StorekeeperKit 2>&1 | tee "$sdk_log"
sdk_status=${PIPESTATUS[0]}
set -e
sdk_total=$(grep -E "Test run with [0-9]+ tests?" "$sdk_log" | tail -n 1 | sed -nE 's/.*Test run with ([0-9]+) tests?.*/\1/p' || true)
rm -f "$sdk_log"
total=$((total + ${sdk_total:-1}))
if [ "$sdk_status" -ne 0 ]; then
  echo "✘ StorekeeperKit's unit tests failed"
  failed=$((failed + 1))
  status=1
fi

# Checks by tools we did not write, against the real binary: the README walkthrough as written,
# the API contract (docs/openapi.yaml) by Schemathesis, webhook signatures by the Standard
# Webhooks reference library, the simulator by Apple's App Store Server Library, the container
# file by hadolint; the console driven by a real browser (chromium, selenium); 10,000 customers imported through a kill -9 and compared with the same seen
# live; and the statically linked release binary, alone in an empty directory. Each counts as
# one test.
for check in scripts/walkthrough.sh scripts/contract.sh scripts/webhooks.sh scripts/apple-library.sh scripts/container-lint.sh \
  scripts/console-check.sh scripts/import-check.sh scripts/static-binary.sh; do
  total=$((total + 1))
  if ! "./$check"; then
    echo "✘ $check failed"
    failed=$((failed + 1))
    status=1
  fi
done
echo "$((total - failed)) passed, ${failed} failed"
exit "$status"
