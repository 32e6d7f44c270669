package scenarios

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A MIG pool end to end with NVIDIA's real A100-80GB geometry (package sim/mig):
// the layout {3g.40gb, 2g.20gb, 2g.20gb}, which first-fit in that order cannot
// place, is arranged (2g@0, 2g@2, 3g@4); each job takes its profile and runs at
// compute slices / 7, so 60 s of work on a 3g takes 140 s and on a 2g 210 s; a
// fourth job waits for an instance.
func TestMIGPoolEndToEnd(t *testing.T) {
	dir := t.TempDir()
	csv := "id,submit_s,gpus,duration_s,sharing,mig_profile\n" +
		"a,0,1,60,mig,3g.40gb\nb,0,1,60,mig,2g.20gb\nc,0,1,60,mig,2g.20gb\nd,0,1,60,mig,2g.20gb\n"
	if err := os.WriteFile(filepath.Join(dir, "jobs.csv"), []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	yml := `apiVersion: gpusim/v1alpha1
kind: Scenario
name: mig
cluster:
  pools:
    - name: m
      template: dgx-a100
      nodes: 1
      gpus: 1
      sharing: {mode: mig, migProfiles: [3g.40gb, 2g.20gb, 2g.20gb]}
workload:
  trace: {format: native, path: jobs.csv}
policies: [{name: fifo, params: {strict: false}}]
`
	path := filepath.Join(dir, "s.yaml")
	os.WriteFile(path, []byte(yml), 0o644)
	sc, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{})
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
	// An impossible layout is a validation error naming the pool.
	bad := strings.Replace(yml, "[3g.40gb, 2g.20gb, 2g.20gb]", "[3g.40gb, 3g.40gb, 1g.10gb]", 1)
	os.WriteFile(path, []byte(bad), 0o644)
	sc, err = Load(path, nil)
	if err == nil {
		_, err = Run(context.Background(), sc, RunOptions{})
	}
	if err == nil || !strings.Contains(err.Error(), "cluster.pools") {
		t.Fatalf("impossible MIG layout: %v", err)
	}
}

func TestArrangeMIG(t *testing.T) {
	for _, c := range []struct{ model, in, want string }{
		{"A100-SXM-80GB", "3g.40gb,2g.20gb,2g.20gb", "2g.20gb,2g.20gb,3g.40gb"},
		{"A100-SXM-80GB", "2g.20gb,2g.20gb,3g.40gb", "2g.20gb,2g.20gb,3g.40gb"}, // first-fit works: unchanged
		{"H100-SXM-80GB", "3g.40gb,1g.10gb,1g.10gb,2g.20gb", "2g.20gb,1g.10gb,1g.10gb,3g.40gb"},
		{"A100-SXM-80GB", "3g.40gb,3g.40gb,1g.10gb", "3g.40gb,3g.40gb,1g.10gb"}, // impossible: unchanged
		{"T4", "3g.40gb", "3g.40gb"},
	} {
		if got := strings.Join(arrangeMIG(c.model, strings.Split(c.in, ",")), ","); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.model, c.in, got, c.want)
		}
	}
}

// Policies with quotas record each queue's nominal GPUs in summary.json
// (per_queue.<q>.nominal_gpus): the Kueue cohort example gives both LocalQueues'
// ClusterQueues 64 nominal GPUs; fifo has no quotas.
func TestQueueNominalGPUsInSummary(t *testing.T) {
	sc, err := Load("examples/kueue-cohort.yaml", []string{"workload.synthetic.jobs=200"})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if len(r.Summary.PerQueue) != 2 {
			t.Fatalf("%s: %d queues", r.Label, len(r.Summary.PerQueue))
		}
		for q, g := range r.Summary.PerQueue {
			want := 0.0
			if r.Label == "kueue" {
				want = 64
			}
			if g.NominalGPUs != want {
				t.Errorf("%s: queue %s nominal %v, want %v", r.Label, q, g.NominalGPUs, want)
			}
		}
	}
}
