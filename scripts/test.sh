#!/usr/bin/env bash
# Runs hookinbox's whole test suite against a real PostgreSQL, under the race detector.
#
#   ./scripts/test.sh            # every package
#   ./scripts/test.sh -run Seed  # extra flags go to `go test`
#
# PostgreSQL: TEST_DATABASE_URL if set, else the local server on 127.0.0.1:5432
# (database "test"). If that server is down, the script starts the machine's cluster;
# failing that, it starts a private throw-away instance with the installed binaries
# on 127.0.0.1:15432 (HOOKINBOX_PRIVATE_PG=1 forces that). It never mocks the database.
set -euo pipefail
cd "$(dirname "$0")/.."

pg_up() { pg_isready -q -h "$1" -p "$2" -t 3 2>/dev/null; }

start_private_postgres() {
  # Below the ephemeral range, so a client socket can never hold the port.
  local bindir port=15432 dir=/tmp/hookinbox-test-pg
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
    echo "PostgreSQL is not reachable on 127.0.0.1:5432 and no server binaries are installed." >&2
    echo "Install them (Debian: apt-get install postgresql) or set TEST_DATABASE_URL to a server" >&2
    echo "where this user may create schemas, e.g. postgres://user@host:5432/db." >&2
    exit 1
  fi
  if ! pg_up 127.0.0.1 "$port"; then
    echo "starting a private PostgreSQL on 127.0.0.1:$port ($dir)" >&2
    local as=()
    # initdb and postgres refuse to run as root.
    if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi
    rm -rf "$dir" && mkdir -p "$dir" && { [ "$(id -u)" != 0 ] || chown postgres "$dir"; }
    "${as[@]}" "$bindir/initdb" -D "$dir/data" -U postgres --auth=trust >/dev/null
    "${as[@]}" "$bindir/pg_ctl" -D "$dir/data" -l "$dir/log" -w \
      -o "-h 127.0.0.1 -p $port -k $dir -c max_connections=200 -c fsync=off" start >/dev/null
    psql -h 127.0.0.1 -p "$port" -U postgres -qc 'CREATE DATABASE test' postgres
  fi
  export TEST_DATABASE_URL="postgres://postgres@127.0.0.1:$port/test?sslmode=disable"
}

if [ -n "${HOOKINBOX_PRIVATE_PG:-}" ]; then
  start_private_postgres # forced: how a machine without a local server runs
elif [ -z "${TEST_DATABASE_URL:-}" ]; then
  if ! pg_up 127.0.0.1 5432 && command -v pg_ctlcluster >/dev/null; then
    for v in $(ls /etc/postgresql 2>/dev/null); do
      pg_ctlcluster --skip-systemctl-redirect "$v" main start 2>/dev/null || true
    done
  fi
  if pg_up 127.0.0.1 5432; then
    psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" postgres | grep -q 1 \
      || psql -h 127.0.0.1 -U postgres -qc 'CREATE DATABASE test' postgres
  else
    start_private_postgres
  fi
fi

# stripe-mock, the Stripe API the backfill and reconcile tests run against, from the
# Go module proxy (its tests skip, saying this command, where it cannot be installed).
if ! command -v stripe-mock >/dev/null && [ ! -x "$(go env GOPATH)/bin/stripe-mock" ]; then
  go install github.com/stripe/stripe-mock@v0.203.0 || echo "stripe-mock not installed: its tests will skip" >&2
fi
# The console's browser test needs Chromium; it skips, saying so, without one.
if [ "$(id -u)" = 0 ] && ! command -v chromium >/dev/null && command -v apt-get >/dev/null; then
  echo "installing chromium for the console's browser test" >&2
  apt-get install -y chromium >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y chromium >/dev/null 2>&1; } \
    || echo "could not install chromium: the browser test will be skipped" >&2
fi

# NATS JetStream for the forward and outbox tests: the machine's on 127.0.0.1:4222, else
# a nats-server binary that internal/testnats starts.
if ! command -v nats-server >/dev/null && [ ! -x "$(go env GOPATH)/bin/nats-server" ]; then
  go install github.com/nats-io/nats-server/v2@v2.15.3 || echo "nats-server not installed: the NATS tests need 127.0.0.1:4222" >&2
fi

# Every module of go.work: the library, backfill and the binary.
go vet github.com/hookinbox/hookinbox/...
go test -race -count=1 "$@" github.com/hookinbox/hookinbox/...
