#!/usr/bin/env bash
# Builds the end-to-end test dependencies from the Go module proxy (no Docker,
# no prebuilt binaries) into a cache keyed by the wrapper modules:
#   kube-apiserver  k8s.io/kubernetes/cmd/kube-apiserver (e2e/deps/apiserver)
#   etcd            go.etcd.io/etcd/server/v3            (e2e/deps/etcd)
#   crds/kueue      Kueue's CRDs, config/components/crd/bases of the module
#                   named in e2e/deps/kueue.version
# The cache is ${GPUSIM_E2E_CACHE:-$HOME/.cache/gpusim-e2e}/<key>/ where <key>
# is the first 16 hex digits of the SHA-256 of the Go version line and the
# wrapper files (internal/kubetest.CacheKey computes the same). Idempotent: a
# complete cache entry is reused. Prints the bin directory on its last line.
# --print-dir prints that directory without building anything.
set -euo pipefail
cd "$(dirname "$0")/.."
deps=e2e/deps
files=("$deps/apiserver/go.mod" "$deps/apiserver/go.sum" "$deps/etcd/go.mod" "$deps/etcd/go.sum" "$deps/kueue.version")
key=$({ echo "$(go env GOVERSION)"; for f in "${files[@]}"; do echo "== $f"; cat "$f"; done; } | sha256sum | cut -c1-16)
root="${GPUSIM_E2E_CACHE:-$HOME/.cache/gpusim-e2e}/$key"
if [ "${1:-}" = "--print-dir" ]; then echo "$root/bin"; exit 0; fi
if [ -f "$root/complete" ]; then echo "$root/bin"; exit 0; fi

mkdir -p "$root"
tmp=$(mktemp -d "$root/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/crds/kueue"
start=$(date +%s)
echo "e2e-deps: building etcd ($deps/etcd)" >&2
go build -C "$deps/etcd" -trimpath -o "$tmp/bin/etcd" go.etcd.io/etcd/server/v3
echo "e2e-deps: building kube-apiserver ($deps/apiserver; 10-20 min on 2 cores)" >&2
# The version the API server reports (/version), as the upstream build sets it.
kver=$(sed -n 's/^require k8s.io\/kubernetes \(v[0-9.]*\)$/\1/p' "$deps/apiserver/go.mod")
[ -n "$kver" ] || { echo "e2e-deps: no k8s.io/kubernetes version in $deps/apiserver/go.mod" >&2; exit 1; }
minor=$(echo "$kver" | cut -d. -f2)
go build -C "$deps/apiserver" -trimpath -o "$tmp/bin/kube-apiserver" \
	-ldflags "-X k8s.io/component-base/version.gitVersion=$kver -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean" \
	k8s.io/kubernetes/cmd/kube-apiserver
read -r kmod kqver < "$deps/kueue.version"
kdir=$(go mod download -json "$kmod@$kqver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$kdir" ] || { echo "e2e-deps: go mod download $kmod@$kqver gave no directory" >&2; exit 1; }
cp "$kdir"/config/components/crd/bases/*.yaml "$tmp/crds/kueue/"
"$tmp/bin/etcd" --version >&2
"$tmp/bin/kube-apiserver" --version >&2
rm -rf "$root/bin" "$root/crds"
mv "$tmp/bin" "$tmp/crds" "$root/"
echo "built in $(( $(date +%s) - start ))s with $(go env GOVERSION)" > "$root/complete"
echo "e2e-deps: cached in $root ($(cat "$root/complete"))" >&2
echo "$root/bin"
