package reports

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// fifo is a strict FIFO test policy: it starts the head job when every replica
// fits on a distinct node (first nodes with enough whole free GPUs), else waits.
type fifo struct{}

func (fifo) Name() string { return "fifo-test" }

func (fifo) Schedule(v *sim.View, p *sim.Plan) error {
	c := v.Cluster()
	free := make([]int32, c.NumNodes())
	used := make([]bool, c.NumGPUs())
	for n := range free {
		free[n] = c.NodeFreeGPUs(sim.NodeID(n))
	}
	for g := range used {
		used[g] = c.GPUUsed(sim.GPUID(g)) != 0
	}
	// The next job is read before AddStart: the engine may apply a start at once,
	// unlinking the job from the pending list.
	for j, next := v.PendingHead(), (*sim.Job)(nil); j != nil; j = next {
		next = v.NextPending(j)
		var nodes []sim.NodeID
		var gpus []sim.GPUID
		for n := 0; n < len(free) && len(nodes) < int(j.Spec.Replicas); n++ {
			if free[n] < j.Spec.GPUsPerReplica {
				continue
			}
			nodes = append(nodes, sim.NodeID(n))
			first, end := c.NodeGPUs(sim.NodeID(n))
			k := int32(0)
			for g := first; g < end && k < j.Spec.GPUsPerReplica; g++ {
				if !used[g] {
					gpus = append(gpus, g)
					k++
				}
			}
		}
		if len(nodes) < int(j.Spec.Replicas) {
			return nil
		}
		for _, n := range nodes {
			free[n] -= j.Spec.GPUsPerReplica
		}
		for _, g := range gpus {
			used[g] = true
		}
		if err := p.AddStart(j.Ref, nodes, gpus); err != nil {
			return err
		}
	}
	return nil
}

func testCluster(t testing.TB, nodes, gpus int) *sim.Cluster {
	t.Helper()
	specs := make([]sim.NodeSpec, nodes)
	for i := range specs {
		specs[i] = sim.NodeSpec{Name: "n" + string(rune('0'+i%10)) + string(rune('a'+i/10)), GPUModel: "a100", GPUs: int32(gpus),
			CPUMilli: 1 << 20, MemoryMiB: 1 << 20, NVLinkDomain: -1}
	}
	c, err := sim.NewCluster(specs)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func job(id string, submit, dur float64, replicas, gpr int32, class sim.JobClass, queue, user string) sim.JobSpec {
	return sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sim.Seconds(submit)), Duration: sim.Seconds(dur),
		Replicas: replicas, GPUsPerReplica: gpr, GPUMilli: 1000, Class: class, Queue: queue, User: user}
}

// smallResult runs the hand-computed scenario documented in TestSummarizeSmall.
func smallResult(t testing.TB) *sim.Result {
	t.Helper()
	jobs := []sim.JobSpec{
		job("j1", 0, 100, 1, 4, sim.ClassTraining, "q1", "alice"),
		job("j2", 0, 50, 1, 4, sim.ClassExperiment, "q2", "bob"),
		job("j3", 10, 20, 2, 4, sim.ClassTraining, "q1", "alice"),
		job("j4", 20, 5, 1, 1, sim.ClassExperiment, "q2", "bob"),
		job("j5", 30, 5, 4, 4, sim.ClassServing, "q3", "carol"), // never fits
	}
	e, err := sim.NewEngine(sim.Config{Cluster: testCluster(t, 2, 4), Jobs: jobs, Policy: fifo{},
		Seed: 1, SampleInterval: 10 * sim.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func nanF() float64 { var z float64; return z / z }

// greedy is a non-strict FIFO: it starts every pending job that fits, in queue
// order (a job that does not fit does not block later ones).
type greedy struct{}

func (greedy) Name() string { return "greedy-test" }

func (greedy) Schedule(v *sim.View, p *sim.Plan) error {
	for j, next := v.PendingHead(), (*sim.Job)(nil); j != nil; j = next {
		next = v.NextPending(j)
		nodes, gpus, ok := fitFirst(v.Cluster(), j)
		if !ok {
			continue
		}
		if err := p.AddStart(j.Ref, nodes, gpus); err != nil {
			return err
		}
	}
	return nil
}

// fitFirst places j's replicas on the first nodes with enough whole free GPUs
// (the engine applies starts at once, so the cluster state is current).
func fitFirst(c *sim.Cluster, j *sim.Job) ([]sim.NodeID, []sim.GPUID, bool) {
	var nodes []sim.NodeID
	var gpus []sim.GPUID
	for n := 0; n < c.NumNodes() && len(nodes) < int(j.Spec.Replicas); n++ {
		if c.NodeFreeGPUs(sim.NodeID(n)) < j.Spec.GPUsPerReplica {
			continue
		}
		nodes = append(nodes, sim.NodeID(n))
		first, end := c.NodeGPUs(sim.NodeID(n))
		k := int32(0)
		for g := first; g < end && k < j.Spec.GPUsPerReplica; g++ {
			if c.GPUUsed(g) == 0 {
				gpus = append(gpus, g)
				k++
			}
		}
	}
	return nodes, gpus, len(nodes) == int(j.Spec.Replicas)
}

// mixedResult runs a 40-job workload on 4 nodes x 8 GPUs; seed varies the job
// sizes and durations deterministically.
func mixedResult(t testing.TB, pol sim.Policy, seed uint64) *sim.Result {
	t.Helper()
	rng := sim.Stream(seed, "test")
	classes := []sim.JobClass{sim.ClassTraining, sim.ClassExperiment, sim.ClassBatchInference}
	var jobs []sim.JobSpec
	for i := range 40 {
		c := classes[i%3]
		gpr := int32(1 + rng.IntN(8))
		rep := int32(1)
		if c == sim.ClassTraining && i%2 == 0 {
			rep, gpr = 2, 8
		}
		jobs = append(jobs, job(fmt.Sprintf("job-%02d", i), float64(i*300), float64(600+rng.IntN(7200)), rep, gpr, c,
			[]string{"research", "prod"}[i%2], []string{"alice", "bob", "carol"}[i%3]))
	}
	e, err := sim.NewEngine(sim.Config{Cluster: testCluster(t, 4, 8), Jobs: jobs, Policy: pol, Seed: seed,
		SampleInterval: 60 * sim.Second})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}
