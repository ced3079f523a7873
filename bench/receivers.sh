#!/usr/bin/env bash
# Async accepts through 1, 2 and 3 receiver processes (serve --role receivers) on one
# PostgreSQL, 48 senders in all, split evenly: one `hookinbox bench --url` per
# receiver, run at once, their rates added. The figures in docs/SCALING.md.
#
#   ./bench/receivers.sh [SECONDS]      (default 6 s a point)
#
# DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable) is
# where it creates, and drops after, the schema hookinbox_receivers_bench.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-6}
db=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
schema=hookinbox_receivers_bench
bin=$(mktemp -d)/hookinbox
go build -o "$bin" ./cmd/hookinbox
work=$(dirname "$bin")
psql -q "$db" -c "DROP SCHEMA IF EXISTS $schema CASCADE" -c "CREATE SCHEMA $schema"
trap 'PGOPTIONS="-c client_min_messages=warning" psql -q "$db" -c "DROP SCHEMA IF EXISTS $schema CASCADE"; rm -rf "$work"' EXIT
export RECEIVERS_BENCH_SECRET="whsec_receivers_$RANDOM$RANDOM"
sep='?'; [[ $db == *\?* ]] && sep='&'
cat > "$work/hookinbox.yaml" <<YAML
database_url: "$db${sep}search_path=$schema"
endpoints:
  - {name: inbound, path: /webhooks/stripe, provider: stripe, secrets_env: [RECEIVERS_BENCH_SECRET], mode: async, handler: billing}
roles: [receivers]
YAML
"$bin" migrate --config "$work/hookinbox.yaml" >/dev/null
for n in 1 2 3; do
  servers=()
  for k in $(seq 1 "$n"); do
    "$bin" serve --config "$work/hookinbox.yaml" --listen "127.0.0.1:1809$k" --log-level error >"$work/serve-$k.log" 2>&1 &
    servers+=($!)
  done
  for k in $(seq 1 "$n"); do
    until curl -sf "http://127.0.0.1:1809$k/healthz" >/dev/null; do sleep 0.1; done
  done
  senders=()
  for k in $(seq 1 "$n"); do
    "$bin" bench --url "http://127.0.0.1:1809$k/webhooks/stripe" --mode accept --secret-env RECEIVERS_BENCH_SECRET \
      --concurrency $((48 / n)) --duration "${seconds}s" --json >"$work/bench-$n-$k.json" 2>/dev/null &
    senders+=($!)
  done
  wait "${senders[@]}"
  kill "${servers[@]}"
  wait "${servers[@]}" 2>/dev/null || true
  python3 - "$work" "$n" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
runs = [json.load(open(f"{work}/bench-{n}-{k}.json")) for k in range(1, n + 1)]
print(f"{n} receiver(s), 48 senders: {sum(r['rate'] for r in runs):,.0f} accepts/s, p99 {max(r['latency_ms']['p99'] for r in runs):.1f} ms")
PY
done
