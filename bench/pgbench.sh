#!/usr/bin/env bash
# Runs a pgbench anchor against a fresh schema with hookinbox's tables (and billing's):
# the database's own limit for the SQL hookinbox sends, to compare with hookinbox's
# figures (docs/BENCHMARKS.md).
#
#   ./bench/pgbench.sh [CLIENTS] [SECONDS] [SCRIPT]     (defaults: 2 clients, 10 s, receive_sync)
#
# SCRIPT is one of bench/*.pgbench:
#   receive_sync  a sync receipt and the test handler's one insert, beside
#                 `go test -bench Receive` (bench_test.go)
#   accept        one async accept, the anchor of `hookinbox bench --mode accept`
#   sync          the billing handler's sync transaction, the anchor of
#                 `hookinbox bench --mode sync`
# `hookinbox bench` runs accept and sync itself, beside its own figures; this script
# runs one alone. TEST_DATABASE_URL names the server (default
# postgres://postgres@127.0.0.1:5432/test).
set -euo pipefail
cd "$(dirname "$0")/.."
clients=${1:-2} seconds=${2:-10} script=${3:-receive_sync}
url=${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test}
schema=hookinbox_pgbench_sh_$$
file=bench/$script.pgbench
[[ -f $file ]] || { echo "pgbench.sh: no script $file (want receive_sync, accept or sync)" >&2; exit 2; }

psql -q -v ON_ERROR_STOP=1 "$url" -c "CREATE SCHEMA $schema"
trap 'PGOPTIONS="-c client_min_messages=warning" psql -q "$url" -c "DROP SCHEMA IF EXISTS $schema CASCADE"' EXIT
export PGOPTIONS="-c search_path=$schema"
for f in driver/pgxdriver/migrations/*.sql examples/billing/migrations/postgres/*.sql; do
  psql -q -v ON_ERROR_STOP=1 "$url" -f "$f"
done
psql -q -v ON_ERROR_STOP=1 "$url" \
  -c "CREATE TABLE test_effects (id bigint GENERATED ALWAYS AS IDENTITY, event_id text NOT NULL)"

# The JSON accept and sync bind, as hookinbox bench binds it: a Stripe invoice.paid
# event in send's template, and billing's InvoicePaymentBooked message.
payload='{"api_version":"2024-06-20","created":1796104754,"data":{"object":{"amount_due":1000,"amount_paid":1000,"currency":"usd","customer":"cus_hookinbox_bench","id":"in_pgb_0_1","livemode":false,"object":"invoice","status":"paid"}},"id":"evt_pgb_0_1","livemode":false,"object":"event","pending_webhooks":1,"request":{"id":null,"idempotency_key":null},"type":"invoice.paid"}'
message='{"amount":1000,"currency":"usd","customer_id":"cus_hookinbox_bench","invoice_id":"in_pgb_0_1","ledger_entry_id":1}'
pgbench -n -M prepared -c "$clients" -j "$clients" -T "$seconds" \
  -D seq=0 -D "payload=$payload" -D "message=$message" \
  -f "$file" "$url" | grep -E 'clients|latency average|tps'
