#!/usr/bin/env bash
# Runs the test suite (or a part of it) through PgBouncer in transaction mode, in front
# of a private, throw-away PostgreSQL, then stops both.
#
#   ./scripts/pgbouncer-test.sh                  # the packages below, under -race
#   ./scripts/pgbouncer-test.sh -run Pooler .    # go test arguments replace them
#
# The pools go through PgBouncer (TEST_DATABASE_URL) with default_query_exec_mode=exec;
# schemas and roles are made, and listeners connect, past it (TEST_DIRECT_DATABASE_URL).
# Each test logs in as a role of its own whose search_path is its schema
# (TEST_DATABASE_POOLED=1, see internal/testdb): PgBouncer 1.18 does not pass a
# search_path startup parameter on in transaction mode.
#
# Ports (override with HOOKINBOX_PGBOUNCER_TEST_PORTS="PG BOUNCER"): 15651 15652.
set -euo pipefail
cd "$(dirname "$0")/.."
read -r pg_port bouncer_port <<<"${HOOKINBOX_PGBOUNCER_TEST_PORTS:-15651 15652}"
dir=/tmp/hookinbox-pgbouncer-test-$bouncer_port

# What runs by default: the library, its drivers, the outbox and effect packages and
# billing, i.e. everything that takes its pools from internal/testdb. cmd/hookinbox
# and internal/server build URLs with a search_path themselves.
packages=(. ./driver/... ./outbox ./effect ./examples/billing)
# Tests that need a client connection to be a server session, which a transaction
# pooler is not by design:
skip=(
  TestWake_OtherProcessesWorkersAreWoken         # LISTEN on a pool connection: TestBrokenPooledListener_IsNotWoken shows why
  TestDispatcher_NoTransactionOpenDuringDelivery # sets idle_in_transaction_session_timeout as a startup parameter
)

if ! command -v pgbouncer >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get install -y -q pgbouncer >/dev/null
  else
    echo "pgbouncer is not installed (Debian: apt-get install pgbouncer)" >&2
    exit 1
  fi
fi
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "no PostgreSQL server binaries installed (Debian: apt-get install postgresql)" >&2
  exit 1
fi
as=()
if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi # initdb, postgres and pgbouncer refuse root

stop() {
  if [ -f "$dir/pgbouncer.pid" ]; then kill "$(cat "$dir/pgbouncer.pid")" 2>/dev/null || true; fi
  if [ -d "$dir/data" ]; then "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true; fi
  rm -rf "$dir"
}
stop
trap stop EXIT
mkdir -p "$dir" && { [ "$(id -u)" != 0 ] || chown postgres "$dir"; }
"${as[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust >/dev/null
"${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w \
  -o "-h 127.0.0.1 -p $pg_port -k $dir -c max_connections=300 -c fsync=off -c autovacuum=off" start >/dev/null
psql -h 127.0.0.1 -p "$pg_port" -U postgres -qc 'CREATE DATABASE test' postgres

# Trust, like the server behind it; users unknown to auth_file (every test's role) are
# looked up with auth_query. Idle server sessions of a finished test's role close
# after server_idle_timeout.
cat >"$dir/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$pg_port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
pool_mode = transaction
auth_type = trust
auth_file = $dir/userlist.txt
auth_user = postgres
auth_query = SELECT usename, passwd FROM pg_shadow WHERE usename = \$1
max_client_conn = 2000
default_pool_size = 20
server_idle_timeout = 5
log_connections = 0
log_disconnections = 0
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
INI
echo '"postgres" ""' >"$dir/userlist.txt"
{ [ "$(id -u)" != 0 ] || chown postgres "$dir"/*; }
"${as[@]}" pgbouncer -d "$dir/pgbouncer.ini"
for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p "$bouncer_port" && break; sleep 0.1; done

export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$bouncer_port/test?sslmode=disable&default_query_exec_mode=exec"
export TEST_DIRECT_DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/test?sslmode=disable"
export TEST_DATABASE_POOLED=1
echo "PgBouncer $(pgbouncer --version | head -1 | awk '{print $2}') (transaction mode) on 127.0.0.1:$bouncer_port -> PostgreSQL on 127.0.0.1:$pg_port" >&2
skip_re="^($(IFS='|'; echo "${skip[*]}"))\$"
if [ $# -gt 0 ]; then
  go test -race -count=1 -skip "$skip_re" "$@"
else
  go test -race -count=1 -skip "$skip_re" "${packages[@]}"
fi
