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

# Each stage's seconds and outcome, printed as a table at the end, so a slower run names the
# stage that slowed it (docs/BENCHMARKS.md keeps the figures).
run_started=$SECONDS
stage_names=()
stage_seconds=()
stage_results=()
stage_started=$SECONDS
begin_stage() { stage_started=$SECONDS; }
end_stage() { # NAME RESULT
  stage_names+=("$1")
  stage_seconds+=($((SECONDS - stage_started)))
  stage_results+=("$2")
}
print_stages() {
  echo
  printf '%-28s %8s  %s\n' "stage" "seconds" "result"
  local i
  for i in "${!stage_names[@]}"; do
    printf '%-28s %8d  %s\n' "${stage_names[$i]}" "${stage_seconds[$i]}" "${stage_results[$i]}"
  done
  printf '%-28s %8d\n' "total" $((SECONDS - run_started))
}

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
# Several processes behind a load balancer (scripts/cluster.sh).
command -v haproxy >/dev/null 2>&1 || need+=(haproxy)
begin_stage
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/test.sh needs: ${need[*]} (apt-get install them, or run this as root)" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}"
fi
end_stage "install (${#need[@]} packages)" ok

# Every import a target makes must be allowed by docs/ARCHITECTURE.md's Imports table and declared
# directly in Package.swift (SwiftPM's own check below accepts any module reachable through the
# graph); warnings are errors in our targets (Package.swift's swiftSettings).
# The build's own flags, the same for `swift build` and `swift test` (else the suite rebuilds):
# line tables only for debug information (what a backtrace and a failing test's location need,
# at a fraction of full debug information's compile and link time). The index store stays: on
# Linux the test runner's discovery of XCTest cases reads it.
build_flags=(-Xswiftc -gline-tables-only)
# Beside the build, on what it leaves of the cores: the outside checks' virtualenvs (downloads and
# installs that would otherwise run beside the suite, the run's busiest part) and the format lint.
checks=(contract cluster walkthrough webhooks apple-library container-lint console-check import-check)
prepared_dir=$(mktemp -d)
(
  set +e
  for check in contract webhooks apple-library container-lint console-check; do
    PREPARE_ONLY=1 "./scripts/$check.sh" >"$prepared_dir/$check.log" 2>&1 || echo "$check" >>"$prepared_dir/failed"
  done
) &
prepare_pid=$!
(
  set +e
  started=$SECONDS
  swift format lint --strict --recursive Sources Tests Package.swift StorekeeperKit/Sources StorekeeperKit/Package.swift \
    >"$prepared_dir/lint.log" 2>&1
  echo "$? $((SECONDS - started))" >"$prepared_dir/lint.result"
) &
lint_pid=$!
begin_stage
python3 scripts/check_imports.py
swift build --build-tests --explicit-target-dependency-import-check error "${build_flags[@]}"
end_stage "build (debug, with tests)" ok

# PostgreSQL: the suite runs every storage test against it too. Point STOREKEEPER_TEST_POSTGRES_URL at
# an existing server (a database the tests may create schemas in), or a throwaway cluster is started here.
begin_stage
if [ -z "${STOREKEEPER_TEST_POSTGRES_URL:-}" ]; then
  STOREKEEPER_PG_STATE=$(mktemp)
  export STOREKEEPER_PG_STATE
  STOREKEEPER_TEST_POSTGRES_URL=$(./scripts/postgres.sh start)
  export STOREKEEPER_TEST_POSTGRES_URL
  stop_postgres=true
fi
# With this set, a missing PostgreSQL fails the suite instead of skipping its tests.
export STOREKEEPER_REQUIRE_POSTGRES=1
end_stage "postgresql" ok

# The lint and the virtualenvs, made beside the build: a lint finding fails the run (named with
# its output); a virtualenv that could not be made is made again by its check, which fails if it
# still cannot.
total=0
failed=0
# record_beside STAGE LOG RESULT FAILURE: the output and outcome of a job run beside the build or
# the suite (RESULT holds "status seconds"), counted as one test; a failure is named.
record_beside() {
  local status seconds
  cat "$2" 2>/dev/null || true
  read -r status seconds 2>/dev/null <"$3" || { status=1; seconds=0; }
  total=$((total + 1))
  stage_names+=("$1")
  stage_seconds+=("$seconds")
  if [ "$status" -eq 0 ]; then
    stage_results+=(ok)
  else
    echo "✘ $4"
    stage_results+=(FAILED)
    failed=$((failed + 1))
  fi
}
wait "$lint_pid" || true
record_beside "swift format lint (beside the build)" "$prepared_dir/lint.log" "$prepared_dir/lint.result" "swift format lint found problems"
wait "$prepare_pid" || true
if [ -f "$prepared_dir/failed" ]; then
  for check in $(cat "$prepared_dir/failed"); do
    echo "(preparing $check beside the build failed; its check tries again)"
    cat "$prepared_dir/$check.log"
  done
