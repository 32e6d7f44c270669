package scenarios

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

const wfDoc = `apiVersion: gpusim/v1alpha1
kind: Scenario
name: wf
cluster:
  pools:
    - {name: p, template: dgx-h100, nodes: 1}
workload:
  synthetic: {jobs: 5, load: 0.3}
workflows:
  - name: pipe
    count: 3
    interarrival: 1h
    users: [ana, ben]
    stages:
      - {name: pre, gpus: 1, duration: 10m}
      - {name: train, gpus: 8, duration: 1h, sigma: 0.5, deps: [pre]}
      - {name: eval, gpus: 1, duration: 5m, deps: [train, pre]}
policies:
  - name: dag-critical-path
`

// The workflows: block expands the template per arrival: IDs, users, deps;
// and the run releases each stage after its predecessors.
func TestWorkflowsExpand(t *testing.T) {
	sc, err := Parse([]byte(wfDoc), "wf.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := Run(context.Background(), sc, RunOptions{NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	res := runs[0].Result
	byID := map[sim.JobID]*sim.Job{}
	for i := range res.Jobs {
		byID[res.Jobs[i].Spec.ID] = &res.Jobs[i]
	}
	for k, user := range []string{"ana", "ben", "ana"} {
		pre, train, eval := byID[sim.JobID("pipe-"+string(rune('0'+k))+"/pre")], byID[sim.JobID("pipe-"+string(rune('0'+k))+"/train")], byID[sim.JobID("pipe-"+string(rune('0'+k))+"/eval")]
		if pre == nil || train == nil || eval == nil {
			t.Fatalf("instance %d missing", k)
		}
		if pre.Spec.User != user || train.Spec.DAG.Name != "train" || len(eval.Spec.DAG.Deps) != 2 {
			t.Errorf("instance %d: user %q, train %+v, eval %+v", k, pre.Spec.User, train.Spec.DAG, eval.Spec.DAG)
		}
		if train.FirstStart < pre.End || eval.FirstStart < train.End || pre.State != sim.StateCompleted || eval.State != sim.StateCompleted {
			t.Errorf("instance %d: pre %v-%v train %v-%v eval %v", k, pre.FirstStart, pre.End, train.FirstStart, train.End, eval.FirstStart)
		}
	}
	if s := runs[0].Summary.DAG; s == nil || s.Workflows != 3 || s.WorkflowsCompleted != 3 {
		t.Errorf("dag summary %+v", s)
	}
}

// Bad workflows give file:line: field errors.
func TestWorkflowsErrors(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{"deps: [pre]}", "deps: [nope]}", "wf.yaml:16: workflows[0].stages[1].deps[0]: unknown stage \"nope\""},
		{"{name: pre, gpus: 1, duration: 10m}", "{name: pre, gpus: 1, duration: 10m, deps: [eval]}", "wf.yaml:14: workflows[0].stages: dependency cycle: pre -> eval -> train -> pre"},
		{"count: 3", "count: 0", "wf.yaml:11: workflows[0].count: must be in 1.."},
		{"duration: 5m,", "duration: 0s,", "wf.yaml:17: workflows[0].stages[2].duration: must be > 0"},
		{"sigma: 0.5", "sigma: -1", "wf.yaml:16: workflows[0].stages[1].sigma: must be in [0, 5]"},
		{"name: pipe", "name: a/b", "wf.yaml:10: workflows[0].name: must be a non-empty name"},
	} {
		_, err := Parse([]byte(strings.Replace(wfDoc, c.from, c.to, 1)), "wf.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: error %v, want %q", c.from, c.to, err, c.want)
		}
	}
}

// A trace filter that drops a predecessor is a workload error (exit code 2),
// and a trace's cycle is reported at its file and line.
func TestTraceDepsErrors(t *testing.T) {
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "t.csv"), []byte("id,submit_s,gpus,duration_s,deps,user\na,0,1,10,,y\nb,100,1,10,a,x\n"), 0o644)
	os.WriteFile(filepath.Join(d, "c.csv"), []byte("id,submit_s,gpus,duration_s,deps\na,0,1,10,b\nb,100,1,10,a\n"), 0o644)
	doc := func(trace string) string {
		return "apiVersion: gpusim/v1alpha1\nkind: Scenario\nname: e\ncluster:\n  pools:\n    - {name: p, template: dgx-h100, nodes: 1}\n" +
			"workload:\n  trace: " + trace + "\npolicies:\n  - name: fifo\n"
	}
	for _, c := range []struct{ trace, want string }{
		{"{format: native, path: t.csv, filter: {users: [x]}}", `s.yaml:8: workload.trace: job "b": deps: unknown job "a"`},
		{"{format: native, path: c.csv}", "s.yaml:8: workload.trace: " + filepath.Join(d, "c.csv") + ":2: column deps: dependency cycle: a -> b -> a"},
	} {
		sc, err := Parse([]byte(doc(c.trace)), filepath.Join(d, "s.yaml"), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Run(context.Background(), sc, RunOptions{NoLog: true})
		var se *Error
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &se) {
			t.Errorf("error %v (%T), want a scenario error containing %q", err, err, c.want)
		}
	}
}

// The DAG example gives byte-identical outputs twice, under GOMAXPROCS=1, and
// with its policies run one at a time.
func TestDAGDeterminism(t *testing.T) {
	d := t.TempDir()
	run := func(dir string, par int, pols ...string) {
		sc, err := Load("examples/dag-pipelines.yaml", []string{"workload.synthetic.jobs=100", "workflows[0].count=15"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(context.Background(), sc, RunOptions{OutDir: filepath.Join(d, dir), Parallel: par, Policies: pols}); err != nil {
			t.Fatal(err)
		}
	}
	run("a", 0)
	prev := runtime.GOMAXPROCS(1)
	run("b", 1)
	runtime.GOMAXPROCS(prev)
	run("c", 0, "dag-critical-path-prewarm")
	files := []string{"jobs.csv", "events.parquet", "dag_jobs.csv", "workflows.csv"}
	for _, pol := range []string{"fifo", "easy-backfill", "dag-critical-path", "dag-critical-path-prewarm"} {
		sameFiles(t, filepath.Join(d, "a", pol), filepath.Join(d, "b", pol), files...)
	}
	sameFiles(t, filepath.Join(d, "a", "dag-critical-path-prewarm"), filepath.Join(d, "c", "dag-critical-path-prewarm"), files...)
}
