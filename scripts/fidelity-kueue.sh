#!/usr/bin/env bash
# Records the real Kueue controller on the Kueue fidelity fixtures
# (policies/kueue/testdata/fidelity/<name>/, docs/fidelity.md): builds or
# reuses kube-apiserver, etcd and Kueue's CRDs (scripts/ensure-e2e-deps.sh)
# and the Kueue manager (scripts/ensure-kueue.sh), then runs the recorder
# (internal/kueuefid/record) on each fixture directory given, or on all.
# It rewrites each fixture's recorded.csv and recorded.meta. Needs root (the
# manager runs in a private mount namespace; see the recorder). Real time:
# about 1 to 2 minutes per fixture at SCALE=1 (real seconds per simulated
# second). KEEP=1 keeps each run's temporary directory and logs.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(scripts/ensure-e2e-deps.sh | tail -n1)
mgr=$(scripts/ensure-kueue.sh | tail -n1)
kver=$(sed -n 's/^require sigs.k8s.io\/kueue \(v[0-9.]*\)$/\1/p' e2e/deps/kueue/go.mod)
kdir=$(cd e2e/deps/kueue && go mod download -json "sigs.k8s.io/kueue@$kver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$kdir" ] || { echo "fidelity-kueue: go mod download sigs.k8s.io/kueue@$kver gave no directory" >&2; exit 1; }
if [ $# -eq 0 ]; then set -- policies/kueue/testdata/fidelity/*/; fi
keep=()
[ "${KEEP:-}" = 1 ] && keep=(-keep)
go run ./internal/kueuefid/record -bin "$bin" -manager "$mgr" \
	-webhooks "$kdir/config/components/webhook/manifests.yaml" -kueue-version "$kver" \
	-scale "${SCALE:-1}" "${keep[@]}" "$@"
