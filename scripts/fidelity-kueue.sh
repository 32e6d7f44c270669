#!/usr/bin/env bash
# Records the real Kueue controller on the Kueue fidelity fixtures
# (docs/fidelity.md): builds or reuses kube-apiserver and etcd
# (scripts/ensure-e2e-deps.sh) and the Kueue manager of $KUEUE_VERSION
# (scripts/ensure-kueue.sh), then runs the recorder (internal/kueuefid/record)
# with that version's CRDs (config/components/crd/bases) and webhooks
# (config/components/webhook/manifests.yaml) from its module, on each fixture
# directory given, or on all of the version's set:
#   KUEUE_VERSION=v0.17.0 (default)  e2e/deps/kueue          policies/kueue/testdata/fidelity/
#   KUEUE_VERSION=v0.16.2            e2e/deps/kueue-v0.16.2  policies/kueue/testdata/fidelity-v0.16.2/
# It rewrites each fixture's recorded.csv, recorded.meta, cycles.csv and seen.csv
# (the manager's cycle starts and seen finishes, from its log). Needs root (the
# manager runs in a private mount namespace; see the recorder). Real time:
# about 1 to 2 minutes per fixture at SCALE=1 (real seconds per simulated
# second). KEEP=1 keeps each run's temporary directory and logs.
set -euo pipefail
cd "$(dirname "$0")/.."
want=${KUEUE_VERSION:-v0.17.0}
if [ "$want" = v0.17.0 ]; then
	dep=e2e/deps/kueue set=policies/kueue/testdata/fidelity
else
	dep=e2e/deps/kueue-$want set=policies/kueue/testdata/fidelity-$want
fi
[ -f "$dep/go.mod" ] || { echo "fidelity-kueue: KUEUE_VERSION=$want has no wrapper module $dep" >&2; exit 1; }
kver=$(sed -n 's/^require sigs.k8s.io\/kueue \(v[0-9.]*\)$/\1/p' "$dep/go.mod")
[ "$kver" = "$want" ] || { echo "fidelity-kueue: $dep/go.mod pins sigs.k8s.io/kueue '$kver', not $want" >&2; exit 1; }
bin=$(scripts/ensure-e2e-deps.sh | tail -n1)
mgr=$(KUEUE_DEP=$dep scripts/ensure-kueue.sh | tail -n1)
kdir=$(cd "$dep" && go mod download -json "sigs.k8s.io/kueue@$kver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -n "$kdir" ] || { echo "fidelity-kueue: go mod download sigs.k8s.io/kueue@$kver gave no directory" >&2; exit 1; }
if [ $# -eq 0 ]; then set -- "$set"/*/; fi
keep=()
[ "${KEEP:-}" = 1 ] && keep=(-keep)
go run ./internal/kueuefid/record -bin "$bin" -manager "$mgr" \
	-crds "$kdir/config/components/crd/bases" \
	-webhooks "$kdir/config/components/webhook/manifests.yaml" -kueue-version "$kver" \
	-scale "${SCALE:-1}" "${keep[@]}" "$@"
