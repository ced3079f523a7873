#!/usr/bin/env bash
# The chaos harness (cmd/hookinbox/internal/chaos): builds the hookinbox binary, starts a private
# PostgreSQL (initdb into a temporary directory, as the postgres user when run as
# root), and runs every mode — sync, async, hybrid, forward, multi (3 receiver+worker
# processes and 2 dispatchers on one database) — under a provider-like workload while
# it SIGKILLs the servers, stops PostgreSQL in immediate mode and injects handler
# failures and slow handlers. It prints a table of checks and exits 1 unless every
# one is 0. Then it runs the broken variant (synchronous_commit=off), which the checks
# must catch.
#
#   ./scripts/chaos.sh                     # every mode, default size (CI: about 2 minutes), then the broken variant
#   ./scripts/chaos.sh --size large        # the run published in docs/RELIABILITY.md, "Chaos"
#   ./scripts/chaos.sh --modes multi --seed 42 --dir /tmp/chaos   # flags go to the harness (--help lists them)
#
# Ports: 15630-15649 (PostgreSQL on 15631, the recording sink on 15632, servers from
# 15633); --port-base moves them. With flags given, the broken variant is not run.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/hookinbox" ./cmd/hookinbox
go build -o "$tmp/chaos" ./cmd/hookinbox/internal/chaos/cmd/chaos
"$tmp/chaos" --hookinbox "$tmp/hookinbox" "$@"
if [ $# -eq 0 ]; then
  "$tmp/chaos" --hookinbox "$tmp/hookinbox" --broken async-commit --modes sync \
    --invoices 100 --spread 12s --kills 2 --restarts 0 --pauses 0 --pg-stops 6
fi
