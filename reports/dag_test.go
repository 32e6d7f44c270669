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
// Workflows: a1, a2 (one job each, 15 s), c1 -> c2 -> c3 (makespan 35 =
// critical path 35), x -> y (not completed). Predictions at release: a1 15/15,
// a2 15/15, c1 10/10, c2 10/20 (50%), c3 15/5 (200%); x timed out, y never
// released (x predicted 13 = mean of the five runs, but it did not complete): MAPE = (0+0+0+50+200)/5 = 50%.
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
	if d.Workflows != 4 || d.WorkflowsCompleted != 3 || d.JobsCancelled != 1 || d.PredictedJobs != 5 || d.PredictionMAPE != 50 {
		t.Errorf("dag summary %+v", d)
	}
	// completed workflows: a1 15 (cp 15), a2 30 (cp 15: it waited), c1 35 (cp 35)
	if d.MakespanS.Max != 35 || d.MakespanS.Mean != round3((15+30+35)/3.0) || d.CriticalPathS.Max != 35 || d.Stretch.Max != 2 {
		t.Errorf("makespan %+v cp %+v stretch %+v", d.MakespanS, d.CriticalPathS, d.Stretch)
	}
	var b bytes.Buffer
	if err := reports.WriteWorkflowsCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	want := "workflow,jobs,completed,cancelled,submit_s,end_s,makespan_s,critical_path_s,stretch\n" +
		"a1,1,1,0,0,15,15,15,1\n" +
		"a2,1,1,0,0,30,30,15,2\n" +
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
		"a1,a1,,,0,0,completed,15,15,0\n" +
		"a2,a2,,,0,0,completed,15,15,0\n" +
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

func round3(x float64) float64 { return float64(int64(x*1e6+0.5)) / 1e6 }