fi
rm -rf "$prepared_dir"

# The statically linked binary first, alone in an empty directory (linked from this build's
# objects in seconds): every outside check then runs that file, the one that ships.
static_bin=$PWD/.build/static/storekeeper
total=$((total + 1))
begin_stage
if STATIC_BIN=$static_bin ./scripts/static-binary.sh; then
  end_stage static-binary ok
  export STOREKEEPER_BIN=$static_bin
else
  echo "✘ scripts/static-binary.sh failed"
  end_stage static-binary FAILED
  failed=$((failed + 1))
fi
# The other programs the checks run (storekeeper-bench, storekeeperkit-example) stay in the build.
export STOREKEEPER_BENCH_BIN=$PWD/.build/debug/storekeeper-bench

# Checks by tools we did not write, against the real binary, beside the Swift suite (they wait
# on sockets, browsers and Python much of the time; the suite fills the cores meanwhile), in two
# lanes: the API contract (docs/openapi.yaml) by Schemathesis, the longest, then the cluster trial
# (HAProxy from Debian in front of two API processes and two workers, one of each killed with
# SIGKILL and PostgreSQL restarted with `pg_ctl -m immediate` under load); in the other, one after another, the README walkthrough as written, webhook signatures by the Standard
# Webhooks reference library, the simulator by Apple's App Store Server Library, the container
# file by hadolint, the console driven by a real browser (chromium, selenium), and customers in
# all 13 states imported through a kill -9 and compared with the same seen live. Each counts as
# one test; each one's output is shown whole once the suite has ended. Not here:
# scripts/sdk-package-check.sh (a throwaway app adding StorekeeperKit by URL), whose second build
# of swift-crypto costs about four minutes of this run (docs/BENCHMARKS.md); run it by hand.
lanes=("contract cluster" "walkthrough webhooks apple-library container-lint console-check import-check")
checks_dir=$(mktemp -d)
lane_pids=()
for lane in "${lanes[@]}"; do
  (
    set +e
    for check in $lane; do
      started=$SECONDS
      "./scripts/$check.sh" >"$checks_dir/$check.log" 2>&1
      echo "$? $((SECONDS - started))" >"$checks_dir/$check.result"
    done
  ) &
  lane_pids+=($!)
done

log=$(mktemp)
begin_stage
set +e
swift test --skip-build 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One plain closing line, whatever the runner printed last.
# A crashed test binary prints no summary: that is a failure to report, not a reason to skip the checks.
summary=$(grep -E "Test run with [0-9]+ tests?" "$log" | tail -n 1 || true)
suite_total=$(sed -nE 's/.*Test run with ([0-9]+) tests?.*/\1/p' <<<"$summary")
# Failed tests, not the closing "✘ Test run with N tests … failed" line.
suite_failed=$(grep -E '^✘ Test .* failed after' "$log" | grep -cvE '^✘ Test run with' || true)
rm -f "$log"
[ -n "$suite_total" ] || suite_total=0
[ "$status" -eq 0 ] && suite_failed=0
if [ "$status" -ne 0 ] && [ "$suite_failed" -eq 0 ]; then
  echo "✘ swift test failed without naming a failed test (did the test binary crash?)"
  suite_failed=1
fi
total=$((total + suite_total))
failed=$((failed + suite_failed))
[ "$failed" -eq 0 ] || status=1
end_stage "swift test ($suite_total tests)" "$([ "$suite_failed" -eq 0 ] && echo ok || echo "FAILED ($suite_failed)")"

# The SDK's own unit tests run in the suite above (`StorekeeperKitUnitChecks`, the files of
# StorekeeperKit/Tests built against the StorekeeperKit the root manifest builds): one build, not
# a second one of swift-crypto for one file. `swift test --package-path StorekeeperKit` still
# builds the package alone, as an app would.

# The outside checks' results, each with its own output and seconds (measured beside the suite).
for pid in "${lane_pids[@]}"; do wait "$pid" || true; done
for check in "${checks[@]}"; do
  record_beside "$check (beside the suite)" "$checks_dir/$check.log" "$checks_dir/$check.result" "scripts/$check.sh failed"
done
[ "$failed" -eq 0 ] || status=1
rm -rf "$checks_dir"
print_stages
echo "$((total - failed)) passed, ${failed} failed"
exit "$status"
