package volcano_test

import (
	"testing"

	"github.com/gpusim/gpusim/internal/paramfuzz"
)

// FuzzParams: any volcano params (the volcano-scheduler.conf actions and tiers,
// Queue objects, network topology) in a scenario go through validate without a
// panic, every error located.
func FuzzParams(f *testing.F) {
	paramfuzz.AddExampleSeeds(f, "../../scenarios/examples", "volcano")
	f.Add([]byte("actions: enqueue, allocate, preempt, reclaim, backfill\nschedulePeriod: 1s\ntiers:\n  - plugins: [{name: priority}, {name: gang}]\n  - plugins: [{name: drf}, {name: proportion}, {name: binpack, arguments: {binpack.weight: '2', binpack.resources: nvidia.com/gpu, binpack.resources.nvidia.com/gpu: '3'}}, {name: overcommit, arguments: {overcommit-factor: '0.5'}}]\nqueues:\n  - {name: a, weight: 2, capability: {gpu: 8, cpu: '16', memory: 64Gi}, guarantee: {gpu: 4}}\n  - {name: b, reclaimable: false, state: Closed}\nqueueMapping: {team-a/lq: a}\ndefaultQueue: b\nnetworkTopology: {mode: soft, tiers: [leaf, spine], highestTierAllowed: 2, minReplicas: 2}\n"))
	f.Add([]byte("queues: [{name: a, guarantee: {gpu: 100}}]\n"))
	f.Fuzz(func(t *testing.T, params []byte) {
		paramfuzz.Check(t, "volcano", params)
	})
}
