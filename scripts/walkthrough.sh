#!/usr/bin/env bash
# Runs the README's walkthrough exactly as written against a fresh `storekeeper serve --simulator`
# and checks what each step prints, so the README cannot drift from the server.
#
#   scripts/walkthrough.sh     # STOREKEEPER_BIN=path/to/storekeeper (default .build/debug/storekeeper);
#                              # WALKTHROUGH_VERBOSE=1 also prints every step's output
#
# The walkthrough is every ```sh block preceded by the line `<!-- walkthrough -->` in README.md;
# a step starts at a comment line `# N. …`. The steps run in order in one bash session, as if
# pasted into a terminal; each step's output must match its expectations below. A step whose
# README comment begins "Wait" (# N. Wait …) is re-run until it matches or the deadline passes, so
# it may only read.
# Needs ports 8080 and 8090 free. Exit 0 when every step matched; otherwise the failing step,
# its commands and its output, and the end of the server's log.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
README=$ROOT/README.md
BIN=${STOREKEEPER_BIN:-.build/debug/storekeeper}
[[ $BIN == /* ]] || BIN=$ROOT/$BIN
STEP_TIMEOUT=${WALKTHROUGH_STEP_TIMEOUT:-120} # seconds one run of one step may take
POLL_DEADLINE=${WALKTHROUGH_POLL_DEADLINE:-180} # seconds a "wait" step is retried until it matches
START_TIMEOUT=${WALKTHROUGH_START_TIMEOUT:-180} # seconds the server may take to answer /healthz

# ---- Expectations, by step number: extended regexes (grep -E), each must match some output line.
declare -A EXPECT=() REFUSE=()
expect() { local n=$1 p; shift; for p in "$@"; do EXPECT[$n]+="$p"$'\n'; done; }
refuse() { local n=$1 p; shift; for p in "$@"; do REFUSE[$n]+="$p"$'\n'; done; }
MONTHLY='com\.example\.pro\.monthly'
COINS='com\.example\.coins100'

# 1. Ready for Sale products only; the paywall's current offering, without the retired pack.
expect 1 '"products":\[' "\"productId\":\"$MONTHLY\"" "\"productId\":\"$COINS\"" '"currentOfferingId":"default"' '"id":"\$lifetime"'
refuse 1 'com\.example\.legacy\.pack' '"error"'
# 2. A sandbox purchase of the monthly subscription: the transaction Apple recorded.
expect 2 "\"product_?[iI]d\":\"$MONTHLY\"" '"(original_)?transaction_?[iI]d":"[0-9]+"'
refuse 2 '"error"'
# 3. The receipt verified at once, in the sandbox.
expect 3 '"state":"verified"' '"environment":"sandbox"' '"appUserId":"alice"'
# 4. alice has Pro.
expect 4 "\"activeEntitlements\":\\[\"$MONTHLY\"\\]" '"status":"active"' '"pro":\{[^}]*"isActive":true' '"no_ads":\{[^}]*"isActive":true'
# 5. The sandbox ledger as CSV: the header and alice's purchase.
expect 5 '^app_id,app_user_id,product_id,' "^demo,alice,$MONTHLY,auto_renewable,.*,sandbox,"
# 6. Apple down (verifyReceipt and the Server API): the new receipt is accepted, not final.
expect 6 '"outages":\[\{' '"down":true' '"state":"(pending|verifying|retry_scheduled)"'
refuse 6 '"state":"(verified|invalid)"' '"error"'
# 7. Listed as retry_scheduled, with the reason and the next attempt.
expect 7 '"state":"retry_scheduled"' '"reason":"[a-z0-9_]+"' '"nextAttemptAt":"20[0-9-]+T'
# 8. Apple back but slow; retried now, verified; then the faults are cleared.
expect 8 '"latencyMaxMs":6000' '"down":false' '"state":"verified"' '"latencyMaxMs":0,"latencyMinMs":0,"outages":\[\]'
# 9. The 503s and the retries, counted in the metrics.
expect 9 '^storekeeper_apple_responses_total\{[^}]*"http_503"[^}]*\} [1-9]' '^storekeeper_verification_retries_total(\{[^}]*\})? [1-9]'
# 10. A refund whose notification is lost: alice still has Pro.
expect 10 '"drop":1' '"cancellation_?[dD]ate' "\"activeEntitlements\":\\[\"$MONTHLY\"\\]"
# 11. The simulator lists the REFUND as not delivered.
expect 11 '"delivered":false[^}]*"notificationType":"REFUND"' '"NO_RESPONSE"'
# 12. Gap-fill finds the lost notification in Apple's history.
expect 12 '"recovered":1'
# 13. The refund is applied: no Pro any more.
expect 13 '"activeEntitlements":\[\]' '"status":"revoked"' '"entitlements":\{\}'
# 14. A refresh from the Server API, verified.
expect 14 '"state":"verified"' '"appUserId":"alice"'
# 15-17. StorekeeperKit's example app: paid, died before posting; the next launch delivers it.
expect 15 '^buy com\.example\.removeads: pending \(server_unavailable\)' '^entitlements of carol: \[\]'
expect 16 '^launch: transaction [0-9]+ granted; owns \["com\.example\.removeads"\]'
expect 17 '^restored: \["com\.example\.removeads"\]'
# 18. The paywall by storefront through the SDK, and a package bought.
expect 18 '^paywall no_ads: \$lifetime com\.example\.removeads 2\.99 USD$' '^buy \$lifetime: granted; owns \["com\.example\.removeads"\]'

# ---- Helpers.
WORK=
SERVER_PID=
SESSION_PID=
STARTED=$SECONDS
say() { printf '%s\n' "$*" >&2; }
die() {
  say "walkthrough: FAILED: $*"
  if [[ -n $WORK && -s $WORK/server.log ]]; then
    say "--- last lines of the server log ($WORK/server.log):"
    tail -n 30 "$WORK/server.log" >&2
  fi
  exit 1
}
# Prints long output with each line cut at 2,000 characters (receipts are long).
show() { cut -c1-2000 <<<"$1" | sed 's/^/    | /' >&2; }

children_of() { ps -o pid= --ppid "$1" 2>/dev/null; }
cleanup() {
  local status=$? pid
  if [[ -n $SESSION_PID ]]; then
    for pid in $(children_of "$SESSION_PID"); do kill "$pid" 2>/dev/null; done
    kill "$SESSION_PID" 2>/dev/null
  fi
  if [[ -n $SERVER_PID ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null
    for _ in $(seq 1 100); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVER_PID" 2>/dev/null
    wait "$SERVER_PID" 2>/dev/null
  fi
  if [[ -n $WORK ]]; then
    if [[ $status -eq 0 ]]; then rm -rf "$WORK"; else say "(server directory kept: $WORK)"; fi
  fi
}
trap cleanup EXIT
trap 'say "walkthrough: interrupted"; exit 130' INT TERM

port_busy() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# ---- The walkthrough, from README.md.
[[ -f $README ]] || die "no README.md in $ROOT"
WALKTHROUGH=$(awk '
  /^<!-- walkthrough -->[[:space:]]*$/ { armed = 1; next }
  armed && /^```(sh|bash)[[:space:]]*$/ { inside = 1; armed = 0; blocks++; next }
  armed && !/^[[:space:]]*$/ { armed = 0 }
  inside && /^```[[:space:]]*$/ { inside = 0; next }
  inside { print }
  END { if (blocks == 0) exit 3; if (inside) exit 4 }' "$README")
case $? in
  0) ;;
  3) die "README.md has no walkthrough block (a \`<!-- walkthrough -->\` line followed by a \`\`\`sh block)" ;;
  4) die "README.md: a walkthrough block is not closed" ;;
  *) die "could not read README.md" ;;
esac

# Split into steps: 0 is what comes before "# 1." (variables); step N starts at "# N. ".
declare -A STEP=() TITLE=()
ORDER=()
current=0
while IFS= read -r line; do
  if [[ $line =~ ^#\ ([0-9]+)\.\  ]]; then
    current=${BASH_REMATCH[1]}
    [[ -z ${STEP[$current]+x} ]] || die "README.md: step $current appears twice"
    ORDER+=("$current")
    TITLE[$current]=${line#\# }
  fi
  STEP[$current]+="$line"$'\n'
done <<<"$WALKTHROUGH"
((${#ORDER[@]} > 0)) || die "README.md: the walkthrough has no numbered steps (# 1. …)"
expected=1
for n in "${ORDER[@]}"; do
  ((n == expected)) || die "README.md: step $n follows step $((expected - 1)); steps are numbered 1, 2, 3…"
  [[ -n ${EXPECT[$n]:-} ]] || die "README.md step $n has no expectation in scripts/walkthrough.sh: add one"
  expected=$((n + 1))
done
for n in "${!EXPECT[@]}"; do
  [[ -n ${STEP[$n]:-} ]] || die "scripts/walkthrough.sh expects step $n, which README.md's walkthrough does not have"
done

# A step whose comment begins "# N. Wait" is polled: re-run until it matches (so it may only read).
declare -A POLLED=()
for n in "${ORDER[@]}"; do
  if [[ ${TITLE[$n],,} =~ ^[0-9]+\.\ wait ]]; then
    if grep -v '^[[:space:]]*#' <<<"${STEP[$n]}" | grep -qE -- '(^|[[:space:]])(-X|-d|--data[a-z-]*)([[:space:]]|$)|^[[:space:]]*[A-Za-z_][A-Za-z0-9_]*='; then
      die "README.md step $n begins \"Wait\" (so it is re-run until it matches) but it changes something or sets a variable: keep it to reads"
    fi
    POLLED[$n]=1
  fi
done

# ---- The Commands table: one row per command, with exactly the options its --help lists, for
# both binaries (`storekeeper`, and `storekeeper-bench` built beside it).
[[ -x $BIN ]] || die "no storekeeper binary at $BIN (build it, or set STOREKEEPER_BIN)"
BENCH_BIN=${STOREKEEPER_BENCH_BIN:-$(dirname "$BIN")/storekeeper-bench}
[[ -x $BENCH_BIN ]] || die "no storekeeper-bench binary at $BENCH_BIN (build it, or set STOREKEEPER_BENCH_BIN)"
options() { grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- '--help' | sort -u; }
check_table() { # NAME BINARY
  local name=$1 bin=$2 cell command word words sub nested leaf usage missing extra
  subcommands() { "$bin" "$@" --help 2>&1 | sed -n '/^SUBCOMMANDS:/,/^$/p' | sed -nE 's/^  ([a-z][a-z0-9-]*).*/\1/p'; }
  declare -A TABLE=()
  # shellcheck disable=SC2016 # backquotes are the table's code spans
  while IFS= read -r cell; do
    command=
    read -ra words <<<"${cell#"$name" }"
    for word in "${words[@]}"; do # the command's words: up to the first option or placeholder
      [[ $word =~ ^[a-z][a-z0-9-]*$ ]] || break
      command+=${command:+ }$word
    done
    TABLE[$command]=$cell
  done < <(sed -nE "s/^\| \`($name [^\`]*)\` \|.*/\1/p" "$README")
  local COMMANDS=()
  for sub in $(subcommands); do
    nested=$(subcommands "$sub")
    if [[ -n $nested ]]; then for leaf in $nested; do COMMANDS+=("$sub $leaf"); done; else COMMANDS+=("$sub"); fi
  done
  ((${#COMMANDS[@]} > 0)) || die "$bin --help lists no subcommands"
  for command in "${COMMANDS[@]}"; do
    [[ -n ${TABLE[$command]:-} ]] || die "README.md's Commands table has no row for \`$name $command\`"
    # shellcheck disable=SC2086 # the command's words are separate arguments
    usage=$("$bin" $command --help 2>&1 | grep -m1 '^USAGE:')
    missing=$(comm -23 <(options <<<"$usage") <(options <<<"${TABLE[$command]}") | tr '\n' ' ')
    extra=$(comm -13 <(options <<<"$usage") <(options <<<"${TABLE[$command]}") | tr '\n' ' ')
    [[ -z $missing ]] || die "README.md's Commands table: \`$name $command\` lacks ${missing}(its --help: $usage)"
    [[ -z $extra ]] || die "README.md's Commands table: \`$name $command\` has ${extra}which its --help does not list ($usage)"
    unset "TABLE[$command]"
  done
  for command in "${!TABLE[@]}"; do die "README.md's Commands table has \`$name $command\`, which $bin --help does not list"; done
  echo "commands table ok: ${#COMMANDS[@]} $name commands match their --help"
}
check_table storekeeper "$BIN"
check_table storekeeper-bench "$BENCH_BIN"

# ---- A fresh server.
for port in 8080 8090; do
  for host in 127.0.0.1 ::1; do
    port_busy "$host" "$port" && die "port $port is busy ($host): the walkthrough needs 8080 and 8090; stop what listens there"
  done
done
WORK=$(mktemp -d "${TMPDIR:-/tmp}/storekeeper-walkthrough.XXXXXX") || die "mktemp failed"
(cd "$WORK" && exec "$BIN" serve --simulator) >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
deadline=$((SECONDS + START_TIMEOUT))
until curl -sf -o /dev/null localhost:8080/healthz && curl -sf -o /dev/null localhost:8090/sim/health; do
  kill -0 "$SERVER_PID" 2>/dev/null || die "storekeeper serve --simulator exited at start"
  ((SECONDS < deadline)) || die "the server did not answer /healthz within ${START_TIMEOUT}s"
  sleep 0.2
done
# One version: what the binary says and what the server it runs answers.
version=$("$BIN" --version 2>&1)
served=$(curl -sf localhost:8080/healthz | python3 -c 'import json, sys; print(json.load(sys.stdin).get("version", ""))')
[[ -n $version && $version == "$served" ]] || die "storekeeper --version says '$version', /healthz says '$served'"
echo "version ok: $version"

# ---- One bash session for every step, like a terminal the walkthrough is pasted into.
# The build directory on PATH, as the README asks (storekeeperkit-example, built beside
# storekeeper-bench), behind the storekeeper binary under test.
coproc SESSION { cd "$WORK" && PATH="$(dirname "$BIN"):$(dirname "$BENCH_BIN"):$PATH" exec bash 2>&1; }
MARK="__walkthrough_step_done_$$_"
RUNS=0
OUT=

# Runs text in the session; OUT gets what it printed. Fails when the session is silent too long.
run_in_session() {
  local text=$1 id line rc deadline
  RUNS=$((RUNS + 1))
  id=$MARK$RUNS
  deadline=$((SECONDS + STEP_TIMEOUT))
  [[ -n ${SESSION[1]:-} ]] || return 2
  printf '%s\nprintf "\\n%s\\n"\n' "$text" "$id" >&"${SESSION[1]}" || return 2
  OUT=
  while :; do
    local left=$((deadline - SECONDS))
    ((left > 0)) || return 1
    [[ -n ${SESSION[0]:-} ]] || return 2
    IFS= read -r -t "$left" -u "${SESSION[0]}" line
    rc=$?
    if ((rc > 128)); then OUT+=$line; return 1; fi
    ((rc == 0)) || return 2
    [[ $line == "$id" ]] && break
    OUT+=$line$'\n'
  done
  OUT=$(sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' <<<"$OUT") # without trailing blank lines
}

# First unmatched expectation of step n in OUT (empty when all hold).
mismatch() {
  local n=$1 p
  while IFS= read -r p; do
    [[ -z $p ]] && continue
    grep -qE -- "$p" <<<"$OUT" || { printf 'expected /%s/ in its output' "$p"; return; }
  done <<<"${EXPECT[$n]:-}"
  while IFS= read -r p; do
    [[ -z $p ]] && continue
    grep -qE -- "$p" <<<"$OUT" && { printf 'did not expect /%s/ in its output' "$p"; return; }
  done <<<"${REFUSE[$n]:-}"
}

fail_step() {
  local n=$1 why=$2
  say "walkthrough: step $n FAILED: $why"
  say "--- step $n as written in README.md:"
  # shellcheck disable=SC2001 # every line
  sed 's/^/    $ /' <<<"${STEP[$n]%$'\n'}" >&2
  say "--- its output:"
  show "$OUT"
  die "step $n (${TITLE[$n]})"
}

run_in_session "${STEP[0]:-}" || die "the variables before step 1 did not run"
[[ -z $OUT ]] || { say "$OUT"; die "the lines before step 1 printed something"; }

for n in "${ORDER[@]}"; do
  began=$SECONDS
  tries=0
  while :; do
    tries=$((tries + 1))
    run_in_session "${STEP[$n]}"
    case $? in
      1) fail_step "$n" "no end after ${STEP_TIMEOUT}s" ;;
      2) fail_step "$n" "the bash session ended" ;;
    esac
    why=$(mismatch "$n")
    [[ -z $why ]] && break
    if [[ -n ${POLLED[$n]:-} ]] && ((SECONDS - began < POLL_DEADLINE)); then
      sleep 1
      continue
    fi
    [[ -n ${POLLED[$n]:-} ]] && why="$why (re-run $tries times over $((SECONDS - began))s)"
    fail_step "$n" "$why"
  done
  extra=
  ((tries > 1)) && extra=", matched on run $tries"
  echo "step $n ok ($((SECONDS - began))s$extra): ${TITLE[$n]}"
  [[ -n ${WALKTHROUGH_VERBOSE:-} ]] && show "$OUT" 2>&1
done

kill -0 "$SERVER_PID" 2>/dev/null || die "the server exited during the walkthrough"
echo "walkthrough: ${#ORDER[@]} steps of README.md passed against $(basename "$BIN") serve --simulator in $((SECONDS - STARTED))s"
