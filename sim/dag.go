package sim

import (
	"fmt"
	"strings"
)

// DAG pipelines (docs/dag.md): jobs with dependencies. A job whose JobSpec.DAG
// lists predecessors is submitted (arrives, becomes visible to the policy) only
// when it has reached its Submit time and every predecessor has completed;
// its Spec.Submit is then moved to that release time, so wait times count from
// it (Slurm's "eligible time" for --dependency=afterok jobs). A predecessor
// that is killed or times out cancels every successor still waiting for it,
// transitively: a cancelled job ends in StateKilled at the cancellation time
// without ever arriving or starting (Slurm's afterok with
// kill_invalid_depend). Runs without any JobSpec.DAG keep e.dag nil and are
// byte-identical to runs of a build without the feature.

// JobDAG is a job's place in a pipeline (JobSpec.DAG; nil for ordinary jobs).
type JobDAG struct {
	// Deps are the IDs of the jobs that must complete before this one is
	// submitted (Slurm --dependency=afterok). Every ID must name a job of the
	// run; cycles are errors.
	Deps []JobID
	// Name is the job's (stage) name, which the duration predictor keys its
	// history on ("" = none).
	Name string
}

// DAGStats is a run's DAG record (Result.DAG; nil without JobSpec.DAG). All
// slices are indexed by JobRef.
type DAGStats struct {
	// TraceSubmit is each job's Submit as given (Spec.Submit becomes the
	// release time of a dependent job).
	TraceSubmit []Time
	// Released is when the job was submitted to the policy (Never if it never
	// was: cancelled, or still waiting at the end).
	Released []Time
	// Predicted is the duration predicted for the job at its release (0 if it
	// was never released).
	Predicted []Duration
	// Cancelled marks jobs cancelled because a predecessor failed.
	Cancelled []bool
	// Workflow is the workflow (weakly connected component of the dependency
	// graph) of each job, named by its first job without predecessors in
	// JobRef order.
	Workflow []JobRef
	// Preds lists each job's predecessors (Preds[PredOff[r]:PredOff[r+1]]).
	PredOff []int32
	Preds   []JobRef
	// Topo is every job in a topological order (predecessors first).
	Topo []JobRef
}

// JobPreds returns the predecessors of job r.
func (d *DAGStats) JobPreds(r JobRef) []JobRef { return d.Preds[d.PredOff[r]:d.PredOff[r+1]] }

type dagHist struct {
	sum float64 // seconds
	n   int64
}

// dagState is the engine's DAG state (nil without JobSpec.DAG).
type dagState struct {
	waiting []int32 // unfinished predecessors
	held    []bool  // reached Submit, waiting for predecessors
	succOff []int32
	succ    []JobRef
	stats   DAGStats
	// Duration predictor: run-time history per (user, name), name, user and
	// overall; keys interned at init so prediction allocates nothing.
	kPair, kName, kUser []int32 // per job; -1 = no key
	hPair, hName, hUser []dagHist
	hAll                dagHist
}

