package sim_test

import (
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// checker wraps a policy and asserts the engine's safety invariants at every
// scheduling point: no GPU over-allocated, the cluster's allocation equals the sum
// of running jobs' placements, gangs complete, time monotonic.
type checker struct {
	sim.Policy
	t    *rapid.T
	last sim.Time
}

func (c *checker) Observe(v *sim.View, e sim.Event) {
	if o, ok := c.Policy.(sim.Observer); ok {
		o.Observe(v, e)
	}
}

func (c *checker) Schedule(v *sim.View, p *sim.Plan) error {
	if v.Now() < c.last {
		c.t.Fatalf("time went backwards: %d -> %d", c.last, v.Now())
	}
	c.last = v.Now()
	cl := v.Cluster()
	used := make([]sim.MilliGPU, cl.NumGPUs())
	cpu := make([]int64, cl.NumNodes())
	for _, j := range v.Running() {
		s := &j.Spec
		if len(j.Nodes) != int(s.Replicas) || len(j.GPUs) != int(s.TotalGPUs()) {
			c.t.Fatalf("job %s runs with a partial gang: %d nodes, %d GPUs", s.ID, len(j.Nodes), len(j.GPUs))
		}
		for _, g := range j.GPUs {
			used[g] += s.GPUMilli
		}
		for _, n := range j.Nodes {
			cpu[n] += s.CPUMilli
		}
	}
	var free int64
	for g := range used {
		if used[g] > sim.WholeGPU {
			c.t.Fatalf("GPU %d over-allocated: %d", g, used[g])
		}
		if used[g] != cl.GPUUsed(sim.GPUID(g)) {
			c.t.Fatalf("GPU %d: engine says %d milli used, running jobs %d", g, cl.GPUUsed(sim.GPUID(g)), used[g])
		}
		if used[g] == 0 {
			free++
		}
	}
	if free != cl.FreeGPUs() {
		t := c.t
		t.Fatalf("free GPU index %d, recount %d", cl.FreeGPUs(), free)
	}
	for n := range cpu {
		if cl.Node(sim.NodeID(n)).CPUMilli-cpu[n] != cl.NodeFreeCPU(sim.NodeID(n)) {
			c.t.Fatalf("node %d CPU accounting off", n)
		}
	}
	return c.Policy.Schedule(v, p)
}

func genCase(t *rapid.T) ([]sim.NodeSpec, []sim.JobSpec, string) {
	nn := rapid.IntRange(1, 5).Draw(t, "nodes")
	models := []string{"a", "b"}
	var nodes []sim.NodeSpec
	for i := 0; i < nn; i++ {
		nodes = append(nodes, sim.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUModel: models[rapid.IntRange(0, 1).Draw(t, "model")],
			GPUs: int32(rapid.IntRange(1, 8).Draw(t, "gpus")), CPUMilli: 64000, MemoryMiB: 1 << 20, NVLinkDomain: -1, Leaf: int32(i / 2)})
	}
	maxG := int32(0)
	for _, n := range nodes {
		maxG = max(maxG, n.GPUs)
	}
	nj := rapid.IntRange(1, 25).Draw(t, "jobs")
	var jobs []sim.JobSpec
	for i := 0; i < nj; i++ {
		s := sim.JobSpec{ID: sim.JobID(fmt.Sprintf("j%02d", i)), Replicas: 1, GPUMilli: sim.WholeGPU,
			Submit:   sim.Time(sim.Seconds(float64(rapid.IntRange(0, 200).Draw(t, "submit")))),
			Duration: sim.Seconds(float64(rapid.IntRange(1, 300).Draw(t, "dur"))),
			CPUMilli: int64(rapid.IntRange(0, 16000).Draw(t, "cpu")), Priority: int32(rapid.IntRange(0, 3).Draw(t, "prio"))}
		switch rapid.IntRange(0, 5).Draw(t, "shape") {
		case 0:
			s.GPUsPerReplica = 1
			s.GPUMilli = sim.MilliGPU(rapid.IntRange(100, 999).Draw(t, "milli"))
		case 1:
			s.GPUsPerReplica = 0
		case 2:
			s.Replicas = int32(rapid.IntRange(2, nn+1).Draw(t, "replicas"))
			s.GPUsPerReplica = int32(rapid.IntRange(1, int(maxG)).Draw(t, "g"))
		default:
			s.GPUsPerReplica = int32(rapid.IntRange(1, int(maxG)).Draw(t, "g"))
		}
		if rapid.Bool().Draw(t, "restrict") {
			s.GPUModels = []string{models[rapid.IntRange(0, 1).Draw(t, "allowed")]}
		}
		// walltimes are upper bounds (or absent): the regime in which EASY guarantees
		// the head job's reservation.
		if rapid.Bool().Draw(t, "wall") {
			s.Walltime = s.Duration + sim.Seconds(float64(rapid.IntRange(0, 200).Draw(t, "slack")))
		}
		jobs = append(jobs, s)
	}
	pol := rapid.SampledFrom([]string{"fifo", "priority", "sjf", "easy-backfill", "conservative-backfill"}).Draw(t, "policy")
	return nodes, jobs, pol
}

func TestEngineSafetyProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nodes, jobs, polName := genCase(t)
		cl, err := sim.NewCluster(nodes)
		if err != nil {
			t.Fatal(err)
		}
		var feasible []sim.JobSpec
		for i := range jobs {
			if cl.Feasible(&jobs[i]) == nil {
				feasible = append(feasible, jobs[i])
			}
		}
		placement := rapid.SampledFrom(placement.Names).Draw(t, "placement")
		var params = fmt.Sprintf("placement: %s", placement)
		pol, err := policies.New(polName, yamlNode(params))
		if err != nil {
			t.Fatal(err)
		}
		e, err := sim.NewEngine(sim.Config{Cluster: cl, Jobs: feasible, Policy: &checker{Policy: pol, t: t}, Seed: 1, EnforceWalltime: true, SampleInterval: 7 * sim.Second})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		// Liveness: with every job feasible and nothing preempting, all finish.
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if j.State != sim.StateCompleted {
				t.Fatalf("job %s ended %s (policy %s)", j.Spec.ID, j.State, polName)
			}
		}
		checkLifecycle(t, res)
		checkConservation(t, res)
		if polName == "easy-backfill" {
			checkReservations(t, res)
		}
	})
}

// checkLifecycle: arrive, then alternating start/end, ending in exactly one end
// event; time never decreases in the log.
func checkLifecycle(t *rapid.T, res *sim.Result) {
	state := make([]int, len(res.Jobs)) // 0 new, 1 pending, 2 running, 3 done
	var last sim.Time
	for _, e := range res.Log {
		if e.Time < last {
			t.Fatalf("log time decreases at %v", e)
		}
		last = e.Time
		s := &state[e.Job]
		switch e.Kind {
		case sim.EvArrive:
			if *s != 0 {
				t.Fatalf("job %d arrives twice", e.Job)
			}
			*s = 1
		case sim.EvStart:
			if *s != 1 {
				t.Fatalf("job %d starts from state %d", e.Job, *s)
			}
			*s = 2
		case sim.EvFinish, sim.EvKill, sim.EvTimeout:
			if *s != 2 {
				t.Fatalf("job %d ends from state %d", e.Job, *s)
			}
			*s = 3
		case sim.EvPreempt:
			if *s != 2 {
				t.Fatalf("job %d preempted from state %d", e.Job, *s)
			}
			*s = 1
		case sim.EvReserve, sim.EvWait:
			if *s != 1 {
				t.Fatalf("job %d reserved while in state %d", e.Job, *s)
			}
		}
	}
}

// checkConservation: the engine's integral of allocated milli-GPU equals the sum
// over jobs of (run time x GPUs x share).
func checkConservation(t *rapid.T, res *sim.Result) {
	var want float64
	for i := range res.Jobs {
		j := &res.Jobs[i]
		if j.FirstStart == sim.Never {
			continue
		}
		want += (j.End - j.LastStart).Seconds() * float64(j.Spec.GPUDemandMilli())
	}
	if d := want - res.BusyMilliSeconds; d > 1e-6*max(want, 1) || d < -1e-6*max(want, 1) {
		t.Fatalf("GPU-seconds not conserved: jobs %.6f, engine %.6f", want, res.BusyMilliSeconds)
	}
}

// checkReservations: a job EASY reserved (when walltimes are upper bounds) starts
// no later than its first reservation.
func checkReservations(t *rapid.T, res *sim.Result) {
	first := map[sim.JobRef]sim.Time{}
	for _, e := range res.Log {
		if e.Kind == sim.EvReserve {
			if _, ok := first[e.Job]; !ok {
				first[e.Job] = sim.Time(e.Value)
			}
		}
	}
	for ref, at := range first {
		j := &res.Jobs[ref]
		if !j.Spec.Fractional() && j.Spec.GPUsPerReplica > 0 && j.FirstStart > at {
			t.Fatalf("EASY delayed head job %s: reserved for %v, started %v\n%s", j.Spec.ID, at, j.FirstStart, dumpLog(res))
		}
	}
}

func dumpLog(res *sim.Result) string {
	var b []byte
	for _, e := range res.Log {
		j := &res.Jobs[e.Job]
		b = fmt.Appendf(b, "t=%g %s %s (%dx%d milli %d dur %v wall %v) nodes=%v val=%v\n", e.Time.Seconds(), e.Kind, j.Spec.ID, j.Spec.Replicas, j.Spec.GPUsPerReplica, j.Spec.GPUMilli, j.Spec.Duration, j.Spec.Walltime, j.Nodes, sim.Time(e.Value))
	}
	return string(b)
}
