package k8smanifest

import (
	"fmt"
	"strings"
	"testing"
)

// benchManifests returns n PyTorchJobs (Master + 7 Workers, 1 GPU each) in
// one multi-document file, each with its schedule annotations.
func benchManifests(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: job-%d
  labels: {kueue.x-k8s.io/queue-name: q%d}
  annotations: {gpusim.io/submit-time: "%d", gpusim.io/duration: "3600"}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:2.3.0
              resources: {requests: {cpu: "6", memory: 48Gi}, limits: {nvidia.com/gpu: 1}}
    Worker:
      replicas: 7
      template:
        spec:
          containers:
            - name: pytorch
              image: pytorch/pytorch:2.3.0
              resources: {requests: {cpu: "6", memory: 48Gi}, limits: {nvidia.com/gpu: 1}}
`, i, i%8, i*60)
	}
	return []byte(b.String())
}

// BenchmarkParse translates 1,000 PyTorchJobs (about 24 lines each).
// Run: go test ./traces/k8smanifest -run '^$' -bench Parse -benchmem
func BenchmarkParse(b *testing.B) {
	const n = 1000
	data := benchManifests(n)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Parse([]File{{Name: "bench.yaml", Data: data}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Jobs) != n {
			b.Fatalf("%d jobs", len(r.Jobs))
		}
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}
