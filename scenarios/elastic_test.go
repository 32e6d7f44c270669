package scenarios

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
)

const elasticScenario = `apiVersion: gpusim/v1alpha1
kind: Scenario
name: t
simulation: {rescaleDelay: 20s}
cluster:
  pools:
    - {name: a, template: dgx-h100, nodes: 2}
workload:
  synthetic:
    jobs: 60
    load: 0.8
    classes:
      - class: training
        weight: 1
        gpus: {values: [1, 2, 4]}
        duration: {medianS: 600}
        elastic: {minReplicas: 1, maxReplicas: 4}
policies:
  - name: fifo
`

// A synthetic elastic class runs (rigid policies start every job at its
// preferred size, so no resize), writes its elastic record, and is refused
// with a model elastic gangs do not support, at the elastic block's line.
func TestScenarioElastic(t *testing.T) {
	sc, err := Parse([]byte(elasticScenario), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := sc.Config().RescaleDelay; d == nil || d.Seconds() != 20 {
		t.Fatalf("rescale delay %v", d)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	res := runs[0].Result
	if res.Elastic == nil || runs[0].Summary.Jobs.Completed != 60 {
		t.Fatalf("elastic record %v, completed %d", res.Elastic != nil, runs[0].Summary.Jobs.Completed)
	}
	for i, n := range res.Elastic.Resizes {
		if n != 0 || res.Jobs[i].Spec.Elastic == nil {
			t.Fatalf("job %d: %d resizes under fifo", i, n)
		}
	}
	mustErr(t, elasticScenario+"power: {}\n", nil, "s.yaml:17: workload.synthetic.classes[0].elastic: elastic jobs are not supported together with power")
	mustErr(t, elasticScenario, []string{"simulation.rescaleDelay=-1s"}, "simulation.rescaleDelay")
}

// optimus resizes a synthetic elastic class's jobs (its generic rule:
// remaining work over linear rate) and finishes every job.
func TestScenarioElasticOptimus(t *testing.T) {
	sc, err := Parse([]byte(elasticScenario+"  - name: optimus\n"), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	r := runs[1]
	resizes := int32(0)
	for _, n := range r.Result.Elastic.Resizes {
		resizes += n
	}
	if r.Summary.Jobs.Completed != 60 || resizes == 0 {
		t.Fatalf("optimus: %d completed, %d resizes", r.Summary.Jobs.Completed, resizes)
	}
}

// Elastic runs are deterministic: the synthetic elastic scenario under
// optimus and fifo, and the pollux-elastic example, give byte-identical
// outputs (elastic.csv included) with both policies at once and under
// GOMAXPROCS=1 one policy at a time.
func TestElasticDeterminism(t *testing.T) {
	d := t.TempDir()
	run := func(sc *Scenario, dir string, par int) {
		t.Helper()
		if _, err := Run(context.Background(), sc, RunOptions{OutDir: dir, Parallel: par}); err != nil {
			t.Fatal(err)
		}
	}
	syn, err := Parse([]byte(elasticScenario+"  - name: optimus\n"), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := Load("examples/pollux-elastic.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"jobs.csv", "elastic.csv", "events.parquet", "timeseries.parquet"}
	for name, sc := range map[string]*Scenario{"synthetic": syn, "pollux": ex} {
		a, b := filepath.Join(d, name, "a"), filepath.Join(d, name, "b")
		run(sc, a, 0)
		prev := runtime.GOMAXPROCS(1)
		run(sc, b, 1)
		runtime.GOMAXPROCS(prev)
		for _, pol := range []string{"fifo", "optimus"} {
			sameFiles(t, filepath.Join(a, pol), filepath.Join(b, pol), files...)
		}
	}
}
