#!/usr/bin/env bash
# Builds the Kueue manager (sigs.k8s.io/kueue cmd/kueue, the version pinned by
# the wrapper module $KUEUE_DEP, default e2e/deps/kueue (v0.17.0);
# e2e/deps/kueue-v0.16.2 pins v0.16.2) from the Go module proxy into a cache,
# for the Kueue fidelity recorder (docs/fidelity.md, `make fidelity-kueue`).
# The cache is ${GPUSIM_E2E_CACHE:-$HOME/.cache/gpusim-e2e}/kueue-<key>/ where
# <key> is the first 16 hex digits of the SHA-256 of the Go version line and
# the wrapper files' paths and contents less their `// ` comment lines (so a
# comment edit does not orphan a 13-minute build; //go:build lines count).
# The paths and module lines differ per wrapper, so each version has its own
# entry. It is a sibling of scripts/ensure-e2e-deps.sh (which builds
# kube-apiserver and etcd) so that the two caches are keyed independently.
# Idempotent: a complete cache entry is reused. Prints the path of the manager
# binary on its last line. --print prints that path without building.
set -euo pipefail
cd "$(dirname "$0")/.."
dep=${KUEUE_DEP:-e2e/deps/kueue}
[ -f "$dep/go.mod" ] || { echo "ensure-kueue: no wrapper module $dep/go.mod" >&2; exit 1; }
files=("$dep/go.mod" "$dep/go.sum" "$dep/tools.go")
key=$({ echo "$(go env GOVERSION)"; for f in "${files[@]}"; do echo "== $f"; grep -Ev '^//( |$)' "$f"; done; } | sha256sum | cut -c1-16)
root="${GPUSIM_E2E_CACHE:-$HOME/.cache/gpusim-e2e}/kueue-$key"
if [ "${1:-}" = "--print" ]; then echo "$root/bin/kueue-manager"; exit 0; fi
if [ -f "$root/complete" ]; then echo "$root/bin/kueue-manager"; exit 0; fi

mkdir -p "$root"
tmp=$(mktemp -d "$root/tmp.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin"
kver=$(sed -n 's/^require sigs.k8s.io\/kueue \(v[0-9.]*\)$/\1/p' "$dep/go.mod")
[ -n "$kver" ] || { echo "ensure-kueue: no sigs.k8s.io/kueue version in $dep/go.mod" >&2; exit 1; }
start=$(date +%s)
echo "ensure-kueue: building the Kueue $kver manager ($dep; 10-20 min on 2 cores)" >&2
# Stamped as Kueue's own Makefile does (LD_FLAGS, target `build`).
go build -C "$dep" -trimpath -o "$tmp/bin/kueue-manager" \
	-ldflags "-X sigs.k8s.io/kueue/pkg/version.GitVersion=$kver -X sigs.k8s.io/kueue/pkg/version.GitCommit=module-proxy" \
	sigs.k8s.io/kueue/cmd/kueue
rm -rf "$root/bin"
mv "$tmp/bin" "$root/"
echo "$kver built in $(( $(date +%s) - start ))s with $(go env GOVERSION)" > "$root/complete"
echo "ensure-kueue: cached in $root ($(cat "$root/complete"))" >&2
echo "$root/bin/kueue-manager"
