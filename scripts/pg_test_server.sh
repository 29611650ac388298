#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests: `start DIR` initialises a cluster in DIR, starts it on a
# Unix socket in DIR (no TCP) and prints the store URL; `stop DIR` stops it and removes DIR.
# As root, the server runs as the `postgres` user (PostgreSQL refuses to run as root).
set -euo pipefail
cmd="$1"; dir="$(realpath -m "$2")"
bin="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)"
[ -x "$bin/pg_ctl" ] || { echo "pg_test_server: PostgreSQL server binaries not found (scripts/setup.sh installs postgresql)" >&2; exit 1; }
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
case "$cmd" in
  start)
    mkdir -p "$dir"
    [ "$(id -u)" -eq 0 ] && chown postgres "$dir"
    as_owner "$bin/initdb" -D "$dir/data" -U joule --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1
    as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off -c max_connections=50" start >/dev/null
    as_owner "$bin/createdb" -h "$dir" -U joule joule_test
    echo "postgresql://joule@/joule_test?host=$dir"
    ;;
  stop)
    if [ -d "$dir/data" ]; then as_owner "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true; fi
    rm -rf "$dir"
    ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
