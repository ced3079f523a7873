#!/usr/bin/env bash
# The chaos harness (cmd/hookinbox/internal/chaos): builds the hookinbox binary, starts a private
# PostgreSQL (initdb into a temporary directory, as the postgres user when run as
# root), and runs every mode — sync, async, hybrid, forward (Stripe and SendGrid
# batches), multi (3 receiver+worker processes and 2 dispatchers on one database) —
# under a provider-like workload while it SIGKILLs, restarts and pauses the servers,
# stops PostgreSQL in immediate mode, injects handler and sink failures, and, through
# proxies of its own between each server and PostgreSQL and before the sink, adds
# latency, blackholes past the leases, resets, COMMIT answers cut after the commit,
# and claims and results that arrive past their lease. It prints a table of checks
# and exits 1 unless every one is 0 and every fault kind asked for happened.
#
# Then the broken variants, each of which the checks must catch (the script fails if
# one passes): synchronous_commit=off with the WAL writer held before each immediate
# stop, caught as lost; a binary built with
# -tags hookinbox_broken_recheck (workers skip the re-check after their lock) and one
# with -tags hookinbox_broken_lease (a mark published without the fence), each
# caught as done twice.
#
#   ./scripts/chaos.sh                     # every mode, default size (CI), then the broken variants
#   ./scripts/chaos.sh --size large        # the run published in docs/RELIABILITY.md, "Chaos"
#   ./scripts/chaos.sh --modes multi --seed 42 --dir /tmp/chaos   # flags go to the harness (--help lists them)
#
# Ports: 15630-15649 (PostgreSQL on 15631, the recording sink on 15632, servers from
# 15633; the proxies take free ports); --port-base moves them. With flags given, the
# broken variants are not run.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/hookinbox" ./cmd/hookinbox
go build -o "$tmp/chaos" ./cmd/hookinbox/internal/chaos/cmd/chaos
"$tmp/chaos" --hookinbox "$tmp/hookinbox" "$@"
if [ $# -eq 0 ]; then
  go build -tags hookinbox_broken_recheck -o "$tmp/hookinbox-broken-recheck" ./cmd/hookinbox
  go build -tags hookinbox_broken_lease -o "$tmp/hookinbox-broken-lease" ./cmd/hookinbox
  # Each variant with the fault that exposes it, and few others: the run stays short
  # and what it counts is the variant's.
  quiet=(--kills 2 --restarts 0 --pauses 0 --latency 0 --blackholes 0 --resets 0 --commit-cuts 0 --late-claims 0 --late-results 0)
  # synchronous_commit=off, the WAL writer held for a second before each of six
  # immediate stops: every commit acknowledged in that second is lost (a stop alone
  # lost only those of the last WAL page, and once none: 2026-12-03). The lost
  # commits take the outbox's ids and fencing tokens back too, so the sink refuses a
  # message's next deliveries as stale until its token passes them again (2 minutes
  # in 3 of 35 runs): the drain is cut short, the lost check needs none.
  "$tmp/chaos" --hookinbox "$tmp/hookinbox" --broken async-commit --modes sync \
    --invoices 100 --spread 12s "${quiet[@]}" --pg-stops 6 --drain 20s
  "$tmp/chaos" --hookinbox "$tmp/hookinbox-broken-recheck" --broken recheck --modes multi \
    --invoices 150 --spread 20s "${quiet[@]}" --pg-stops 0 --late-claims 8
  "$tmp/chaos" --hookinbox "$tmp/hookinbox-broken-lease" --broken lease --modes multi \
    --invoices 150 --spread 20s "${quiet[@]}" --pg-stops 0 --late-results 8
fi
