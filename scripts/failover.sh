#!/usr/bin/env bash
# Primary failover under load: builds a private PostgreSQL primary with a streaming
# standby (pg_basebackup -R), runs cmd/hookinbox's failover test (receivers and
# workers on a multi-host URL with target_session_attrs=read-write; audit triggers on
# the primary count every application), holds the standby's WAL receiver back
# (SIGSTOP) under load, stops the primary in immediate mode, kills the receiver and
# promotes the standby; prints the figures and removes both servers.
#
#   ./scripts/failover.sh          # both, as CI runs them: sync, then async
#   ./scripts/failover.sh sync     # synchronous standby (sync_state = sync, checked
#                                  # before the stop): no acknowledged event may be lost
#   ./scripts/failover.sh async    # the broken variant: an asynchronous standby, whose
#                                  # primary acknowledges while the receiver is held
#                                  # back; the test must count acknowledged events lost
#   HOOKINBOX_FAILOVER_SENDERS=32 ./scripts/failover.sh async   # more load (default 6 senders)
#   ./scripts/failover.sh single   # another broken variant: serve given only the
#                                  # primary's host, which must fail the test (never
#                                  # ready again, never recover)
#
# Ports (override with HOOKINBOX_FAILOVER_PORTS="PRIMARY STANDBY"): 15653 15654.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
  "$0" sync
  exec "$0" async
fi
mode=$1
case "$mode" in sync | async | single) ;; *) echo "usage: $0 [sync|async|single]" >&2; exit 2 ;; esac
read -r p1 p2 <<<"${HOOKINBOX_FAILOVER_PORTS:-15653 15654}"
dir=/tmp/hookinbox-failover-$p1
bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [ -z "$bindir" ] || [ ! -x "$bindir/initdb" ]; then
  echo "no PostgreSQL server binaries installed (Debian: apt-get install postgresql)" >&2
  exit 1
fi
as=()
if [ "$(id -u)" = 0 ]; then as=(runuser -u postgres --); fi # initdb and postgres refuse root
pgctl() { "${as[@]}" "$bindir/pg_ctl" "$@"; }

stop() {
  for d in "$dir/primary" "$dir/standby"; do
    if [ -d "$d" ]; then pgctl -D "$d" -m immediate stop >/dev/null 2>&1 || true; fi
  done
  rm -rf "$dir"
}
stop
trap stop EXIT
mkdir -p "$dir" && { [ "$(id -u)" != 0 ] || chown postgres "$dir"; }

# The primary; fsync stays on: the test kills a server.
"${as[@]}" "$bindir/initdb" -D "$dir/primary" -U postgres --auth=trust >/dev/null
cat >>"$dir/primary/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $p1
unix_socket_directories = '$dir'
max_connections = 100
wal_level = replica
max_wal_senders = 4
synchronous_commit = on
autovacuum = off
CONF
pgctl -D "$dir/primary" -l "$dir/primary.log" -w start >/dev/null
psql -h 127.0.0.1 -p "$p1" -U postgres -qc 'CREATE DATABASE test' postgres

# The standby: a base backup whose -R writes primary_conninfo and standby.signal.
"${as[@]}" "$bindir/pg_basebackup" -h 127.0.0.1 -p "$p1" -U postgres -D "$dir/standby" -R -X stream
cat >>"$dir/standby/postgresql.conf" <<CONF
port = $p2
hot_standby = on
CONF
pgctl -D "$dir/standby" -l "$dir/standby.log" -w start >/dev/null
for _ in $(seq 100); do
  [ "$(psql -h 127.0.0.1 -p "$p1" -U postgres -tAc "SELECT count(*) FROM pg_stat_replication WHERE state = 'streaming'" postgres)" = 1 ] && break
  sleep 0.1
done
# Only now that the standby streams: synchronous_standby_names='*' makes every commit
# wait for the standby's flush (a commit before it streams would wait for ever); async
# leaves it empty. The state the mode needs is checked, and the test checks it again
# right before the stop.
want=async
if [ "$mode" != async ]; then
  want=sync
  psql -h 127.0.0.1 -p "$p1" -U postgres -qc "ALTER SYSTEM SET synchronous_standby_names = '*'" -c 'SELECT pg_reload_conf()' postgres >/dev/null
fi
state=
for _ in $(seq 100); do
  state=$(psql -h 127.0.0.1 -p "$p1" -U postgres -tAc "SELECT sync_state FROM pg_stat_replication WHERE state = 'streaming'" postgres)
  [ "$state" = "$want" ] && break
  sleep 0.1
done
if [ "$state" != "$want" ]; then
  echo "the standby's sync_state is '$state', not '$want': the run would not test what it claims" >&2
  exit 1
fi
psql -h 127.0.0.1 -p "$p1" -U postgres -tAc "SELECT 'standby: ' || application_name || ' ' || state || ' ' || sync_state FROM pg_stat_replication" postgres >&2

receiver="psql -h 127.0.0.1 -p $p2 -U postgres -tAc 'SELECT pid FROM pg_stat_wal_receiver' postgres"
hosts=127.0.0.1:$p1,127.0.0.1:$p2
[ "$mode" != single ] || hosts=127.0.0.1:$p1
export HOOKINBOX_FAILOVER_URL="postgres://postgres@$hosts/test?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
export HOOKINBOX_FAILOVER_PRIMARY_URL="postgres://postgres@127.0.0.1:$p1/test?sslmode=disable"
export HOOKINBOX_FAILOVER_STANDBY_URL="postgres://postgres@127.0.0.1:$p2/test?sslmode=disable"
export HOOKINBOX_FAILOVER_HOLD="kill -STOP \$($receiver)"
export HOOKINBOX_FAILOVER_DROP="kill -KILL \$($receiver)"
export HOOKINBOX_FAILOVER_STOP="${as[*]} $bindir/pg_ctl -D $dir/primary -m immediate -w stop"
export HOOKINBOX_FAILOVER_PROMOTE="${as[*]} $bindir/pg_ctl -D $dir/standby -w promote"
export HOOKINBOX_FAILOVER_SYNC=$([ "$mode" != async ] && echo 1 || echo 0)
export HOOKINBOX_FAILOVER_REPORT=$dir/report.json
if [ "$mode" = single ]; then
  if go test -tags failover -count=1 -run TestFailover ./cmd/hookinbox/ >"$dir/single.log" 2>&1; then
    echo "broken variant: the test passed with only the primary's host in the URL" >&2
    exit 1
  fi
  grep -m1 -E 'timed out after 30 s waiting for (/readyz to answer 200 on the new primary|100 more events)' "$dir/single.log" >&2 || { cat "$dir/single.log" >&2; exit 1; }
  echo "broken variant (only the primary's host): the test failed, as it must"
  exit 0
fi
go test -tags failover -count=1 -v -run TestFailover ./cmd/hookinbox/ 2>&1 | grep -v '^{"time"' || { cat "$dir/report.json" 2>/dev/null; exit 1; }
echo "failover ($mode):" && cat "$dir/report.json"
if [ "$mode" = async ]; then
  lost=$(sed -E 's/.*"acked_lost":([0-9]+).*/\1/' "$dir/report.json")
  if [ "$lost" -eq 0 ]; then
    echo "broken variant (asynchronous standby held back): no acknowledged event was lost; the test could not tell it from a synchronous one" >&2
    exit 1
  fi
  echo "broken variant (asynchronous standby held back): $lost acknowledged events lost, counted, as they must be"
fi
