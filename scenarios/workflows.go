package scenarios

import (
	"fmt"
	"math"
	"strings"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
)

// WorkflowSpec is one entry of the scenario block `workflows:` (docs/dag.md):
// a template DAG of stages, instantiated at each of Count arrivals (Poisson,
// mean gap Interarrival, from Start). Instance k of workflow w has jobs
// "w-k/<stage>" submitted at its arrival time; each waits for its stage's
// deps in the same instance (sim.JobDAG). Durations are the stage's duration
// times a lognormal factor exp(sigma·N(0,1)) drawn per job from the stream
// "workflows/<name>" of the scenario seed.
type WorkflowSpec struct {
	Name         string          `yaml:"name"`
	Count        int             `yaml:"count"`
	Interarrival policies.Dur    `yaml:"interarrival"`
	Start        policies.Dur    `yaml:"start"`
	Users        []string        `yaml:"users"` // instance k belongs to Users[k mod len] (default: none)
	Queue        string          `yaml:"queue"`
	Stages       []WorkflowStage `yaml:"stages"`
}

// WorkflowStage is one job of a workflow template.
type WorkflowStage struct {
	Name     string       `yaml:"name"`
	Class    string       `yaml:"class"`
	GPUs     int32        `yaml:"gpus"`
	Replicas int32        `yaml:"replicas"` // default 1
	Duration policies.Dur `yaml:"duration"`
	Sigma    float64      `yaml:"sigma"`    // lognormal spread of the duration (default 0: fixed)
	Walltime policies.Dur `yaml:"walltime"` // the user's estimate / limit (default none)
	Deps     []string     `yaml:"deps"`     // names of stages of the same workflow
}

// maxWorkflowJobs bounds the jobs one workflows: block may create.
const maxWorkflowJobs = 10_000_000

// validateWorkflows checks the `workflows:` block; each problem names its field.
func (s *Scenario) validateWorkflows() sim.FieldErrors {
	var fe sim.FieldErrors
	names := map[string]bool{}
	total := 0
	for i := range s.Workflows {
		w := &s.Workflows[i]
		p := fmt.Sprintf("workflows[%d]", i)
		switch {
		case w.Name == "" || strings.ContainsAny(w.Name, "/|,\"\n"):
			fe.Add(p+".name", "must be a non-empty name without / | , or quotes")
		case names[w.Name]:
			fe.Add(p+".name", "duplicate workflow name %q", w.Name)
		}
		names[w.Name] = true
		if w.Count < 1 || w.Count > maxWorkflowJobs {
			fe.Add(p+".count", "must be in 1..%d", maxWorkflowJobs)
		}
		if w.Interarrival < 0 {
			fe.Add(p+".interarrival", "must be >= 0 (mean gap between arrivals)")
		}
		if w.Start < 0 {
			fe.Add(p+".start", "must be >= 0")
		}
		if len(w.Stages) == 0 {
			fe.Add(p+".stages", "needs at least one stage")
		}
		total += w.Count * len(w.Stages)
		stages := map[string]int{}
		for k := range w.Stages {
			st := &w.Stages[k]
			sp := fmt.Sprintf("%s.stages[%d]", p, k)
			if st.Name == "" || strings.ContainsAny(st.Name, "/|,\"\n") {
				fe.Add(sp+".name", "must be a non-empty name without / | , or quotes")
			} else if _, dup := stages[st.Name]; dup {
				fe.Add(sp+".name", "duplicate stage name %q", st.Name)
			}
			stages[st.Name] = k
			if _, err := sim.ParseClass(st.Class); err != nil {
				fe.Add(sp+".class", "%v", err)
			}
			if st.GPUs < 0 || st.GPUs > 1<<16 {
				fe.Add(sp+".gpus", "must be in 0..65536")
			}
			if st.Replicas < 0 || st.Replicas > 1<<16 {
				fe.Add(sp+".replicas", "must be in 1..65536 (0 = 1)")
			}
			if st.Duration <= 0 {
				fe.Add(sp+".duration", "must be > 0 (e.g. 30m)")
			}
			if !(st.Sigma >= 0 && st.Sigma <= 5) {
				fe.Add(sp+".sigma", "must be in [0, 5]")
			}
			if st.Walltime < 0 {
				fe.Add(sp+".walltime", "must be >= 0")
			}
		}
		for k := range w.Stages {
			for d, dep := range w.Stages[k].Deps {
				dp := fmt.Sprintf("%s.stages[%d].deps[%d]", p, k, d)
				switch j, ok := stages[dep]; {
				case !ok:
					fe.Add(dp, "unknown stage %q", dep)
				case j == k:
					fe.Add(dp, "stage %q depends on itself", dep)
				}
			}
		}
		if cyc := stageCycle(w.Stages, stages); cyc != "" {
			fe.Add(p+".stages", "dependency cycle: %s", cyc)
		}
	}
	if total > maxWorkflowJobs {
		fe.Add("workflows", "creates %d jobs, at most %d", total, maxWorkflowJobs)
	}
	return fe
}

