package scenarios

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
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

// TestMIGPoolEndToEnd again, from Kubernetes Pods asking for mixed-strategy
// MIG instances (nvidia.com/mig-<profile>: 1): the same starts and ends.
func TestK8sMIGPods(t *testing.T) {
	dir := t.TempDir()
	pods := ""
	for _, p := range [][2]string{{"a", "3g.40gb"}, {"b", "2g.20gb"}, {"c", "2g.20gb"}, {"d", "2g.20gb"}} {
		pods += fmt.Sprintf("---\napiVersion: v1\nkind: Pod\nmetadata: {name: %s, annotations: {gpusim.io/duration: \"60\"}}\n"+
			"spec: {containers: [{name: c, resources: {limits: {nvidia.com/mig-%s: 1}}}]}\n", p[0], p[1])
	}
	if err := os.WriteFile(filepath.Join(dir, "pods.yaml"), []byte(pods), 0o644); err != nil {
		t.Fatal(err)
	}
	yml := `apiVersion: gpusim/v1alpha1
kind: Scenario
name: mig-k8s
cluster:
  pools:
    - name: m
      template: dgx-a100
      nodes: 1
      gpus: 1
      sharing: {mode: mig, migProfiles: [3g.40gb, 2g.20gb, 2g.20gb]}
workload:
  trace: {format: k8s, path: .}
policies: [{name: fifo, params: {strict: false}}]
`
	path := filepath.Join(dir, "s.yml.txt")
	if err := os.WriteFile(path, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	sc, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]float64{"a": {0, 140}, "b": {0, 210}, "c": {0, 210}, "d": {210, 420}}
	for _, j := range runs[0].Result.Jobs {
		w := want[string(j.Spec.ID)]
		start, end := j.FirstStart.Seconds(), j.End.Seconds()
		if math.Abs(start-w[0]) > 1e-5 || math.Abs(end-w[1]) > 1e-5 {
			t.Errorf("job %s: start %v end %v, want %v", j.Spec.ID, start, end, w)
		}
	}
	if len(runs[0].Result.Jobs) != 4 {
		t.Fatalf("%d jobs", len(runs[0].Result.Jobs))
	}
}