// initDAG builds the DAG state when some job has a JobSpec.DAG: resolves
// dependency IDs, rejects unknown IDs, self-dependencies and cycles.
func (e *Engine) initDAG() error {
	has := false
	for i := range e.jobs {
		if e.jobs[i].Spec.DAG != nil {
			has = true
			break
		}
	}
	if !has {
		return nil
	}
	n := len(e.jobs)
	ids := make(map[JobID]JobRef, n)
	for i := range e.jobs {
		ids[e.jobs[i].Spec.ID] = JobRef(i)
	}
	d := &dagState{waiting: make([]int32, n), held: make([]bool, n)}
	st := &d.stats
	st.PredOff = make([]int32, n+1)
	cnt := make([]int32, n+1)
	for i := range e.jobs {
		st.PredOff[i+1] = st.PredOff[i]
		jd := e.jobs[i].Spec.DAG
		if jd == nil {
			continue
		}
		for _, id := range jd.Deps {
			p, ok := ids[id]
			if !ok {
				return fmt.Errorf("job %q: deps: unknown job %q (not in the run: misspelt, or removed by a filter, window or limit)", e.jobs[i].Spec.ID, id)
			}
			if p == JobRef(i) {
				return fmt.Errorf("job %q: deps: the job depends on itself", e.jobs[i].Spec.ID)
			}
			if slicesContains(st.Preds[st.PredOff[i]:], p) {
				continue // repeated dependency
			}
			st.Preds = append(st.Preds, p)
			st.PredOff[i+1]++
			cnt[p+1]++
		}
		d.waiting[i] = st.PredOff[i+1] - st.PredOff[i]
	}
	d.succOff = make([]int32, n+1)
	for i := 0; i < n; i++ {
		d.succOff[i+1] = d.succOff[i] + cnt[i+1]
	}
	d.succ = make([]JobRef, len(st.Preds))
	fill := append([]int32(nil), d.succOff[:n]...)
	for i := 0; i < n; i++ {
		for _, p := range st.Preds[st.PredOff[i]:st.PredOff[i+1]] {
			d.succ[fill[p]] = JobRef(i)
			fill[p]++
		}
	}
	// Kahn's algorithm, smallest ready Ref first (deterministic).
	indeg := append([]int32(nil), d.waiting...)
	var ready refHeap
	for i := 0; i < n; i++ {
		if indeg[i] == 0 {
			ready.push(JobRef(i))
		}
	}
	st.Topo = make([]JobRef, 0, n)
	for ready.len() > 0 {
		r := ready.pop()
		st.Topo = append(st.Topo, r)
		for _, s := range d.succ[d.succOff[r]:d.succOff[r+1]] {
			if indeg[s]--; indeg[s] == 0 {
				ready.push(s)
			}
		}
	}
	if len(st.Topo) < n {
		var cyc []string
		for i := 0; i < n && len(cyc) < 8; i++ {
			if indeg[i] > 0 {
				cyc = append(cyc, string(e.jobs[i].Spec.ID))
			}
		}
		return fmt.Errorf("deps: dependency cycle among jobs %s", strings.Join(cyc, ", "))
	}
	// Workflows: union-find over dependency edges, named by the lowest Ref.
	parent := make([]JobRef, n)
	for i := range parent {
		parent[i] = JobRef(i)
	}
	find := func(x JobRef) JobRef {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	for i := 0; i < n; i++ {
		for _, p := range st.Preds[st.PredOff[i]:st.PredOff[i+1]] {
			a, b := find(JobRef(i)), find(p)
			if a < b {
				parent[b] = a
			} else if b < a {
				parent[a] = b
			}
		}
	}
	// Name each workflow by its first source (a job without predecessors) in
	// Ref order: the first stage of the pipeline.
	name := make([]JobRef, n)
	for i := range name {
		name[i] = -1
	}
	for i := 0; i < n; i++ {
		if c := find(JobRef(i)); name[c] < 0 && st.PredOff[i+1] == st.PredOff[i] {
			name[c] = JobRef(i)
		}
	}
	st.Workflow = make([]JobRef, n)
	for i := range st.Workflow {
		st.Workflow[i] = name[find(JobRef(i))]
	}
	st.TraceSubmit = make([]Time, n)
	st.Released = make([]Time, n)
	st.Predicted = make([]Duration, n)
	st.Cancelled = make([]bool, n)
	for i := range e.jobs {
		st.TraceSubmit[i] = e.jobs[i].Spec.Submit
		st.Released[i] = Never
	}
	d.initPredictor(e.jobs)
	e.dag = d
	return nil
}

func slicesContains(s []JobRef, x JobRef) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

func (d *dagState) initPredictor(jobs []Job) {
	n := len(jobs)
	d.kPair, d.kName, d.kUser = make([]int32, n), make([]int32, n), make([]int32, n)
	users, names, pairs := map[string]int32{}, map[string]int32{}, map[[2]string]int32{}
	intern := func(m map[string]int32, k string) int32 {
		v, ok := m[k]
		if !ok {
			v = int32(len(m))
			m[k] = v
		}
		return v
	}
	for i := range jobs {
		s := &jobs[i].Spec
		d.kUser[i] = intern(users, s.User)
		d.kName[i], d.kPair[i] = -1, -1
		if s.DAG != nil && s.DAG.Name != "" {
			d.kName[i] = intern(names, s.DAG.Name)
			k := [2]string{s.User, s.DAG.Name}
			v, ok := pairs[k]
			if !ok {
				v = int32(len(pairs))
				pairs[k] = v
			}
			d.kPair[i] = v
		}
	}
	d.hUser, d.hName, d.hPair = make([]dagHist, len(users)), make([]dagHist, len(names)), make([]dagHist, len(pairs))
}

// predict is the duration predictor: the mean run time (End - FirstStart) of
// the finished jobs with the same user and name, else the same name, else the
// same user, else all finished jobs, else the job's Estimate. It extends
// Helios QSSF's per-user predictor (policies/qssf Predict) with the job-name
// keys Helios and Lucid use.
func (d *dagState) predict(j *Job) Duration {
	r := j.Ref
	m := func(h *dagHist) Duration { return max(1, Duration(h.sum/float64(h.n)*1e6+0.5)) }
	if k := d.kPair[r]; k >= 0 && d.hPair[k].n > 0 {
		return m(&d.hPair[k])
	}
	if k := d.kName[r]; k >= 0 && d.hName[k].n > 0 {
		return m(&d.hName[k])
	}
	if h := &d.hUser[d.kUser[r]]; h.n > 0 {
		return m(h)
	}
	if d.hAll.n > 0 {
		return m(&d.hAll)
	}
	return j.Estimate
}

func (d *dagState) learn(j *Job) {
	r := j.Ref
	x := j.End.Sub(j.FirstStart).Seconds()
	add := func(h *dagHist) { h.sum += x; h.n++ }
	if k := d.kPair[r]; k >= 0 {
		add(&d.hPair[k])
		add(&d.hName[d.kName[r]])
	}
	add(&d.hUser[d.kUser[r]])
	add(&d.hAll)
}

// dagArrive is called when job j reaches its Submit time; it reports whether j
// arrives now (false: cancelled, or held until its predecessors complete).
func (e *Engine) dagArrive(j *Job) bool {
	d := e.dag
	if d.stats.Cancelled[j.Ref] {
		return false
	}
	if d.waiting[j.Ref] > 0 {
		d.held[j.Ref] = true
		return false
	}
	d.stats.Released[j.Ref] = e.now
	d.stats.Predicted[j.Ref] = d.predict(j)
	return true
}

// dagEnded is called when job j has ended (completed, killed or timed out):
// it releases the successors whose last predecessor it was, or cancels every
// successor that still waits when j did not complete.
func (e *Engine) dagEnded(j *Job) {
	d := e.dag
	if j.State != StateCompleted {
		e.dagCancel(j.Ref)
		return
	}
	d.learn(j)
	for _, s := range d.succ[d.succOff[j.Ref]:d.succOff[j.Ref+1]] {
		if d.waiting[s]--; d.waiting[s] == 0 && d.held[s] {
			d.held[s] = false
			sj := &e.jobs[s]
			sj.Spec.Submit = e.now
			d.stats.Released[s] = e.now
			d.stats.Predicted[s] = d.predict(sj)
			e.arrive(sj)
		}
	}
}

// dagCancel cancels the not yet submitted descendants of r (iteratively).
func (e *Engine) dagCancel(r JobRef) {
	d := e.dag
	stack := []JobRef{r}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, s := range d.succ[d.succOff[x]:d.succOff[x+1]] {
			if d.stats.Cancelled[s] || e.jobs[s].State != StatePending || e.jobs[s].queued {
				continue
			}
			d.stats.Cancelled[s] = true
			d.held[s] = false
			sj := &e.jobs[s]
			sj.State = StateKilled
			sj.End = e.now
			e.ended++
			stack = append(stack, s)
		}
	}
}

