package fgd

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

var oneGPUTarget = &TargetWorkload{Shapes: []Shape{{CPUMilli: 1000, GPUs: 1, GPUMilli: 1000}}, Freq: []float64{1}}

func newPlacer(t *testing.T, c *sim.Cluster, policy string, tw *TargetWorkload) *Placer {
	t.Helper()
	p, err := NewPlacer(c, policy, tw, 1)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func place(t *testing.T, p *Placer, j sim.JobSpec) Placement {
	t.Helper()
	pl, ok, err := p.PlaceAndCommit(&j)
	if err != nil || !ok {
		t.Fatalf("pod %s: ok=%v err=%v", j.ID, ok, err)
	}
	return pl
}

func TestPlacerHandScenarios(t *testing.T) {
	// best-fit: node t4-b has one GPU used, so a 1-GPU pod leaves less free there.
	c := handCluster(t)
	p := newPlacer(t, c, BestFit, oneGPUTarget)
	place(t, p, sim.JobSpec{ID: "x", Replicas: 1, CPUMilli: 1000, GPUsPerReplica: 1, GPUMilli: 1000})
	var used sim.NodeID = -1
	for n := sim.NodeID(0); n < 3; n++ {
		if p.c.NodeFreeGPUs(n) < p.c.Node(n).GPUs {
			used = n
		}
	}
	pl := place(t, p, sim.JobSpec{ID: "y", Replicas: 1, CPUMilli: 1000, GPUsPerReplica: 1, GPUMilli: 1000})
	if pl.Node != used {
		t.Errorf("best-fit put the second pod on node %d, want the used node %d", pl.Node, used)
	}

	// gpu-packing: a fractional pod goes to the already shared GPU.
	c = handCluster(t)
	mustAlloc(t, c, 2, []sim.GPUID{4 + 5}, 400, 1000) // G2 GPU 5 has 600 left
	p = newPlacer(t, c, GPUPacking, oneGPUTarget)
	pl = place(t, p, sim.JobSpec{ID: "f", Replicas: 1, CPUMilli: 1000, GPUsPerReplica: 1, GPUMilli: 500})
	if pl.Node != 2 || len(pl.GPUs) != 1 || pl.GPUs[0] != 9 {
		t.Errorf("gpu-packing: %+v, want node 2 GPU 9", pl)
	}

	// fgd: with 1-GPU tasks as the target, a 300-milli pod goes onto the GPU with a
	// 500 sliver (frag 500 -> 200) rather than opening a whole GPU.
	c = handCluster(t)
	mustAlloc(t, c, 1, []sim.GPUID{3}, 500, 1000) // t4-b GPU 3: 500 left; GPU 2 whole
	p = newPlacer(t, c, FGD, oneGPUTarget)
	pl = place(t, p, sim.JobSpec{ID: "f", Replicas: 1, CPUMilli: 1000, GPUsPerReplica: 1, GPUMilli: 300})
	if pl.Node != 1 || pl.GPUs[0] != 3 {
		t.Errorf("fgd: %+v, want node 1 GPU 3", pl)
	}
	if f := p.Frag().FragMilli; f != 200 {
		t.Errorf("fgd: cluster frag after %v, want 200", f)
	}

	// gpu-clustering: a whole-GPU pod joins the node running only whole-1-GPU pods.
	c = handCluster(t)
	p = newPlacer(t, c, GPUClustering, oneGPUTarget)
	if err := p.Commit(&sim.JobSpec{ID: "w", Replicas: 1, CPUMilli: 1, GPUsPerReplica: 1, GPUMilli: 1000}, Placement{Node: 1, GPUs: []sim.GPUID{2}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Commit(&sim.JobSpec{ID: "s", Replicas: 1, CPUMilli: 1, GPUsPerReplica: 1, GPUMilli: 100}, Placement{Node: 2, GPUs: []sim.GPUID{4}}); err != nil {
		t.Fatal(err)
	}
	pl = place(t, p, sim.JobSpec{ID: "w2", Replicas: 1, CPUMilli: 1, GPUsPerReplica: 1, GPUMilli: 1000})
	if pl.Node != 1 || pl.GPUs[0] != 3 {
		t.Errorf("gpu-clustering: %+v, want node 1 GPU 3", pl)
	}
	// and a share pod joins the node with the share pod (its GPU with room).
	pl = place(t, p, sim.JobSpec{ID: "s2", Replicas: 1, CPUMilli: 1, GPUsPerReplica: 1, GPUMilli: 100})
	if pl.Node != 2 || pl.GPUs[0] != 4 {
		t.Errorf("gpu-clustering share: %+v, want node 2 GPU 4 (best fit)", pl)
	}

	// dot-product: the node whose free (CPU, GPU) is least aligned with the request
	// (smallest dot product) wins: the T4 nodes over the big G2 node.
	c = handCluster(t)
	p = newPlacer(t, c, DotProduct, oneGPUTarget)
	pl = place(t, p, sim.JobSpec{ID: "d", Replicas: 1, CPUMilli: 4000, GPUsPerReplica: 1, GPUMilli: 1000})
	if pl.Node == 2 {
		t.Errorf("dot-product chose the big node: %+v", pl)
	}

	// Whole-GPU pods take the lowest-indexed free GPUs.
	c = handCluster(t)
	mustAlloc(t, c, 2, []sim.GPUID{5}, 1000, 1)
	p = newPlacer(t, c, BestFit, oneGPUTarget)
	pl = place(t, p, sim.JobSpec{ID: "m", Replicas: 1, CPUMilli: 1, GPUsPerReplica: 4, GPUMilli: 1000})
	if pl.Node != 2 || len(pl.GPUs) != 4 || pl.GPUs[0] != 4 || pl.GPUs[1] != 6 || pl.GPUs[3] != 8 {
		t.Errorf("whole GPUs: %+v", pl)
	}
}

func TestPlacerFeasibilityAndBadInput(t *testing.T) {
	for _, pol := range Policies() {
		c := handCluster(t)
		p := newPlacer(t, c, pol, oneGPUTarget)
		no := []sim.JobSpec{
			{ID: "big", Replicas: 1, GPUsPerReplica: 16, GPUMilli: 1000},
			{ID: "model", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000, GPUModels: []string{"A100"}},
			{ID: "cpu", Replicas: 1, CPUMilli: 200000},
			{ID: "mem", Replicas: 1, MemoryMiB: 1 << 30},
			{ID: "t4x4", Replicas: 1, GPUsPerReplica: 4, GPUMilli: 1000, GPUModels: []string{"T4"}},
		}
		for _, j := range no {
			if _, ok, err := p.Place(&j); ok || err != nil {
				t.Errorf("%s: pod %s: ok=%v err=%v, want no placement", pol, j.ID, ok, err)
			}
		}
		bad := []*sim.JobSpec{
			nil,
			{ID: "gang", Replicas: 2, GPUsPerReplica: 1, GPUMilli: 1000},
			{ID: "frac2", Replicas: 1, GPUsPerReplica: 2, GPUMilli: 500},
			{ID: "zero", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 0},
			{ID: "over", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1001},
			{ID: "neg", Replicas: 1, CPUMilli: -1},
		}
		for _, j := range bad {
			if _, _, err := p.Place(j); err == nil {
				t.Errorf("%s: bad pod %+v accepted", pol, j)
			}
			if _, _, err := p.PlaceAndCommit(j); err == nil {
				t.Errorf("%s: bad pod %+v committed", pol, j)
			}
		}
		// A model-constrained pod lands on an allowed model only.
		pl := place(t, p, sim.JobSpec{ID: "g2", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 300, GPUModels: []string{"G2"}})
		if pl.Node != 2 {
			t.Errorf("%s: G2-only pod on node %d", pol, pl.Node)
		}
		// Commit refuses a placement the cluster cannot hold and changes nothing.
		before := c.AllocatedMilli()
		j := sim.JobSpec{ID: "w", Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000}
		if err := p.Commit(&j, Placement{Node: 0, GPUs: []sim.GPUID{5}}); err == nil {
			t.Errorf("%s: commit of a GPU on another node accepted", pol)
		}
		if err := p.Commit(&j, Placement{Node: 0}); err == nil {
			t.Errorf("%s: commit without GPUs accepted", pol)
		}
		if c.AllocatedMilli() != before {
			t.Errorf("%s: failed commit changed the cluster", pol)
		}
	}
	if _, err := NewPlacer(nil, FGD, oneGPUTarget, 1); err == nil {
		t.Error("nil cluster accepted")
	}
	if _, err := NewPlacer(handCluster(t), "tetris", oneGPUTarget, 1); err == nil {
		t.Error("unknown policy accepted")
	}
	if _, err := NewPlacer(handCluster(t), FGD, nil, 1); err == nil {
		t.Error("nil target accepted")
	}
}

// randomCluster builds a small heterogeneous cluster.
func randomCluster(t *testing.T, rng *rand.Rand) *sim.Cluster {
	t.Helper()
	models := []string{"T4", "G2", "V100M16"}
	var nodes []sim.NodeSpec
	for i := 0; i < 12; i++ {
		g := []int32{1, 2, 4, 8}[rng.IntN(4)]
		nodes = append(nodes, sim.NodeSpec{
			Name: string(rune('a' + i)), GPUModel: models[rng.IntN(len(models))], GPUs: g,
			CPUMilli: int64(g) * 8000, MemoryMiB: int64(g) * 32768, NVLinkDomain: -1,
		})
	}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func randomPod(rng *rand.Rand, i int) sim.JobSpec {
	j := sim.JobSpec{ID: sim.JobID(rune(i)), Replicas: 1, CPUMilli: int64(rng.IntN(6)) * 1000, MemoryMiB: int64(rng.IntN(4)) * 8192}
	switch rng.IntN(4) {
	case 0: // CPU-only
	case 1:
		j.GPUsPerReplica, j.GPUMilli = 1, sim.MilliGPU([]int{100, 250, 470, 810}[rng.IntN(4)])
	case 2:
		j.GPUsPerReplica, j.GPUMilli = 1, sim.WholeGPU
	default:
		j.GPUsPerReplica, j.GPUMilli = int32([]int{2, 4, 8}[rng.IntN(3)]), sim.WholeGPU
	}
	if rng.IntN(5) == 0 && j.GPUsPerReplica > 0 {
		j.GPUModels = []string{"T4", "G2"}[:1+rng.IntN(2)]
	}
	return j
}

// TestPlacerIncrementalMatchesNaive checks the Placer's incremental bookkeeping
// against recomputation after every placement: the node mirror equals the cluster,
// the running fragmentation sum equals a fresh Measure.Cluster and the authors'
// per-shape formula, and every still-valid cached score equals a fresh evaluation.
func TestPlacerIncrementalMatchesNaive(t *testing.T) {
	for _, pol := range Policies() {
		rng := rand.New(rand.NewPCG(7, uint64(len(pol))))
		c := randomCluster(t, rng)
		var pods []sim.JobSpec
		for i := 0; i < 300; i++ {
			pods = append(pods, randomPod(rng, i))
		}
		tw, err := NewTargetWorkload(pods, TargetConfig{})
		if err != nil {
			t.Fatal(err)
		}
		p := newPlacer(t, c, pol, tw)
		m, _ := NewMeasure(c, tw)
		reps := map[int32]request{}
		for i := range pods {
			r, err := p.request(&pods[i])
			if err != nil {
				t.Fatal(err)
			}
			reps[r.shape] = r
			if _, _, err := p.PlaceAndCommit(&pods[i]); err != nil {
				t.Fatal(err)
			}
			for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
				if p.cpuLeft[n] != c.NodeFreeCPU(n) || p.memLeft[n] != c.NodeFreeMemory(n) {
					t.Fatalf("%s: node %d mirror CPU/mem out of sync", pol, n)
				}
				first, end := c.NodeGPUs(n)
				left := make([]int32, 0, end-first)
				for g := first; g < end; g++ {
					if p.left[g] != int32(sim.WholeGPU-c.GPUUsed(g)) {
						t.Fatalf("%s: GPU %d mirror out of sync", pol, g)
					}
					left = append(left, p.left[g])
				}
				naive := naiveNodeFrag(tw, c.Node(n).GPUModel, c.NodeFreeCPU(n), left)
				if math.Abs(p.frag[n]-naive) > 1e-6 {
					t.Fatalf("%s: node %d frag %v, naive %v", pol, n, p.frag[n], naive)
				}
			}
			got, want := p.Frag(), m.Cluster(c)
			if math.Abs(got.FragMilli-want.FragMilli) > 1e-6 || math.Abs(got.IdleMilli-want.IdleMilli) > 1e-6 {
				t.Fatalf("%s: incremental frag %+v, recomputed %+v", pol, got, want)
			}
			for s := range p.cache {
				r, ok := reps[int32(s)]
				if !ok {
					t.Fatalf("%s: shape %d has no request", pol, s)
				}
				for n, e := range p.cache[s] {
					if e.ver != p.ver[n] {
						continue
					}
					fresh := p.evaluate(&r, sim.NodeID(n))
					fresh.ver = e.ver
					if fresh != e {
						t.Fatalf("%s: shape %d node %d cached %+v, fresh %+v", pol, s, n, e, fresh)
					}
				}
			}
		}
		// Sync after an outside change drops the caches and re-reads the node.
		var roomy sim.NodeID
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			if c.NodeFreeCPU(n) > c.NodeFreeCPU(roomy) {
				roomy = n
			}
		}
		mustAlloc(t, c, roomy, nil, 0, 1)
		p.SyncNode(roomy)
		if p.cpuLeft[roomy] != c.NodeFreeCPU(roomy) {
			t.Fatalf("%s: SyncNode did not re-read the node", pol)
		}
		p.Sync()
		if got, want := p.Frag(), m.Cluster(c); math.Abs(got.FragMilli-want.FragMilli) > 1e-6 {
			t.Fatalf("%s: after Sync frag %+v, recomputed %+v", pol, got, want)
		}
	}
}

func TestRandomPolicyIsUniformOverFeasible(t *testing.T) {
	seen := map[sim.NodeID]int{}
	for seed := uint64(0); seed < 200; seed++ {
		c := handCluster(t)
		p, err := NewPlacer(c, Random, oneGPUTarget, seed)
		if err != nil {
			t.Fatal(err)
		}
		j := sim.JobSpec{ID: "r", Replicas: 1, CPUMilli: 1, GPUsPerReplica: 1, GPUMilli: 200}
		pl, ok, err := p.Place(&j)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		seen[pl.Node]++
	}
	for n := sim.NodeID(0); n < 3; n++ {
		if seen[n] < 40 {
			t.Errorf("random chose node %d only %d of 200 times: %v", n, seen[n], seen)
		}
	}
}
