# Shared by the checks that judge the real binary with tools we did not write
# (scripts/webhooks.sh, scripts/apple-library.sh). Source it after setting `name`.

# One failure line, the closing count, exit 1.
fail() { echo "$name: $*" >&2; echo "$name: 0 passed, 1 failed"; exit 1; }

# ensure_venv VENV PACKAGE VERSION [PACKAGE VERSION]...: a virtualenv holding each PACKAGE at
# exactly its VERSION (pinned, so CI does not change under us); made or upgraded only when it
# does not.
ensure_venv() {
  local venv=$1 package version installed requirements=() stale=false
  shift
  while [ $# -ge 2 ]; do
    package=$1 version=$2
    shift 2
    requirements+=("$package==$version")
    installed=""
    [ -x "$venv/bin/python" ] && installed=$("$venv/bin/python" -m pip show "$package" 2>/dev/null | sed -n 's/^Version: //p' || true)
    [ "$installed" = "$version" ] || stale=true
  done
  if $stale; then
    echo "$name: installing ${requirements[*]} into $venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${requirements[@]}"
  fi
  # scripts/test.sh makes every check's virtualenv while the build starts (PREPARE_ONLY=1), so the
  # downloads and installs are not paid for beside the suite.
  if [ "${PREPARE_ONLY:-0}" = 1 ]; then exit 0; fi
}

# A work directory, and the child processes started (appended to `pids`): both gone on exit.
work=$(mktemp -d "${TMPDIR:-/tmp}/storekeeper-$name.XXXXXX")
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# wait_healthy BASE_URL: until the server started last (the last of `pids`) answers /healthz;
# its log ($work/server.log) is shown if it never does.
wait_healthy() {
  for _ in $(seq 600); do
    kill -0 "${pids[-1]}" 2>/dev/null || { tail -50 "$work/server.log" >&2; fail "the server exited at start"; }
    curl -fsS -o /dev/null "$1/healthz" 2>/dev/null && return 0
    sleep 0.1
  done
  tail -50 "$work/server.log" >&2
  fail "the server did not become healthy"
}
