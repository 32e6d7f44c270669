package kube

import (
	"fmt"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpusim/gpusim/policies"
	_ "github.com/gpusim/gpusim/scenarios" // registers every policy
	"github.com/gpusim/gpusim/sim"
)

type nopBackend struct{ started int }

func (b *nopBackend) Start(*sim.Job) error    { b.started++; return nil }
func (b *nopBackend) Stop(*sim.Preempt) error { return nil }

const kueueInline = `inline: |
  apiVersion: kueue.x-k8s.io/v1beta1
  kind: ResourceFlavor
  metadata: {name: f}
  ---
  apiVersion: kueue.x-k8s.io/v1beta1
  kind: ClusterQueue
  metadata: {name: cq}
  spec:
    namespaceSelector: {}
    resourceGroups:
    - coveredResources: ["nvidia.com/gpu"]
      flavors:
      - name: f
        resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
  ---
  apiVersion: kueue.x-k8s.io/v1beta1
  kind: LocalQueue
  metadata: {namespace: default, name: lq}
  spec: {clusterQueue: cq}
`

// TestLiveSubmitGrowth: every policy in GrowingPolicies schedules jobs
// submitted one by one after its first call (sim.Live.Submit), as the
// Kubernetes backend submits pods it observes; and Run refuses the others.
func TestLiveSubmitGrowth(t *testing.T) {
	for _, name := range GrowingPolicies {
		var params *yaml.Node
		if name == "kueue" {
			var n yaml.Node
			if err := yaml.Unmarshal([]byte(kueueInline), &n); err != nil {
				t.Fatal(err)
			}
			params = n.Content[0]
		}
		p, err := policies.New(name, params)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cl, err := sim.NewCluster([]sim.NodeSpec{{Name: "n", GPUModel: "H100", GPUs: 8, CPUMilli: 64000, MemoryMiB: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		b := &nopBackend{}
		l, err := sim.NewLive(sim.Config{Cluster: cl, Policy: p}, b, 20, sim.Seconds(1))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 12; i++ {
			if err := l.Advance(sim.Time(sim.Seconds(float64(10*i))), nil); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			spec := sim.JobSpec{ID: sim.JobID(fmt.Sprint("j", i)), Replicas: 1, GPUsPerReplica: 4, GPUMilli: sim.WholeGPU, Duration: sim.Seconds(100), Queue: "lq"}
			if _, err := l.Submit(spec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := l.Schedule(false); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// End the running jobs so that later submissions start too.
			var ends []sim.Ended
			for _, j := range l.View().Running() {
				ends = append(ends, sim.Ended{Job: j.Ref})
			}
			if err := l.Advance(l.Now()+1, ends); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if b.started != 12 {
			t.Errorf("%s: %d of 12 submitted jobs started", name, b.started)
		}
	}
	p, err := policies.New("tiresias", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newScheduler(Options{Client: fake.NewClientset(), Config: sim.Config{Policy: p}}); err == nil || !strings.Contains(err.Error(), "does not yet accept") {
		t.Errorf("tiresias: %v", err)
	}
	if _, err := newScheduler(Options{Client: fake.NewClientset(), Config: sim.Config{Policy: mustPolicy(t, "fifo")}, DryRun: true, Shadow: true}); err == nil {
		t.Error("dry run and shadow together accepted")
	}
}
