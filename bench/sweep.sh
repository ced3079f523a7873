#!/usr/bin/env bash
# Runs `hookinbox bench` over a range of concurrencies for accept, sync and drain, each
# point beside pgbench on the same SQL in the same run, writes the JSON reports to
# bench/results/<name>.json and plots them to docs/benchmarks-<name>.svg (bench/plot).
#
#   ./bench/sweep.sh [NAME] [SECONDS]       (defaults: the date, 5 s a point)
#
# DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable) is
# where bench creates and drops its schemas. Each report records the server's
# settings (fsync, synchronous_commit, autovacuum) and the machine's load.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-$(date +%Y-%m-%d)} seconds=${2:-5}
url=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
out=bench/results/$name.json
mkdir -p bench/results
: > "$out"
go build -o /tmp/hookinbox-sweep ./cmd/hookinbox
run() { /tmp/hookinbox-sweep bench --database-url "$url" --json "$@" >> "$out"; }
for c in 1 4 16 32 64 128 256; do run --mode accept --concurrency "$c" --duration "${seconds}s"; echo "accept $c" >&2; done
for c in 1 2 4 8 16 32; do run --mode sync --concurrency "$c" --duration "${seconds}s"; echo "sync $c" >&2; done
for w in 1 4 8 16 32; do run --mode drain --backlog receive --count 20000 --workers "$w"; echo "drain $w" >&2; done
go run ./bench/plot "$out" > "docs/benchmarks-$name.svg"
echo "wrote $out and docs/benchmarks-$name.svg" >&2
