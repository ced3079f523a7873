#!/usr/bin/env bash
# Checks and unit-tests the shipped Prometheus alerting rules with promtool
# (Debian's prometheus package, installed here when this runs as root on a machine
# with apt-get and promtool is missing):
#
#   ./scripts/alerts-test.sh
#
# The rules' metric names are checked against a live scrape of serve's /metrics by
# TestDeploy_AlertsAndDashboardUseOnlyExportedMetrics (go test ./cmd/hookinbox).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v promtool >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing promtool (Debian's prometheus package)" >&2
    apt-get install -y prometheus >/dev/null 2>&1 \
      || { apt-get update >/dev/null 2>&1 && apt-get install -y prometheus >/dev/null 2>&1; }
  fi
fi
if ! command -v promtool >/dev/null; then
  echo "promtool not found and not installable here: apt-get install -y prometheus (as root)" >&2
  exit 1
fi
promtool check rules deploy/prometheus/alerts.yaml
promtool test rules deploy/prometheus/alerts_test.yaml
