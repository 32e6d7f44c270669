#!/usr/bin/env bash
# Installs lp_solve 5.5 for the packer's exact ILP mode (policies/pack, build tag
# lpsolve; docs/packer.md) if it is not installed yet: Debian's liblpsolve55-dev
# (headers, /usr/include/lpsolve) and lp-solve (the shared library,
# /usr/lib/lp_solve/liblpsolve55.so, which the cgo build links dynamically;
# lp_solve is LGPL-2.1). Idempotent: a machine that has both does nothing. Needs
# root and Debian's package repositories (as CI has); elsewhere install them
# yourself, or let `make test` skip the lpsolve-tagged tests.
set -euo pipefail
header=/usr/include/lpsolve/lp_lib.h
lib=/usr/lib/lp_solve/liblpsolve55.so
if [ -f "$header" ] && [ -f "$lib" ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-lpsolve: lp_solve missing and cannot apt-get install it here (need root on Debian)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends liblpsolve55-dev lp-solve >/dev/null
test -f "$header" && test -f "$lib"
echo "ensure-lpsolve: installed lp_solve ($lib)"
