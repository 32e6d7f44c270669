package reports

import (
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/internal/csvutil"
	"github.com/gpusim/gpusim/sim"
)

// DAG pipeline outputs (docs/dag.md, docs/outputs.md "DAG pipelines"): they
// exist only in runs with job dependencies (sim.Result.DAG != nil); other runs
// write no new file and no new summary field.

// File names of the DAG outputs inside a run directory.
const (
	DAGJobsFile   = "dag_jobs.csv"
	WorkflowsFile = "workflows.csv"
)

// DAG outputs cover the jobs of workflows: weakly connected components of
// the dependency graph with at least two jobs. Jobs with no dependency either
// way are left out (they are in jobs.csv as usual).

// DAGJobColumns are dag_jobs.csv's columns (one row per workflow job, in
// JobRef order).
var DAGJobColumns = []string{"job_id", "workflow", "job_name", "deps", "trace_submit_s", "released_s",
	"state", "predicted_s", "actual_s", "abs_pct_error"}

// WorkflowColumns are workflows.csv's columns (one row per workflow, named by
// its first job without predecessors in (submit, ID) order).
var WorkflowColumns = []string{"workflow", "jobs", "completed", "cancelled", "submit_s", "end_s",
	"makespan_s", "critical_path_s", "stretch"}

// DAGSummary is summary.json's "dag" block.
type DAGSummary struct {
	// Workflows counts workflows (components of >= 2 jobs);
	// WorkflowsCompleted those whose every job completed.
	Workflows          int `json:"workflows"`
	WorkflowsCompleted int `json:"workflows_completed"`
	// JobsCancelled counts jobs cancelled because a predecessor failed.
	JobsCancelled int `json:"jobs_cancelled"`
	// MakespanS is the completed workflows' makespan (last end − first trace
	// submit), seconds; CriticalPathS their critical path (longest chain of
	// true durations at reference speed); Stretch makespan / critical path.
	MakespanS     Stats `json:"makespan_s"`
	CriticalPathS Stats `json:"critical_path_s"`
	Stretch       Stats `json:"stretch"`
	// PredictionMAPE is the mean of |predicted − actual| / actual over
	// completed workflow jobs (actual = end − first start), in percent;
	// PredictedJobs how many jobs it covers.
	PredictionMAPE float64 `json:"prediction_mape_pct"`
	PredictedJobs  int     `json:"predicted_jobs"`
}

// dagWorkflow is one workflow's aggregate.
type dagWorkflow struct {
	root                       sim.JobRef
	jobs, completed, cancelled int
	submit, end                sim.Time
	cp                         sim.Duration
}

// dagWorkflows aggregates res.DAG per workflow (>= 2 jobs), in order of their
// first job; inWF marks the jobs of those workflows.
func dagWorkflows(res *sim.Result) (out []dagWorkflow, inWF []bool) {
	d := res.DAG
	n := len(res.Jobs)
	cp := make([]sim.Duration, n)
	for _, r := range d.Topo {
		var m sim.Duration
		for _, p := range d.JobPreds(r) {
			m = max(m, cp[p])
		}
		cp[r] = m + res.Jobs[r].Spec.Duration
	}
	idx := make(map[sim.JobRef]int)
	for r := 0; r < n; r++ {
		w := d.Workflow[r]
		k, ok := idx[w]
		if !ok {
			k = len(out)
			idx[w] = k
			out = append(out, dagWorkflow{root: w, submit: sim.Never, end: 0})
		}
		f := &out[k]
		j := &res.Jobs[r]
		f.jobs++
		switch {
		case j.State == sim.StateCompleted:
			f.completed++
		case d.Cancelled[r]:
			f.cancelled++
		}
		f.submit = min(f.submit, d.TraceSubmit[r])
		if j.End != sim.Never {
			f.end = max(f.end, j.End)
		}
		f.cp = max(f.cp, cp[r])
	}
	inWF = make([]bool, n)
	for r := 0; r < n; r++ {
		inWF[r] = out[idx[d.Workflow[r]]].jobs >= 2
	}
	multi := out[:0]
	for _, f := range out {
		if f.jobs >= 2 {
			multi = append(multi, f)
		}
	}
	return multi, inWF
}

// dagActual is a completed job's run time (end − first start) and whether it
// has a prediction to compare with.
func dagActual(res *sim.Result, r int) (actual float64, ok bool) {
	j := &res.Jobs[r]
	if j.State != sim.StateCompleted || res.DAG.Released[r] == sim.Never {
		return 0, false
	}
	return j.End.Sub(j.FirstStart).Seconds(), true
}

