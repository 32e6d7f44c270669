package volcano

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// gangCheck wraps the policy and fails if a start does not place every replica.
type gangCheck struct {
	*Volcano
	t   *rapid.T
	bad string
}

func (g *gangCheck) Schedule(v *sim.View, p *sim.Plan) error {
	n0 := len(p.Starts)
	if g.Volcano.Sessions() > 5000 {
		var b strings.Builder
		for j := range v.Pending() {
			vj := g.Volcano.jobs[j.Ref]
			fmt.Fprintf(&b, " pending %s q=%s inq=%v reason=%v min=%v;", j.Spec.ID, vj.q.name, vj.inqueue, vj.reason, vj.min)
		}
		for _, j := range v.Running() {
			vj := g.Volcano.jobs[j.Ref]
			fmt.Fprintf(&b, " running %s q=%s evict=%v nodes=%v;", j.Spec.ID, vj.q.name, vj.evictAt, j.Nodes)
		}
		for _, q := range g.Volcano.cfg.queues {
			fmt.Fprintf(&b, " queue %s alloc=%v des=%v req=%v;", q.name, q.allocated, q.deserved, q.request)
		}
		return fmt.Errorf("livelock: still scheduling at t=%v:%s", v.Now(), b.String())
	}
	err := g.Volcano.Schedule(v, p)
	for _, st := range p.Starts[n0:] {
		s := &v.Job(st.Job).Spec
		if int32(len(st.Nodes)) != s.Replicas || int32(len(st.GPUs)) != s.Replicas*s.GPUsPerReplica {
			g.bad = fmt.Sprintf("job %s started with %d nodes / %d GPUs, wants %d x %d", s.ID, len(st.Nodes), len(st.GPUs), s.Replicas, s.GPUsPerReplica)
		}
		if v.Now()%sim.Time(sim.Second) != 0 {
			g.bad = fmt.Sprintf("job %s started at %v, not at a session", s.ID, v.Now())
		}
	}
	return err
}

// Properties over random workloads: runs end; every start places the whole gang
// and happens at a session time; without preempt/reclaim no queue's running GPUs ever exceed its
// capability; the schedule does not depend on the input order of equal-time jobs.
func TestPropertyVolcano(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nNodes := rapid.IntRange(1, 6).Draw(rt, "nodes") // two leaves from 5 nodes
		nQueues := rapid.IntRange(1, 3).Draw(rt, "queues")
		evict := rapid.Bool().Draw(rt, "preemptReclaim")
		caps := make([]int, nQueues)
		var b strings.Builder
		b.WriteString("evictionGracePeriod: 3s\nqueues:\n")
		for q := range nQueues {
			caps[q] = rapid.IntRange(0, 4*nNodes).Draw(rt, fmt.Sprintf("cap%d", q)) * 2
			fmt.Fprintf(&b, "  - {name: q%d, weight: %d", q, rapid.IntRange(1, 3).Draw(rt, fmt.Sprintf("w%d", q)))
			if caps[q] > 0 {
				fmt.Fprintf(&b, ", capability: {gpu: %d}", caps[q])
			}
			b.WriteString("}\n")
		}
		if evict {
			b.WriteString(`actions: "enqueue, allocate, preempt, reclaim, backfill"` + "\n")
		}
		if rapid.Bool().Draw(rt, "hypernodes") {
			b.WriteString("networkTopology: {mode: " + rapid.SampledFrom([]string{"hard", "soft"}).Draw(rt, "mode") + "}\n")
		}
		if pl := rapid.SampledFrom([]string{"", "", "best-fit", "spread", "first-fit", "fgd"}).Draw(rt, "placement"); pl != "" {
			b.WriteString("placement: " + pl + "\n")
		}
		params := b.String()
		var jobs []sim.JobSpec
		nJobs := rapid.IntRange(1, 20).Draw(rt, "jobs")
		for i := range nJobs {
			q := rapid.IntRange(0, nQueues-1).Draw(rt, fmt.Sprintf("q%d", i))
			g := []int32{1, 2, 4, 8}[rapid.IntRange(0, 3).Draw(rt, fmt.Sprintf("g%d", i))]
			r := int32(rapid.IntRange(1, 2).Draw(rt, fmt.Sprintf("r%d", i)))
			if caps[q] > 0 && int(g*r) > caps[q] {
				g, r = 1, 1 // a job larger than its queue's capability never runs; keep runs finite either way
			}
			jobs = append(jobs, MakeJob(fmt.Sprintf("j%02d", i)).Queue(fmt.Sprintf("q%d", q)).GPUs(g).Replicas(r).
				At(float64(rapid.IntRange(0, 40).Draw(rt, fmt.Sprintf("t%d", i)))/4).
				Prio(int32(rapid.IntRange(0, 2).Draw(rt, fmt.Sprintf("p%d", i)))).
				Dur(float64(rapid.IntRange(1, 60).Draw(rt, fmt.Sprintf("d%d", i)))).Obj())
		}
		run := func(js []sim.JobSpec) (*sim.Result, string) {
			g := &gangCheck{Volcano: newVolcano(t, params), t: rt}
			c, err := sim.NewCluster(Nodes(nNodes, 8))
			if err != nil {
				rt.Fatal(err)
			}
			// With preempt, equal-share jobs of one queue can preempt each other
			// forever (drf's "equal within 1e-6" victim rule, as in Volcano); a
			// minimum run time at least every job's duration bounds the churn.
			e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: js, Policy: g, Seed: 1, PreemptMinRuntime: 60 * sim.Second})
			if err != nil {
				rt.Fatal(err)
			}
			res, err := e.Run(context.Background())
			if err != nil {
				rt.Fatalf("%v\nparams:\n%s", err, params)
			}
			if g.bad != "" {
				rt.Fatal(g.bad)
			}
			return res, Schedule(res)
		}
		res, s1 := run(jobs)
		shuffled := append([]sim.JobSpec(nil), jobs...)
		rng := rand.New(rand.NewPCG(uint64(len(jobs)), 7))
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if _, s2 := run(shuffled); s1 != s2 {
			rt.Fatalf("schedule depends on input order:\n%s\nvs\n%s", s1, s2)
		}
		if evict {
			return
		}
		used := make([]int, nQueues)
		for _, e := range res.Log {
			j := &res.Jobs[e.Job]
			var q int
			fmt.Sscanf(j.Spec.Queue, "q%d", &q)
			switch e.Kind {
			case sim.EvStart:
				used[q] += int(j.Spec.TotalGPUs())
				if caps[q] > 0 && used[q] > caps[q] {
					rt.Fatalf("t=%v queue q%d runs %d GPUs, capability %d\n%s", e.Time, q, used[q], caps[q], s1)
				}
			case sim.EvFinish, sim.EvPreempt, sim.EvKill, sim.EvTimeout:
				used[q] -= int(j.Spec.TotalGPUs())
			}
		}
	})
}
