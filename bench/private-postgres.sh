#!/usr/bin/env bash
# Starts a private, throw-away PostgreSQL with production-like settings for benchmarks
# (autovacuum on, fsync on, synchronous_commit on), from the installed server
# binaries, and prints its URL. The machine's own server may run with autovacuum off
# (a CI setting); a queue must be measured both ways.
#
#   ./bench/private-postgres.sh [PORT] [start|stop]     (defaults: 15433 start)
#
# FSYNC_DELAY_US=N makes each fsync and fdatasync of that server take N µs longer
# (bench/fsyncdelay, an LD_PRELOAD library built here with cc): the commit latency
# of a slower disk, a network volume's, on a machine whose disk is fast. The sleep
# costs no CPU. Measure what a commit then costs with the same library:
#   LD_PRELOAD=/tmp/hookinbox-bench-pg-PORT/fsyncdelay.so FSYNC_DELAY_US=N pg_test_fsync -s 1
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
  preload=()
  if [ "${FSYNC_DELAY_US:-0}" != 0 ]; then
    cc -shared -fPIC -O2 -o "$dir/fsyncdelay.so" "$(dirname "$0")/fsyncdelay/fsyncdelay.c" -ldl
    preload=(env LD_PRELOAD="$dir/fsyncdelay.so" FSYNC_DELAY_US="$FSYNC_DELAY_US")
  fi
  "${as[@]}" "${preload[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
    -o "-h 127.0.0.1 -p $port -k $dir -c max_connections=300 -c autovacuum=on -c fsync=on -c synchronous_commit=on -c shared_buffers=256MB" \
    start >/dev/null
fi
echo "postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
