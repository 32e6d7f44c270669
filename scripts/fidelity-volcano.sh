#!/usr/bin/env bash
# Records the real Volcano scheduler (vc-scheduler v1.10.0) on the fidelity
# fixtures given as arguments (default: every policies/volcano/testdata/
# fidelity/*/ directory), writing recorded.csv, recorded.meta and
# volcano-scheduler.conf into each (docs/fidelity.md, "Volcano").
# It builds or reuses kube-apiserver + etcd (scripts/ensure-e2e-deps.sh) and
# vc-scheduler (scripts/ensure-volcano.sh), then runs cmd/fidelity-volcano,
# which starts every process in a temporary directory on loopback and stops
# each by its PID. KEEP=1 keeps the temporary directories (logs).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(scripts/ensure-e2e-deps.sh | tail -n1)
vc=$(scripts/ensure-volcano.sh | tail -n1)
if [ $# -eq 0 ]; then set -- policies/volcano/testdata/fidelity/*/; fi
keep=()
if [ "${KEEP:-}" = 1 ]; then keep=(-keep); fi
go run ./cmd/fidelity-volcano -bin "$bin" -volcano "$vc" "${keep[@]}" "$@"
