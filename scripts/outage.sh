#!/usr/bin/env bash
# A database outage under load: starts a private, throw-away PostgreSQL (never the
# shared one), and runs TestOutage_DatabaseStoppedUnderLoad (cmd/hookinbox), which
# serves the built binary on it, sends from eight concurrent senders, stops the
# server with pg_ctl -m immediate for OUTAGE_SECONDS while they keep sending, starts
# it again and checks that every event was processed exactly once (audit triggers
# count every committed application). Then TestHostile_EveryKindWhileTheDatabaseRestarts
# (cmd/hookinbox/internal/server) sends every hostile-client kind while the same
# server is stopped and started again, over and over: answers stay what they are, or
# 503, and nothing is written.
#
#   ./scripts/outage.sh            # 10 s outage (CI)
#   ./scripts/outage.sh --long     # 30 s outage (or OUTAGE_SECONDS=N)
#
# The server listens on 127.0.0.1:$OUTAGE_PG_PORT (default 15621) with fsync and
# synchronous_commit on: an immediate stop is a crash, and what was committed must
# survive it.
set -euo pipefail
cd "$(dirname "$0")/.."

port=${OUTAGE_PG_PORT:-15621}
seconds=${OUTAGE_SECONDS:-10}
if [ "${1:-}" = --long ]; then seconds=30; fi
dir=/tmp/hookinbox-outage-pg-$port

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "no PostgreSQL server binaries installed (Debian: apt-get install postgresql)" >&2
  exit 1
fi
as=""
if [ "$(id -u)" = 0 ]; then as="runuser -u postgres --"; fi # initdb and postgres refuse root
pgctl="$as $bindir/pg_ctl -D $dir/data -l $dir/log"

if pg_isready -q -h 127.0.0.1 -p "$port"; then
  echo "something already listens on 127.0.0.1:$port; set OUTAGE_PG_PORT" >&2
  exit 1
fi
rm -rf "$dir" && mkdir -p "$dir" && { [ "$(id -u)" != 0 ] || chown postgres "$dir"; }
$as "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust >/dev/null
# In the configuration file, not on pg_ctl's command line, so that a plain
# "pg_ctl start" after the stop brings the same server back.
cat >>"$dir/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = 100
fsync = on
synchronous_commit = on
CONF
$pgctl -w start >/dev/null
cleanup() {
  $pgctl -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

export HOOKINBOX_OUTAGE_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"
export HOOKINBOX_OUTAGE_STOP="$pgctl -m immediate -w stop"
export HOOKINBOX_OUTAGE_START="$pgctl -w start"
export HOOKINBOX_OUTAGE_SECONDS=$seconds
go test -race -count=1 -run '^TestOutage_' -v ./cmd/hookinbox
TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable" \
  go test -race -count=1 -run '^TestHostile_EveryKindWhileTheDatabaseRestarts$' -v ./cmd/hookinbox/internal/server
