package scenarios

import (
	"context"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// The k8s-manifests example, worked by hand. Nodes: a100-0 and h100-0, 8 GPUs
// each. bert (4x1, t=0) and llm-eval (2x2, t=600) take the A100 node until
// 7200 and 3300; resnet (8x1, t=300) fills the H100 node until 5700. At 5700
// llama-pretrain (4x1 H100 only, t=900, priority 10) and sweep-indexed (4x2
// A100|H100, t=1800, priority 1000 from PriorityClass research-high) wait:
// fifo starts llama first (5700) and sweep when the A100 node empties (7200);
// priority starts sweep on the H100 node (5700-6900), then llama (6900).
func TestK8sManifestsExample(t *testing.T) {
	sc, err := Load("examples/k8s-manifests.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[sim.JobID]float64{
		"fifo":     {"nlp/bert-finetune": 0, "resnet50-imagenet": 300, "llm-eval": 600, "llama-pretrain": 5700, "sweep-indexed": 7200},
		"priority": {"nlp/bert-finetune": 0, "resnet50-imagenet": 300, "llm-eval": 600, "llama-pretrain": 6900, "sweep-indexed": 5700},
	}
	for _, r := range runs {
		w, ok := want[r.Label]
		if !ok {
			continue
		}
		for i := range r.Result.Jobs {
			j := &r.Result.Jobs[i]
			if got := j.FirstStart.Seconds(); got != w[j.Spec.ID] {
				t.Errorf("%s: %s started at %gs, want %gs", r.Label, j.Spec.ID, got, w[j.Spec.ID])
			}
		}
		delete(want, r.Label)
	}
	if len(want) != 0 {
		t.Errorf("policies not run: %v", want)
	}
}
