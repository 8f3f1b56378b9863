#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests: a fresh cluster in a temp directory, listening only on
# 127.0.0.1 on a free port, trust authentication for the `tokenvault` superuser, fsync on (defaults).
#
#   eval "$(scripts/pg-test-server.sh start)"   # exports TOKENVAULT_PG_URL and TOKENVAULT_PG_DIR
#   npx vitest run test/store-contract/postgres.test.ts test/postgres
#   scripts/pg-test-server.sh restart DIR       # pg_ctl restart (fast shutdown), same port and data
#   scripts/pg-test-server.sh stop              # stops the server and deletes its directory
#
# `start` prints only the `export` lines on stdout (progress goes to stderr). Run as root, the
# server runs as the `postgres` user (or `tokenvault-pg`, created when missing): initdb refuses root.
# Needs the PostgreSQL server binaries (Debian: `apt-get install postgresql`).
set -euo pipefail

log() { echo "pg-test-server: $*" >&2; }

find_bindir() {
  local dir
  for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$dir/postgres" ] && [ -x "$dir/initdb" ]; then
      echo "$dir"
      return 0
    fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(command -v initdb)"
    return 0
  fi
  return 1
}

free_port() {
  node -e '
    const s = require("node:net").createServer()
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })
  '
}

# Runs a command as the server's (non-root) owner.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "$PG_OWNER" -- "$@"
  else
    "$@"
  fi
}

pick_owner() {
  if [ "$(id -u)" -ne 0 ]; then
    PG_OWNER="$(id -un)"
  elif id postgres >/dev/null 2>&1; then
    PG_OWNER=postgres
  else
    id tokenvault-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin tokenvault-pg
    PG_OWNER=tokenvault-pg
  fi
}

start() {
  local bindir dir port
  bindir="$(find_bindir)" || {
    log "no PostgreSQL server binaries found (Debian: apt-get install -y postgresql)"
    exit 1
  }
  pick_owner
  dir="$(mktemp -d "${TMPDIR:-/tmp}/tokenvault-pg.XXXXXX")"
  [ "$(id -u)" -eq 0 ] && chown "$PG_OWNER" "$dir"
  chmod 700 "$dir"
  as_owner "$bindir/initdb" -D "$dir/data" -U tokenvault --auth=trust --encoding=UTF8 --locale=C.UTF-8 \
    >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    exit 1
  }
  # A free port can be taken between probing and binding: retry a few times.
  for _ in 1 2 3 4 5; do
    port="$(free_port)"
    if as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories='$dir'" start >&2; then
      log "listening on 127.0.0.1:$port (data in $dir)"
      echo "export TOKENVAULT_PG_URL=postgres://tokenvault@127.0.0.1:$port/postgres"
      echo "export TOKENVAULT_PG_DIR=$dir"
      return 0
    fi
  done
  cat "$dir/server.log" >&2 || true
  exit 1
}

stop() {
  local dir="${1:-${TOKENVAULT_PG_DIR:-}}"
  if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
    log "nothing to stop (pass the directory or set TOKENVAULT_PG_DIR)"
    return 0
  fi
  local bindir
  bindir="$(find_bindir)"
  pick_owner
  PG_OWNER="$(stat -c %U "$dir/data")"
  as_owner "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
  rm -rf "$dir"
  log "stopped and removed $dir"
}

restart() {
  local dir="${1:-${TOKENVAULT_PG_DIR:-}}"
  if [ -z "$dir" ] || [ ! -d "$dir/data" ]; then
    log "nothing to restart (pass the directory or set TOKENVAULT_PG_DIR)"
    exit 1
  fi
  local bindir
  bindir="$(find_bindir)"
  PG_OWNER="$(stat -c %U "$dir/data")"
  # Without -o, pg_ctl restarts with the options of the previous start (postmaster.opts): same port.
  as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -m fast -w -t 30 restart >&2
  log "restarted $dir"
}

case "${1:-}" in
  start) start ;;
  restart) restart "${2:-}" ;;
  stop) stop "${2:-}" ;;
  *)
    echo "usage: $0 start | restart [DIR] | stop [DIR]" >&2
    exit 2
    ;;
esac
