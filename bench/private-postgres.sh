#!/usr/bin/env bash
# Starts a private, throw-away PostgreSQL with production-like settings for benchmarks
# (autovacuum on, fsync on, synchronous_commit on), from the installed server
# binaries, and prints its URL. The machine's own server may run with autovacuum off
# (a CI setting); a queue must be measured both ways.
#
#   ./bench/private-postgres.sh [PORT] [start|stop]     (defaults: 15433 start)
set -euo pipefail
port=${1:-15433} action=${2:-start}
dir=/tmp/hookinbox-bench-pg-$port
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "no PostgreSQL server binaries installed (Debian: apt-get install postgresql)" >&2
  exit 1
fi
as=()
if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi # initdb and postgres refuse root
if [ "$action" = stop ]; then
  "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -m fast stop >/dev/null
  rm -rf "$dir"
  exit 0
fi
if ! pg_isready -q -h 127.0.0.1 -p "$port"; then
  rm -rf "$dir" && mkdir -p "$dir" && { [ "$(id -u)" != 0 ] || chown postgres "$dir"; }
  "${as[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust >/dev/null
  "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-h 127.0.0.1 -p $port -k $dir -c max_connections=300 -c autovacuum=on -c fsync=on -c synchronous_commit=on -c shared_buffers=256MB" \
    start >/dev/null
fi
echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