func summarizeDAG(res *sim.Result, s *Summary) {
	d := res.DAG
	if d == nil {
		return
	}
	ds := &DAGSummary{}
	var mk, cps, st []float64
	wfs, inWF := dagWorkflows(res)
	for _, w := range wfs {
		ds.Workflows++
		ds.JobsCancelled += w.cancelled
		if w.completed == w.jobs {
			ds.WorkflowsCompleted++
			m := w.end.Sub(w.submit).Seconds()
			mk = append(mk, m)
			cps = append(cps, w.cp.Seconds())
			if w.cp > 0 {
				st = append(st, m/w.cp.Seconds())
			}
		}
	}
	ds.MakespanS, ds.CriticalPathS, ds.Stretch = ComputeStats(mk), ComputeStats(cps), ComputeStats(st)
	var sum float64
	for r := range res.Jobs {
		if a, ok := dagActual(res, r); ok && a > 0 && inWF[r] {
			sum += math.Abs(d.Predicted[r].Seconds()-a) / a
			ds.PredictedJobs++
		}
	}
	if ds.PredictedJobs > 0 {
		ds.PredictionMAPE = round(100 * sum / float64(ds.PredictedJobs))
	}
	s.DAG = ds
}

// WriteDAGJobsCSV writes dag_jobs.csv (DAGJobColumns) for a run with DAGs.
// released_s and predicted_s are empty for jobs never released; actual_s and
// abs_pct_error for jobs that did not complete.
func WriteDAGJobsCSV(w io.Writer, res *sim.Result) error {
	d := res.DAG
	var deps []string
	_, inWF := dagWorkflows(res)
	return writeCSVRows(w, DAGJobColumns, len(res.Jobs), func(b []byte, r int) []byte {
		if !inWF[r] {
			return b
		}
		j := &res.Jobs[r]
		b = csvutil.AppendField(b, string(j.Spec.ID))
		b = csvutil.AppendField(append(b, ','), string(res.Jobs[d.Workflow[r]].Spec.ID))
		b = append(b, ',')
		deps = deps[:0]
		if j.Spec.DAG != nil {
			b = csvutil.AppendField(b, j.Spec.DAG.Name)
			for _, x := range j.Spec.DAG.Deps {
				deps = append(deps, string(x))
			}
		}
		b = csvutil.AppendField(append(b, ','), strings.Join(deps, "|"))
		b = appendSecs(append(b, ','), d.TraceSubmit[r].Seconds())
		b = append(b, ',')
		if d.Released[r] != sim.Never {
			b = appendSecs(b, d.Released[r].Seconds())
		}
		state := j.State.String()
		if d.Cancelled[r] {
			state = "cancelled"
		}
		b = append(append(append(b, ','), state...), ',')
		if d.Released[r] != sim.Never {
			b = appendSecs(b, d.Predicted[r].Seconds())
		}
		b = append(b, ',')
		if a, ok := dagActual(res, r); ok {
			b = appendSecs(b, a)
			b = append(b, ',')
			if a > 0 {
				b = appendNum(b, 100*math.Abs(d.Predicted[r].Seconds()-a)/a)
			}
		} else {
			b = append(b, ',')
		}
		b = append(b, '\n')
		return b
	})
}

// WriteWorkflowsCSV writes workflows.csv (WorkflowColumns). makespan_s and
// stretch are empty for workflows with a job that did not complete; end_s is
// empty when no job of it ended.
func WriteWorkflowsCSV(w io.Writer, res *sim.Result) error {
	wfs, _ := dagWorkflows(res)
	return writeCSVRows(w, WorkflowColumns, len(wfs), func(b []byte, i int) []byte {
		f := wfs[i]
		b = csvutil.AppendField(b, string(res.Jobs[f.root].Spec.ID))
		for _, x := range [...]int{f.jobs, f.completed, f.cancelled} {
			b = strconv.AppendInt(append(b, ','), int64(x), 10)
		}
		b = appendSecs(append(b, ','), f.submit.Seconds())
		b = append(b, ',')
		if f.end > 0 || f.completed > 0 {
			b = appendSecs(b, f.end.Seconds())
		}
		b = append(b, ',')
		done := f.completed == f.jobs
		if done {
			b = appendSecs(b, f.end.Sub(f.submit).Seconds())
		}
		b = appendSecs(append(b, ','), f.cp.Seconds())
		b = append(b, ',')
		if done && f.cp > 0 {
			b = appendNum(b, f.end.Sub(f.submit).Seconds()/f.cp.Seconds())
		}
		b = append(b, '\n')
		return b
	})
}