// stageCycle returns a cycle among the stages ("a -> b -> a"), or "".
func stageCycle(st []WorkflowStage, idx map[string]int) string {
	color := make([]uint8, len(st))
	var path []string
	var visit func(k int) string
	visit = func(k int) string {
		color[k] = 1
		path = append(path, st[k].Name)
		for _, d := range st[k].Deps {
			j, ok := idx[d]
			if !ok || j == k {
				continue // reported on its own
			}
			switch color[j] {
			case 1:
				for i, n := range path {
					if n == d {
						return strings.Join(append(append([]string(nil), path[i:]...), d), " -> ")
					}
				}
			case 0:
				if c := visit(j); c != "" {
					return c
				}
			}
		}
		color[k] = 2
		path = path[:len(path)-1]
		return ""
	}
	for k := range st {
		if color[k] == 0 {
			if c := visit(k); c != "" {
				return c
			}
		}
	}
	return ""
}

// applyWorkflows appends the jobs of the `workflows:` block to jobs (sorted
// again by submit time and ID); jobs is returned unchanged without the block.
func (s *Scenario) applyWorkflows(jobs []sim.JobSpec) []sim.JobSpec {
	if len(s.Workflows) == 0 {
		return jobs
	}
	for i := range s.Workflows {
		w := &s.Workflows[i]
		rng := sim.Stream(s.SeedValue(), "workflows/"+w.Name)
		at := sim.Time(w.Start)
		for k := 0; k < w.Count; k++ {
			if k > 0 && w.Interarrival > 0 {
				at = at.Add(sim.Duration(math.Round(rng.ExpFloat64() * float64(w.Interarrival))))
			}
			inst := fmt.Sprintf("%s-%d/", w.Name, k)
			user := ""
			if len(w.Users) > 0 {
				user = w.Users[k%len(w.Users)]
			}
			for _, st := range w.Stages {
				cls, _ := sim.ParseClass(st.Class)
				d := sim.Duration(st.Duration)
				if st.Sigma > 0 {
					d = max(sim.Duration(math.Round(float64(d)*math.Exp(st.Sigma*rng.NormFloat64()))), sim.Second)
				}
				j := sim.JobSpec{ID: sim.JobID(inst + st.Name), Submit: at, Queue: w.Queue, User: user, Class: cls,
					Replicas: max(st.Replicas, 1), GPUsPerReplica: st.GPUs, GPUMilli: sim.WholeGPU,
					Duration: d, Walltime: sim.Duration(st.Walltime), DAG: &sim.JobDAG{Name: st.Name}}
				for _, dep := range st.Deps {
					j.DAG.Deps = append(j.DAG.Deps, sim.JobID(inst+dep))
				}
				jobs = append(jobs, j)
			}
		}
	}
	traces.SortJobs(jobs)
	return jobs
}

// checkDeps reports the first job (in order) whose dependency names no job of
// the workload: a trace's filter, window or limit may have dropped it.
func checkDeps(jobs []sim.JobSpec) error {
	var ids map[sim.JobID]struct{}
	for i := range jobs {
		d := jobs[i].DAG
		if d == nil || len(d.Deps) == 0 {
			continue
		}
		if ids == nil {
			ids = make(map[sim.JobID]struct{}, len(jobs))
			for k := range jobs {
				ids[jobs[k].ID] = struct{}{}
			}
		}
		for _, dep := range d.Deps {
			if _, ok := ids[dep]; !ok {
				return fmt.Errorf("job %q: deps: unknown job %q (not in the workload: removed by the filter, window or limit?)", jobs[i].ID, dep)
			}
		}
	}
	return nil
}
