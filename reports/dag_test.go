package reports_test

import (
	"bytes"
	"testing"

	"github.com/gpusim/gpusim/policies/dagcp"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func dagJob(s sim.JobSpec, name string, deps ...sim.JobID) sim.JobSpec {
	s.DAG = &sim.JobDAG{Name: name, Deps: deps}
	return s
}

// The hand-worked pipeline of policies/dagcp (docs/dag.md) under
// dag-critical-path, plus a chain x -> y whose x times out (y cancelled).
// Workflows (>= 2 jobs): c1 -> c2 -> c3 (makespan 35 = critical path 35) and
// x -> y (not completed); a1 and a2 have no dependencies and are left out.
// Predictions at release: c1 10/10, c2 10/20 (50%), c3 15/5 (200%); x (13 =
// mean of the five runs) timed out, y was never released: MAPE =
// (0+50+200)/3 = 83.333333%.
func TestDAGOutputs(t *testing.T) {
	cp, _ := dagcp.New(dagcp.Params{})
	res := Run(t, Nodes(1, 2), cp,
		MakeJob("a1").GPUs(1).Dur(15).Obj(),
		MakeJob("a2").GPUs(1).Dur(15).Obj(),
		dagJob(MakeJob("c1").GPUs(1).Dur(10).Obj(), "pre"),
		dagJob(MakeJob("c2").GPUs(1).Dur(20).Obj(), "train", "c1"),
		dagJob(MakeJob("c3").GPUs(1).Dur(5).Obj(), "eval", "c2"),
		MakeJob("x").GPUs(1).Dur(100).Wall(1).At(100).Obj(),
		dagJob(MakeJob("y").GPUs(1).Dur(5).At(100).Obj(), "", "x"))
	s := reports.Summarize(res, reports.Provenance{}, 0)
	d := s.DAG
	if d == nil {
		t.Fatal("no dag block")
	}
	if d.Workflows != 2 || d.WorkflowsCompleted != 1 || d.JobsCancelled != 1 || d.PredictedJobs != 3 || d.PredictionMAPE != 83.333333 {
		t.Errorf("dag summary %+v", d)
	}
	if d.MakespanS.Mean != 35 || d.CriticalPathS.Mean != 35 || d.Stretch.Mean != 1 {
		t.Errorf("makespan %+v cp %+v stretch %+v", d.MakespanS, d.CriticalPathS, d.Stretch)
	}
	var b bytes.Buffer
	if err := reports.WriteWorkflowsCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	want := "workflow,jobs,completed,cancelled,submit_s,end_s,makespan_s,critical_path_s,stretch\n" +
		"c1,3,3,0,0,35,35,35,1\n" +
		"x,2,0,1,100,101,,105,\n"
	if b.String() != want {
		t.Errorf("workflows.csv:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := reports.WriteDAGJobsCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	want = "job_id,workflow,job_name,deps,trace_submit_s,released_s,state,predicted_s,actual_s,abs_pct_error\n" +
		"c1,c1,pre,,0,0,completed,10,10,0\n" +
		"c2,c1,train,c1,0,10,completed,10,20,50\n" +
		"c3,c1,eval,c2,0,30,completed,15,5,200\n" +
		"x,x,,,100,100,timeout,13,,\n" + // mean of the five completed runs
		"y,x,,x,100,,cancelled,,,\n"
	if b.String() != want {
		t.Errorf("dag_jobs.csv:\n%s\nwant:\n%s", b.String(), want)
	}
	if s := reports.Summarize(Run(t, Nodes(1, 1), cp, MakeJob("z").GPUs(1).Dur(1).Obj()), reports.Provenance{}, 0); s.DAG != nil {
		t.Errorf("a run without deps has a dag block")
	}
}
