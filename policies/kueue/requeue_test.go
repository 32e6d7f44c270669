package kueue

import (
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

const oneQueue8 = `
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gpu
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: default}
spec: {clusterQueue: q}
`

// requeueBatchPeriod, hand-worked: j0 (4 GPUs, ends at 10.5) and j1 (4 GPUs,
// ends at 10) fill the 8-GPU queue; j2 (8 GPUs, submitted at 1) is
// inadmissible and parked. Without a batch period it is unparked when j1 ends
// (10: still no room) and again when j0 ends: admitted at 10.5. With Kueue's
// 1 s batch, j1's end schedules the tree's requeue for 11; j0's end at 10.5
// joins that pending batch (no new one at 11.5), so j2 is admitted at 11.
func TestRequeueBatchPeriod(t *testing.T) {
	for _, tc := range []struct {
		batch sim.Duration
		want  float64
	}{{0, 10.5}, {sim.Second, 11}} {
		g, b := policies.Dur(0), policies.Dur(tc.batch)
		k, err := New(Params{Inline: oneQueue8, EvictionGracePeriod: &g, RequeueBatchPeriod: &b}, policies.Env{})
		if err != nil {
			t.Fatal(err)
		}
		res := Run(t, Nodes(2, 8), k,
			MakeJob("j0").GPUs(4).Queue("q").Dur(10.5).Obj(),
			MakeJob("j1").GPUs(4).Queue("q").Dur(10).Obj(),
			MakeJob("j2").GPUs(8).Queue("q").At(1).Dur(5).Obj())
		if got := Starts(res)["j2"]; got != tc.want {
			t.Errorf("batch %v: j2 admitted at %v, want %v\n%s", tc.batch, got, tc.want, Schedule(res))
		}
	}
}
