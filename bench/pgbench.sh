#!/usr/bin/env bash
# Runs bench/receive_sync.pgbench against a fresh schema with hookinbox's tables: the
# database's own limit for the SQL of a sync delivery, to compare with
# `go test -bench Receive` (docs/BENCHMARKS.md).
#
#   ./bench/pgbench.sh [CLIENTS] [SECONDS]     (defaults: 2 clients, 10 s)
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-2} seconds=${2:-10}
url=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
schema=hookinbox_pgbench_sh_$$
psql -q -v ON_ERROR_STOP=1 "$url" -c "CREATE SCHEMA $schema"
trap 'PGOPTIONS="-c client_min_messages=warning" psql -q "$url" -c "DROP SCHEMA IF EXISTS $schema CASCADE"' EXIT
for f in driver/pgxdriver/migrations/*.sql; do
  PGOPTIONS="-c search_path=$schema" psql -q -v ON_ERROR_STOP=1 "$url" -f "$f"
done
PGOPTIONS="-c search_path=$schema" psql -q "$url" \
  -c "CREATE TABLE test_effects (id bigint GENERATED ALWAYS AS IDENTITY, event_id text NOT NULL)"
PGOPTIONS="-c search_path=$schema" pgbench -n -M prepared -c "$clients" -j "$clients" -T "$seconds" \
  -f bench/receive_sync.pgbench "$url" | grep -E 'clients|latency average|tps'