// Successors returns the jobs that depend on job r (nil in runs without
// DAGs). Do not modify the slice.
func (v *View) Successors(r JobRef) []JobRef {
	d := v.e.dag
	if d == nil {
		return nil
	}
	return d.succ[d.succOff[r]:d.succOff[r+1]]
}

// PredictedDuration is the DAG duration predictor's current estimate of job
// r's run time (see docs/dag.md: mean run time of finished jobs with the same
// user and name, name, user, or all; else Job.Estimate). In runs without DAGs
// it is Job.Estimate. It uses no ground truth (except through Estimate under
// oracle mode).
func (v *View) PredictedDuration(r JobRef) Duration {
	if v.e.dag == nil {
		return v.e.jobs[r].Estimate
	}
	return v.e.dag.predict(&v.e.jobs[r])
}

// refHeap is a min-heap of JobRefs.
type refHeap struct{ h []JobRef }

func (q *refHeap) len() int { return len(q.h) }

func (q *refHeap) push(x JobRef) {
	q.h = append(q.h, x)
	i := len(q.h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if q.h[p] <= q.h[i] {
			break
		}
		q.h[p], q.h[i] = q.h[i], q.h[p]
		i = p
	}
}

func (q *refHeap) pop() JobRef {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h = q.h[:last]
	i := 0
	for {
		l, small := 2*i+1, i
		if l < last && q.h[l] < q.h[small] {
			small = l
		}
		if l+1 < last && q.h[l+1] < q.h[small] {
			small = l + 1
		}
		if small == i {
			return top
		}
		q.h[i], q.h[small] = q.h[small], q.h[i]
		i = small
	}
}
