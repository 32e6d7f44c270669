package kueue_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/gpusim/gpusim/internal/paramfuzz"
	"github.com/gpusim/gpusim/policies/kueue"
)

// manifestErrRE is the location every manifest error starts with: the file
// and a line, or the file alone for a problem of the whole set.
var manifestErrRE = regexp.MustCompile(`^m\.yaml(:\d+)?: `)

// FuzzManifests: any bytes given as Kueue manifests parse or fail without a
// panic, and every problem names the file (and its line).
func FuzzManifests(f *testing.F) {
	files, _ := filepath.Glob("../../examples/kueue/*.yaml")
	if len(files) == 0 {
		f.Fatal("no example manifests")
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\nspec:\n  cohort: c\n  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1x, borrowingLimit: -1}]}]}]\n"))
	f.Add([]byte("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady: {timeout: 5m, requeuingStrategy: {backoffBaseSeconds: x}}\nfairSharing: {preemptionStrategies: [Nope]}\n"))
	// Found by fuzzing: a mapping merging itself overflowed the stack.
	f.Add([]byte("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\nspec: &s {cohort: y, <<: *s}\n"))
	f.Add([]byte("&a {<<: *a}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := kueue.ParseManifests("m.yaml", data)
		if err == nil {
			if m == nil {
				t.Fatal("nil manifests without an error")
			}
			return
		}
		for _, e := range leaves(err) {
			if !manifestErrRE.MatchString(e.Error()) {
				t.Errorf("manifest error without a location: %q", e.Error())
			}
		}
	})
}

// FuzzParams: any kueue params (manifests inline or from the examples) in a
// scenario go through validate without a panic, every error located.
func FuzzParams(f *testing.F) {
	paramfuzz.AddExampleSeeds(f, "../../scenarios/examples", "kueue")
	f.Add([]byte("queueMapping: {default: lq, map: {a: team-a/lq}}\nevictionGracePeriod: 1m\nplacement: best-fit\ninline: |\n  apiVersion: kueue.x-k8s.io/v1beta1\n  kind: ResourceFlavor\n  metadata: {name: f}\n  ---\n  apiVersion: kueue.x-k8s.io/v1beta1\n  kind: ClusterQueue\n  metadata: {name: cq}\n  spec:\n    resourceGroups: [{coveredResources: [nvidia.com/gpu], flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]}]\n  ---\n  apiVersion: kueue.x-k8s.io/v1beta1\n  kind: LocalQueue\n  metadata: {name: lq, namespace: team-a}\n  spec: {clusterQueue: cq}\n"))
	f.Add([]byte("inline: 'kind: Topology'\ntopologyLevelMapping: {x: rack}\ntopologyRequests: [{class: training, required: x}]\npriorityClassByJobClass: {batch: p}\nflavorModels: {f: [H100]}\n"))
	f.Fuzz(func(t *testing.T, params []byte) {
		paramfuzz.Check(t, "kueue", params)
	})
}

func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	if u := errors.Unwrap(err); u != nil {
		if _, ok := u.(interface{ Unwrap() []error }); ok {
			return leaves(u)
		}
	}
	return []error{err}
}
