package sim_test

import (
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// randomElastic is a policy that starts, resizes and lease-preempts elastic
// jobs at random (from rapid's draws), only at safe points, and checks at
// every scheduling point that each running elastic job holds one of its sizes.
type randomElastic struct {
	t       *rapid.T
	preempt map[sim.JobRef]int
}

func (r *randomElastic) Name() string { return "random-elastic" }

func freeGPUs(c *sim.Cluster, k int) (nodes []sim.NodeID, gpus []sim.GPUID) {
	for n := sim.NodeID(0); int(n) < c.NumNodes() && len(gpus) < k; n++ {
		a, b := c.NodeGPUs(n)
		for g := a; g < b && len(gpus) < k; g++ {
			if c.GPUUsed(g) == 0 {
				nodes = append(nodes, n)
				gpus = append(gpus, g)
			}
		}
	}
	return nodes, gpus
}

func (r *randomElastic) Schedule(v *sim.View, p *sim.Plan) error {
	now := v.Now()
	c := v.Cluster()
	used := 0
	for _, j := range v.Running() {
		if n := int32(len(j.Nodes)); !j.Spec.Elastic.Valid(n) || len(j.GPUs) != int(n) {
			r.t.Fatalf("t=%s job %s runs on %d replicas, %d GPUs (sizes %d..%d step %d)", now, j, n, len(j.GPUs), j.Spec.Elastic.Min, j.Spec.Elastic.Max, j.Spec.Elastic.Step)
		}
		for i, g := range j.GPUs {
			if c.GPUUsed(g) != sim.WholeGPU || c.GPUNode(g) != j.Nodes[i] {
				r.t.Fatalf("t=%s job %s: GPU %d (replica %d on node %d) not allocated there", now, j, g, i, j.Nodes[i])
			}
		}
		used += len(j.GPUs)
	}
	if int64(used) != c.NumGPUs()-c.FreeGPUs() {
		r.t.Fatalf("t=%s: running jobs hold %d GPUs, the cluster has %d allocated", now, used, c.NumGPUs()-c.FreeGPUs())
	}
	for _, j := range append([]*sim.Job(nil), v.Running()...) {
		if !j.Resizable(now) {
			continue
		}
		el := j.Spec.Elastic
		switch rapid.IntRange(0, 6).Draw(r.t, "act") {
		case 0: // lease end
			if r.preempt[j.Ref] < 2 {
				r.preempt[j.Ref]++
				if err := p.AddPreempt(j.Ref, sim.PreemptLease, "round"); err != nil {
					return err
				}
			}
		case 1, 2: // resize to a random size that fits
			cur := int32(len(j.Nodes))
			k := rapid.Int32Range(0, (el.Max-el.Min)/el.Step).Draw(r.t, "size")
			n := el.Min + k*el.Step
			if n == cur || n > cur && int64(n-cur) > c.FreeGPUs() {
				continue
			}
			var nodes []sim.NodeID
			var gpus []sim.GPUID
			if n > cur {
				nodes, gpus = freeGPUs(c, int(n-cur))
			}
			if err := p.AddResize(j.Ref, n, nodes, gpus); err != nil {
				return err
			}
		case 3: // a whole new placement: free GPUs first, then its own
			cur := int32(len(j.Nodes))
			k := rapid.Int32Range(0, (el.Max-el.Min)/el.Step).Draw(r.t, "size")
			n := el.Min + k*el.Step
			if n == cur || int64(n) > c.FreeGPUs()+int64(cur) {
				continue
			}
			nodes, gpus := freeGPUs(c, int(n))
			for i := 0; len(gpus) < int(n); i++ {
				nodes, gpus = append(nodes, j.Nodes[i]), append(gpus, j.GPUs[i])
			}
			if err := p.AddResize(j.Ref, n, nodes, gpus); err != nil {
				return err
			}
		}
	}
	for j := range v.Pending() {
		el := j.Spec.Elastic
		k := rapid.Int32Range(0, (el.Max-el.Min)/el.Step).Draw(r.t, "start")
		n := el.Min + k*el.Step
		if int64(n) > c.FreeGPUs() {
			n = el.Min
		}
		if int64(n) > c.FreeGPUs() {
			continue
		}
		nodes, gpus := freeGPUs(c, int(n))
		if err := p.AddStart(j.Ref, nodes, gpus); err != nil {
			return err
		}
	}
	if len(v.Running()) > 0 {
		p.Wake(now.Add(sim.Seconds(float64(rapid.IntRange(1, 40).Draw(r.t, "wake")))))
	}
	return nil
}

// TestElasticProperties: for random elastic jobs under random starts, resizes
// (in place or to a whole new placement) and lease ends, every job completes, resizes happen only at safe points
// (never within the start-up restore or the previous rescale delay), every
// running size is one of the job's sizes, and work is conserved: the
// productive wall time of each stretch times its rate sums to the job's work.
func TestElasticProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		nj := rapid.IntRange(1, 6).Draw(rt, "jobs")
		var jobs []sim.JobSpec
		for i := range nj {
			lo := rapid.Int32Range(1, 3).Draw(rt, "min")
			step := rapid.Int32Range(1, 2).Draw(rt, "step")
			hi := lo + step*rapid.Int32Range(0, 3).Draw(rt, "k")
			pref := lo + step*rapid.Int32Range(0, (hi-lo)/step).Draw(rt, "pref")
			s := elasticJob(string(rune('a'+i)), pref, lo, hi, step, float64(rapid.IntRange(1, 500).Draw(rt, "dur")))
			s.Submit = sim.Time(sim.Seconds(float64(rapid.IntRange(0, 100).Draw(rt, "submit"))))
			jobs = append(jobs, s)
		}
		delay := sim.Seconds(float64(rapid.IntRange(0, 20).Draw(rt, "delay")))
		restore := sim.Seconds(float64(rapid.IntRange(0, 20).Draw(rt, "restore")))
		pol := &randomElastic{t: rt, preempt: map[sim.JobRef]int{}}
		res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(2, 4)), Jobs: jobs, Policy: pol,
			RescaleDelay: &delay, CheckpointRestore: restore})
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if j.State != sim.StateCompleted || j.Done != j.Spec.Duration {
				rt.Fatalf("job %s: %s with %s of %s done", j, j.State, j.Done, j.Spec.Duration)
			}
			segs := res.Elastic.Segs[i]
			el := j.Spec.Elastic
			var work float64
			prevDelay := sim.Duration(0) // delay of the stretch that ends at segs[k]
			for k, g := range segs {
				if g.Replicas != 0 && !el.Valid(g.Replicas) {
					rt.Fatalf("job %s: %d replicas at %s", j, g.Replicas, g.At)
				}
				var d sim.Duration
				switch {
				case g.Replicas == 0:
				case k > 0 && segs[k-1].Replicas != 0: // a resize
					if g.At-segs[k-1].At < sim.Time(prevDelay) {
						rt.Fatalf("job %s resized at %s, %s after its previous (re)start, inside its %s delay", j, g.At, sim.Duration(g.At-segs[k-1].At), prevDelay)
					}
					d = delay
				case k > 0: // a restart after a lease end
					d = restore
				}
				prevDelay = d
				if g.Replicas == 0 {
					continue
				}
				if k+1 == len(segs) {
					rt.Fatalf("job %s: no stop segment after %s", j, g.At)
				}
				wall := sim.Duration(segs[k+1].At - g.At)
				work += float64(max(0, wall-d)) * float64(g.Replicas) / float64(j.Spec.Replicas)
			}
			if tol := float64(2 * len(segs)); math.Abs(work-float64(j.Spec.Duration)) > tol+float64(el.Max) {
				rt.Fatalf("job %s: %v µs of work from its stretches, its work is %d µs", j, work, j.Spec.Duration)
			}
		}
	})
}
