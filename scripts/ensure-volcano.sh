#!/usr/bin/env bash
# Builds Volcano's scheduler (vc-scheduler, volcano.sh/volcano/cmd/scheduler
# v1.10.0) from the Go module proxy through the wrapper module e2e/deps/volcano
# (which repeats Volcano's own replace pins, k8s.io v0.30.2), and copies the
# CRDs its scheduler watches (Queue, PodGroup, Numatopology; from the module's
# installer/helm/chart/volcano/crd/bases) next to it. The cache is
#   ${GPUSIM_E2E_CACHE:-$HOME/.cache/gpusim-e2e}/volcano-<key>/{bin,crds}
# where <key> is the first 16 hex digits of the SHA-256 of the Go version line
# and the wrapper module's go.mod and go.sum. Idempotent: a complete cache
# entry is reused. Prints the cache directory on its last line.
# --print-dir prints that directory without building anything.
set -euo pipefail
cd "$(dirname "$0")/.."
dep=e2e/deps/volcano
key=$({ echo "$(go env GOVERSION)"; for f in "$dep/go.mod" "$dep/go.sum"; do echo "== $f"; cat "$f"; done; } | sha256sum | cut -c1-16)
root="${GPUSIM_E2E_CACHE:-$HOME/.cache/gpusim-e2e}/volcano-$key"
if [ "${1:-}" = "--print-dir" ]; then echo "$root"; exit 0; fi
if [ -f "$root/complete" ]; then echo "$root"; exit 0; fi

mkdir -p "$root"
tmp=$(mktemp -d "$root/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/crds"
start=$(date +%s)
ver=$(sed -n 's/^require volcano.sh\/volcano \(v[0-9.]*\)$/\1/p' "$dep/go.mod")
[ -n "$ver" ] || { echo "ensure-volcano: no volcano.sh/volcano version in $dep/go.mod" >&2; exit 1; }
echo "ensure-volcano: building vc-scheduler $ver ($dep; 10-20 min on 2 cores)" >&2
go build -C "$dep" -trimpath -o "$tmp/bin/vc-scheduler" volcano.sh/volcano/cmd/scheduler
vdir=$(go mod download -json "volcano.sh/volcano@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$vdir" ] || { echo "ensure-volcano: go mod download volcano.sh/volcano@$ver gave no directory" >&2; exit 1; }
for c in scheduling.volcano.sh_queues.yaml scheduling.volcano.sh_podgroups.yaml nodeinfo.volcano.sh_numatopologies.yaml; do
	cp "$vdir/installer/helm/chart/volcano/crd/bases/$c" "$tmp/crds/"
done
echo "$ver" > "$tmp/version"
rm -rf "$root/bin" "$root/crds"
mv "$tmp/bin" "$tmp/crds" "$tmp/version" "$root/"
echo "built in $(( $(date +%s) - start ))s with $(go env GOVERSION)" > "$root/complete"
echo "ensure-volcano: cached in $root ($(cat "$root/complete"))" >&2
echo "$root"
