#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium for the report screenshot test
# (internal/cli TestReportInChromium) if it is not installed yet. Idempotent: a
# machine that has chromium does nothing. Needs root and Debian's package
# repositories (as CI has); elsewhere install chromium yourself or let the test skip.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: chromium missing and cannot apt-get install it here (need root on Debian)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
chromium --version
