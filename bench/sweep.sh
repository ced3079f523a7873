#!/usr/bin/env bash
# Runs `hookinbox bench` over a range of concurrencies for accept, sync and drain, each
# accept and sync point beside pgbench on the same SQL in the same run; forward over
# senders (delivered beside accepted, 10,000 events a point, an HTTP sink) and mixed
# over workers (processed while accepting beside the sync endpoint, 32 senders).
# Writes the JSON reports to bench/results/<name>.json and plots them to
# docs/benchmarks-<name>.svg (bench/plot).
#
#   ./bench/sweep.sh [NAME] [SECONDS] [PARTS]
#
# Defaults: the date, 5 s a point, PARTS "accept sync drain" (add forward and mixed,
# or name any of the five).
#
# ACCEPT_SENDERS (default "1 4 16 32 64 128 256") and SYNC_SENDERS (default
# "1 2 4 8 16 32") are the points of accept and sync. The naive receiver, bench's
# second anchor for both, opens a connection per sender: on a server with
# max_connections=100 keep them at 64 or below.
#
# DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable) is
# where bench creates and drops its schemas. Each report records the server's
# settings (fsync, synchronous_commit, autovacuum) and the machine's load.
set -euo pipefail
cd "$(dirname "$0")/.."
name=${1:-$(date +%Y-%m-%d)} seconds=${2:-5} parts=" ${3:-accept sync drain} "
url=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/test?sslmode=disable}
out=bench/results/$name.json
mkdir -p bench/results
: > "$out"
go build -o /tmp/hookinbox-sweep ./cmd/hookinbox
run() { /tmp/hookinbox-sweep bench --database-url "$url" --json "$@" >> "$out"; }
part() { [[ $parts == *" $1 "* ]]; }
if part accept; then for c in ${ACCEPT_SENDERS:-1 4 16 32 64 128 256}; do run --mode accept --concurrency "$c" --duration "${seconds}s"; echo "accept $c" >&2; done; fi
if part sync; then for c in ${SYNC_SENDERS:-1 2 4 8 16 32}; do run --mode sync --concurrency "$c" --duration "${seconds}s"; echo "sync $c" >&2; done; fi
if part drain; then for w in 1 4 8 16 32; do run --mode drain --backlog receive --count 20000 --workers "$w"; echo "drain $w" >&2; done; fi
if part forward; then for c in 1 4 16 32 64; do run --mode forward --count 10000 --concurrency "$c"; echo "forward $c" >&2; done; fi
if part mixed; then for w in 1 2 4 8 16 32 64; do run --mode mixed --concurrency 32 --workers "$w" --duration "${seconds}s"; echo "mixed $w" >&2; done; fi
go run ./bench/plot "$out" > "docs/benchmarks-$name.svg"
echo "wrote $out and docs/benchmarks-$name.svg" >&2
