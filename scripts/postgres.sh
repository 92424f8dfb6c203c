#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the test suite and the benchmarks.
#
#   scripts/postgres.sh start   # prints the URL on stdout (export STOREKEEPER_TEST_POSTGRES_URL=...)
#   scripts/postgres.sh stop
#
# The cluster lives in a temporary directory, runs as an unprivileged user (initdb refuses root),
# listens on 127.0.0.1 only, and trusts loopback connections. Nothing outside that directory changes,
# except that when run as root a system user `storekeeper-pg` is created if missing.
set -euo pipefail

state_file="${STOREKEEPER_PG_STATE:-/tmp/storekeeper-pg.state}"

find_bin() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/initdb" ]; then echo "$dir"; return 0; fi
  done
  return 1
}

run_as() {
  if [ "$(id -u)" -eq 0 ]; then
    su -s /bin/sh storekeeper-pg -c "$*"
  else
    sh -c "$*"
  fi
}

start() {
  local bin dir port
  bin=$(find_bin) || { echo "PostgreSQL server binaries not found; install the Debian package 'postgresql'" >&2; exit 1; }
  if [ "$(id -u)" -eq 0 ] && ! id storekeeper-pg >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin storekeeper-pg
  fi
  dir=$(mktemp -d /tmp/storekeeper-pg.XXXXXX)
  chmod 755 "$dir"
  [ "$(id -u)" -eq 0 ] && chown storekeeper-pg "$dir"
  # A free port: ask the kernel for one.
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  run_as "'$bin/initdb' -D '$dir/data' -U postgres --auth=trust --encoding=UTF8 --locale=C.UTF-8 >'$dir/initdb.log' 2>&1" \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  # Tests open many short-lived stores; fsync stays on so the crash tests mean what they say.
  cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 400
shared_buffers = 256MB
CONF
  run_as "'$bin/pg_ctl' -D '$dir/data' -l '$dir/server.log' -w -t 60 start >/dev/null" \
    || { cat "$dir/server.log" >&2; exit 1; }
  printf '%s\n%s\n' "$dir" "$bin" >"$state_file"
  echo "postgres://postgres@127.0.0.1:$port/postgres"
}

stop() {
  [ -f "$state_file" ] || exit 0
  local dir bin
  dir=$(sed -n 1p "$state_file")
  bin=$(sed -n 2p "$state_file")
  run_as "'$bin/pg_ctl' -D '$dir/data' -m fast -w stop >/dev/null" || true
  rm -rf "$dir" "$state_file"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
