package placement_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	. "github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
	"github.com/gpusim/gpusim/workloads"
)

// dgx returns n DGX-H100-like nodes (8 GPUs on NVSwitch, PCIe pairs, 4-GPU
// sockets), perLeaf nodes per leaf, leavesPerSpine leaves per spine (0 = one spine).
func dgx(n, perLeaf, leavesPerSpine int) []sim.NodeSpec {
	out := make([]sim.NodeSpec, n)
	for i := range out {
		out[i] = sim.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUModel: "H100-SXM-80GB", GPUs: 8, CPUMilli: 224000, MemoryMiB: 2 << 20,
			NVLinkSize: 8, PCIeSize: 2, SocketSize: 4, NVLinkDomain: -1, Leaf: int32(i / perLeaf)}
		if leavesPerSpine > 0 {
			out[i].Spine = int32(i / perLeaf / leavesPerSpine)
		}
	}
	return out
}

func mustPlacer(t testing.TB, name string) Placer {
	t.Helper()
	p, err := New(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func job(replicas, gpus int32) *sim.Job {
	return &sim.Job{Spec: sim.JobSpec{ID: "j", Replicas: replicas, GPUsPerReplica: gpus, GPUMilli: sim.WholeGPU, CPUMilli: 1000, MemoryMiB: 1024, Class: sim.ClassTraining}}
}

// use marks GPUs busy (whole) on the cluster.
func use(t testing.TB, c *sim.Cluster, gpus ...sim.GPUID) {
	t.Helper()
	for _, g := range gpus {
		if err := c.Allocate(c.GPUNode(g), []sim.GPUID{g}, sim.WholeGPU, 0, 0); err != nil {
			t.Fatal(err)
		}
	}
}

func nodesOf(pl *Placement) []sim.NodeID {
	var ns []sim.NodeID
	for _, n := range pl.Nodes {
		if !slices.Contains(ns, n) {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns
}

// checkPlacement verifies a placement is valid for j on c.
func checkPlacement(t testing.TB, c *sim.Cluster, j *sim.Job, pl *Placement) {
	t.Helper()
	s := &j.Spec
	if int32(len(pl.Nodes)) != s.Replicas || int32(len(pl.GPUs)) != s.TotalGPUs() {
		t.Fatalf("placement has %d nodes, %d GPUs for %dx%d", len(pl.Nodes), len(pl.GPUs), s.Replicas, s.GPUsPerReplica)
	}
	model := -1
	perNode := map[sim.NodeID]int64{}
	for r, n := range pl.Nodes {
		perNode[n]++
		if s.GPUsPerReplica > 0 && model >= 0 && c.NodeModel(n) != model {
			t.Fatalf("gang mixes GPU models")
		}
		model = c.NodeModel(n)
		for _, g := range pl.GPUs[r*int(s.GPUsPerReplica) : (r+1)*int(s.GPUsPerReplica)] {
			if c.GPUNode(g) != n || c.GPUUsed(g) != 0 {
				t.Fatalf("GPU %d not free on node %d", g, n)
			}
		}
	}
	seen := map[sim.GPUID]bool{}
	for _, g := range pl.GPUs {
		if seen[g] {
			t.Fatalf("GPU %d given twice", g)
		}
		seen[g] = true
	}
	for n, k := range perNode {
		if c.NodeFreeCPU(n) < k*s.CPUMilli || c.NodeFreeMemory(n) < k*s.MemoryMiB {
			t.Fatalf("node %d lacks CPU/memory for %d replicas", n, k)
		}
	}
}

// Acceptance (a): a 16-GPU gang on 4 DGX nodes under two leaves packs into one
// leaf with topology-best-fit, where first-fit and best-fit cross leaves.
func TestTopologyBestFitPacksIntoOneLeaf(t *testing.T) {
	for _, shape := range [][2]int32{{2, 8}, {4, 4}, {16, 1}} {
		c := Cluster(t, dgx(4, 2, 0))
		use(t, c, 8) // one GPU busy on node 1 (leaf 0): leaf 0 has 15 free, leaf 1 16
		j := job(shape[0], shape[1])
		var pl Placement
		if !mustPlacer(t, "topology-best-fit").Place(c, j, &pl) {
			t.Fatalf("%dx%d: not placed", shape[0], shape[1])
		}
		checkPlacement(t, c, j, &pl)
		if got := nodesOf(&pl); !slices.Equal(got, []sim.NodeID{2, 3}) {
			t.Errorf("%dx%d: topology-best-fit used nodes %v, want [2 3] (leaf 1)", shape[0], shape[1], got)
		}
		if s := workloads.PlacementSpan(c, pl.GPUs); s != sim.LevelLeaf {
			t.Errorf("%dx%d: span %s, want leaf", shape[0], shape[1], s)
		}
	}
	// Contrast: first-fit and best-fit take nodes 0 and 2, across the spine.
	for _, name := range []string{"first-fit", "best-fit"} {
		c := Cluster(t, dgx(4, 2, 0))
		use(t, c, 8)
		var pl Placement
		if !mustPlacer(t, name).Place(c, job(2, 8), &pl) {
			t.Fatal("not placed")
		}
		if s := workloads.PlacementSpan(c, pl.GPUs); s != sim.LevelSpine {
			t.Errorf("%s: span %s (nodes %v); the contrast case expects spine", name, s, nodesOf(&pl))
		}
	}
}

// Best fit among domains: the fitting leaf with the fewest free GPUs wins, and
// inside a node the smallest in-node domain (PCIe pair, then socket) is used.
func TestTopologyBestFitChoosesFewestFree(t *testing.T) {
	c := Cluster(t, dgx(4, 2, 0))
	use(t, c, 0, 1) // node 0: 6 free -> leaf 0 has 14 free, leaf 1 16
	j := job(3, 4)  // 12 GPUs: leaf 0 holds it (node 0: 1 replica, node 1: 2)
	var pl Placement
	p := mustPlacer(t, "topology-best-fit")
	if !p.Place(c, j, &pl) {
		t.Fatal("not placed")
	}
	checkPlacement(t, c, j, &pl)
	if got := nodesOf(&pl); !slices.Equal(got, []sim.NodeID{0, 1}) {
		t.Errorf("nodes %v, want [0 1] (leaf 0, fewest free)", got)
	}
	// In-node GPU choice: node 0 has GPUs 2..7 free; a 2-GPU job takes the free
	// PCIe pair with the fewest free GPUs (2,3), a 1-GPU job after GPU 2 is taken
	// takes its buddy 3.
	c = Cluster(t, dgx(1, 1, 0))
	use(t, c, 0, 1, 4)
	if !p.Place(c, job(1, 2), &pl) || !slices.Equal(pl.GPUs, []sim.GPUID{2, 3}) {
		t.Errorf("2-GPU job got GPUs %v, want [2 3]", pl.GPUs)
	}
	use(t, c, 2)
	if !p.Place(c, job(1, 1), &pl) || !slices.Equal(pl.GPUs, []sim.GPUID{3}) {
		t.Errorf("1-GPU job got GPUs %v, want [3]", pl.GPUs)
	}
	// A 3-GPU job fits no pair; the socket 4..7 has 3 free (socket 0..3 only 1).
	if !p.Place(c, job(1, 3), &pl) || !slices.Equal(pl.GPUs, []sim.GPUID{5, 6, 7}) {
		t.Errorf("3-GPU job got GPUs %v, want [5 6 7]", pl.GPUs)
	}
}

// Acceptance (b): a fragmented cluster blocks a gang that total free capacity
// would fit; the job waits with sim.ReasonTopology and starts when a node frees.
func TestFragmentationWaitsWithTopologyReason(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("A").GPUs(5).Dur(100).Obj(),
		MakeJob("B").GPUs(5).Dur(100).Obj(),
		MakeJob("C").GPUs(5).Dur(100).Obj(),
		MakeJob("D").GPUs(5).Dur(200).Obj(),
		MakeJob("G").GPUs(8).Dur(50).At(1).Obj(), // 12 GPUs free at t=1, but at most 3 per node
	}
	for _, pl := range []string{"topology-best-fit", "tas:required=node", "hived", "binpack:gpu=1"} {
		t.Run(pl, func(t *testing.T) {
			pol, err := policies.New("fifo", yamlParams(t, "placement: "+pl))
			if err != nil {
				t.Fatal(err)
			}
			res := Run(t, Nodes(4, 8), pol, jobs...)
			log := Schedule(res)
			if !strings.Contains(log, "t=1 wait G topology") {
				t.Errorf("G should wait for topology:\n%s", log)
			}
			if st := Starts(res)["G"]; st != 100 {
				t.Errorf("G started at %g, want 100\n%s", st, log)
			}
		})
	}
	// Kueue TAS required=leaf: one free node in each leaf (16 free) does not hold a
	// 2x8 gang that must stay in one leaf; preferred=leaf spreads it.
	c := Cluster(t, dgx(4, 2, 0))
	use(t, c, 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23)
	j := job(2, 8)
	var pl Placement
	if mustPlacer(t, "tas:required=leaf").Place(c, j, &pl) {
		t.Fatalf("required=leaf placed across leaves: %v", pl.Nodes)
	}
	if r := WhyNot(c, j); r != sim.ReasonTopology {
		t.Errorf("reason %s, want topology", r)
	}
	if !mustPlacer(t, "tas:preferred=leaf").Place(c, j, &pl) {
		t.Fatal("preferred=leaf did not spread")
	}
	checkPlacement(t, c, j, &pl)
	if got := nodesOf(&pl); !slices.Equal(got, []sim.NodeID{1, 3}) {
		t.Errorf("preferred=leaf nodes %v, want [1 3]", got)
	}
}

func yamlParams(t testing.TB, s string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0]
}

// Acceptance (c): on a mixed synthetic workload with the speed model on,
// spreading gangs (spread) crosses leaves more often than packing them (best-fit,
// topology-best-fit): the mean communication slowdown, the mean run-time stretch
// (run time / reference duration, the speed model's effect alone) and the mean
// JCT are all higher. topology-best-fit crosses leaves no more than best-fit.
func TestSpeedModelPackVsSpread(t *testing.T) {
	c := Cluster(t, dgx(16, 4, 0))
	syn := workloads.DefaultSynthetic()
	syn.Jobs = 600
	syn.Load = 0.7
	syn.SetDefaults()
	jobs, err := syn.Generate(7, c.NumGPUs(), c.MaxGPUsPerNode())
	if err != nil {
		t.Fatal(err)
	}
	sm, err := workloads.NewSpeedModel(workloads.SpeedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	type out struct{ jct, stretch, slow, cross float64 }
	run := func(placement string) out {
		pol, err := policies.New("easy-backfill", yamlParams(t, "placement: "+placement))
		if err != nil {
			t.Fatal(err)
		}
		rec := &spanRecorder{Policy: pol, sm: sm}
		res := RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: rec, Seed: 1, Speed: sm, NoLog: true})
		var o out
		n := 0
		for i := range res.Jobs {
			j := &res.Jobs[i]
			o.jct += (j.End - j.Spec.Submit).Seconds() / float64(len(res.Jobs))
			if j.State == sim.StateCompleted && j.Preempted == 0 && j.Spec.Duration > 0 {
				o.stretch += float64(j.End-j.FirstStart) / float64(j.Spec.Duration)
				n++
			}
		}
		o.stretch /= float64(n)
		o.slow = rec.slow / float64(rec.multi)
		o.cross = float64(rec.cross) / float64(rec.multi)
		return o
	}
	pack, bf, spr := run("topology-best-fit"), run("best-fit"), run("spread")
	for _, x := range []struct {
		name string
		o    out
	}{{"topology-best-fit", pack}, {"best-fit", bf}, {"spread", spr}} {
		t.Logf("%-17s mean JCT %5.0f s, run-time stretch %.4f, multi-GPU jobs: mean slowdown %.4f, %4.1f%% cross leaves",
			x.name, x.o.jct, x.o.stretch, x.o.slow, 100*x.o.cross)
	}
	for _, p := range []struct {
		name string
		o    out
	}{{"topology-best-fit", pack}, {"best-fit", bf}} {
		if !(spr.slow > p.o.slow && spr.cross > p.o.cross && spr.stretch > p.o.stretch && spr.jct > p.o.jct) {
			t.Errorf("spread should be slower than %s: %+v, spread %+v", p.name, p.o, spr)
		}
	}
	if !(pack.slow <= bf.slow && pack.cross <= bf.cross) {
		t.Errorf("topology-best-fit should cross leaves no more than best-fit: %+v vs %+v", pack, bf)
	}
}

// spanRecorder wraps a policy and records, at every start, the placement's
// communication slowdown and whether it crosses leaves (multi-GPU jobs only).
type spanRecorder struct {
	sim.Policy
	sm           *workloads.SpeedModel
	slow         float64
	multi, cross int
}

func (r *spanRecorder) Observe(v *sim.View, e sim.Event) {
	if o, ok := r.Policy.(sim.Observer); ok {
		o.Observe(v, e)
	}
	if e.Kind != sim.EvStart {
		return
	}
	j := v.Job(e.Job)
	if len(j.GPUs) < 2 {
		return
	}
	r.multi++
	r.slow += r.sm.Slowdown(v.Cluster(), j)
	if workloads.PlacementSpan(v.Cluster(), j.GPUs) > sim.LevelLeaf {
		r.cross++
	}
}

// HiveD buddy allocation: free cells under used parents go first, larger free
// cells are split only when needed.
func TestHivedBuddyCells(t *testing.T) {
	c := Cluster(t, dgx(2, 2, 0))
	if got := CellChain(c); !slices.Equal(got, []sim.Level{sim.LevelPCIe, sim.LevelSocket, sim.LevelNVLink, sim.LevelLeaf}) {
		t.Errorf("DGX cell chain %v (NVLink = node on a DGX)", got)
	}
	var nvl []sim.NodeSpec
	for i := range 36 {
		nvl = append(nvl, sim.NodeSpec{Name: fmt.Sprintf("t%d", i), GPUModel: "B200", GPUs: 4, NVLinkSize: 4, PCIeSize: 2, SocketSize: 2,
			NVLinkDomain: int32(1 + i/18), Leaf: int32(i / 18)})
	}
	if got := CellChain(Cluster(t, nvl)); !slices.Equal(got, []sim.Level{sim.LevelPCIe, sim.LevelNode, sim.LevelNVLink, sim.LevelSpine}) {
		t.Errorf("NVL72 cell chain %v", got)
	}
	p := mustPlacer(t, "hived")
	var pl Placement
	step := func(j *sim.Job, want ...sim.GPUID) {
		t.Helper()
		if !p.Place(c, j, &pl) {
			t.Fatalf("%dx%d not placed", j.Spec.Replicas, j.Spec.GPUsPerReplica)
		}
		if !slices.Equal(pl.GPUs, want) {
			t.Fatalf("%dx%d got GPUs %v, want %v", j.Spec.Replicas, j.Spec.GPUsPerReplica, pl.GPUs, want)
		}
		use(t, c, pl.GPUs...)
	}
	step(job(1, 1), 0)          // everything free: lowest cell
	step(job(1, 1), 1)          // buddy of the used GPU 0
	step(job(1, 2), 2, 3)       // PCIe pair whose socket is in use
	step(job(1, 4), 4, 5, 6, 7) // socket whose node is in use
	step(job(1, 2), 8, 9)       // node 0 full: split node 1
	step(job(2, 1), 10, 11)     // 2 GPUs: the free pair under the used socket
	// Fragment node 1: GPUs 12 and 14 busy, 13 and 15 free: no free pair left.
	use(t, c, 12, 14)
	if mustPlacer(t, "hived:strict=true").Place(c, job(1, 2), &pl) {
		t.Errorf("strict hived placed a 2-GPU job without a free cell: %v", pl.GPUs)
	}
	if !p.Place(c, job(1, 2), &pl) || !slices.Equal(pl.GPUs, []sim.GPUID{13, 15}) {
		t.Errorf("non-strict hived: got %v, want [13 15]", pl.GPUs)
	}
}

// Volcano binpack: score = sum w_r (used_r+req_r)/alloc_r / sum w_r x 100, GPUs
// only when weighted; highest score, ties lowest node id.
func TestBinpackScoring(t *testing.T) {
	nodes := dgx(3, 4, 0)
	c := Cluster(t, nodes)
	// node 1: 4 GPUs used; node 2: lots of CPU used, no GPUs.
	if err := c.Allocate(1, []sim.GPUID{8, 9, 10, 11}, sim.WholeGPU, 1000, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.Allocate(2, nil, sim.WholeGPU, 100000, 0); err != nil {
		t.Fatal(err)
	}
	j := job(1, 2)
	j.Spec.MemoryMiB = 0
	var pl Placement
	bp := mustPlacer(t, "binpack:gpu=1")
	// node 1: cpu (1000+1000)/224000, gpu (4+2)/8; node 2: cpu (100000+1000)/224000, gpu 2/8.
	for n, want := range map[sim.NodeID]float64{
		0: (1000.0/224000 + 2.0/8) / 2 * 100,
		1: (2000.0/224000 + 6.0/8) / 2 * 100,
		2: (101000.0/224000 + 2.0/8) / 2 * 100,
	} {
		if got := BinpackScore(bp, c, n, &j.Spec); fmt.Sprintf("%.9f", got) != fmt.Sprintf("%.9f", want) {
			t.Errorf("node %d score %.9f, want %.9f", n, got, want)
		}
	}
	if !bp.Place(c, j, &pl) || pl.Nodes[0] != 1 {
		t.Errorf("gpu-weighted binpack chose %v, want node 1", pl.Nodes)
	}
	// Default weights ignore GPUs (Volcano): the CPU-heavy node 2 wins.
	if !mustPlacer(t, "binpack").Place(c, j, &pl) || pl.Nodes[0] != 2 {
		t.Errorf("default binpack chose %v, want node 2", pl.Nodes)
	}
	// A gang's earlier replicas count as used: both replicas of 2x2 go to node 1.
	if !bp.Place(c, job(2, 2), &pl) || !slices.Equal(nodesOf(&pl), []sim.NodeID{1}) {
		t.Errorf("gang spread to %v, want node 1 only", pl.Nodes)
	}
}

func TestPlacerArguments(t *testing.T) {
	for _, name := range Names {
		if _, err := New(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, ok := range []string{"tas:required=leaf", "tas:preferred=nvlink,algorithm=least-free-capacity", "tas:unconstrained=true",
		"hived:strict=true", "binpack:gpu=2,cpu=0.5,memory=0", "tas:required=rack", "tas:preferred=clique"} {
		if _, err := New(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"tas:required=zone":                `required: unknown topology level "zone"`,
		"tas:required=leaf,preferred=node": "give at most one",
		"tas:algorithm=worst":              "algorithm: want best-fit or least-free-capacity",
		"tas:zone=1":                       `unknown argument "zone"`,
		"tas:required":                     "want key=value",
		"tas:required=leaf,required=node":  "required: given twice",
		"binpack:gpu=-1":                   "gpu: must be a number in 0..1e6",
		"binpack:gpu=NaN":                  "gpu: must be a number",
		"hived:strict=maybe":               "strict: must be true or false",
		"topology-best-fit:x=1":            `unknown argument "x" (this placement takes none)`,
		"best-fit:x=1":                     "best-fit takes no arguments",
		"nope":                             `unknown placement "nope"`,
	} {
		_, err := New(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", bad, err, want)
		}
	}
}

// mixedCluster: 4 DGX nodes (leaf 0), two GB200 NVL72-style racks of 4 trays x 4
// GPUs sharing NVLink (leaf 1, spine 1), 3 PCIe L40S nodes without NVLink (leaf
// 2), one CPU-only node (leaf 3, spine 2).
func mixedCluster(t testing.TB) *sim.Cluster {
	nodes := dgx(4, 4, 0)
	for i := range 8 {
		nodes = append(nodes, sim.NodeSpec{Name: fmt.Sprintf("gb%d", i), GPUModel: "B200", GPUs: 4, CPUMilli: 144000, MemoryMiB: 960 << 10,
			NVLinkSize: 4, PCIeSize: 2, SocketSize: 2, NVLinkDomain: int32(1 + i/4), Leaf: 1, Spine: 1})
	}
	for i := range 3 {
		nodes = append(nodes, sim.NodeSpec{Name: fmt.Sprintf("l%d", i), GPUModel: "L40S", GPUs: 8, CPUMilli: 8000, MemoryMiB: 1 << 20,
			NVLinkSize: 1, PCIeSize: 4, SocketSize: 4, NVLinkDomain: -1, Leaf: 2, Spine: 1})
	}
	// a CPU-only node alone in its leaf and spine (domains without GPUs)
	nodes = append(nodes, sim.NodeSpec{Name: "cpu", CPUMilli: 64000, MemoryMiB: 1 << 20, NVLinkDomain: -1, Leaf: 3, Spine: 2})
	return Cluster(t, nodes)
}

// Every topology placer, on random partial allocations of a mixed cluster, only
// returns valid placements, places whenever best-fit can (they are complete,
// except the level-constrained tas:required and hived:strict), and gives the same
// answer twice.
func TestTopologyPlacersValidAndComplete(t *testing.T) {
	names := []string{"topology-best-fit", "tas", "tas:preferred=nvlink", "tas:required=leaf", "hived", "hived:strict=true", "binpack", "binpack:gpu=1"}
	complete := map[string]bool{"topology-best-fit": true, "tas": true, "tas:preferred=nvlink": true, "hived": true, "binpack": true, "binpack:gpu=1": true}
	rng := rand.New(rand.NewPCG(1, 2))
	bf := mustPlacer(t, "best-fit")
	var pl, pl2, ref Placement
	placed := map[string]int{}
	for iter := 0; iter < 300; iter++ {
		c := mixedCluster(t)
		for g := sim.GPUID(0); int64(g) < c.NumGPUs(); g++ {
			if rng.IntN(100) < 45 {
				use(t, c, g)
			}
		}
		shapes := [][2]int32{{1, 1}, {1, 2}, {1, 3}, {1, 4}, {1, 8}, {2, 1}, {2, 4}, {3, 2}, {2, 8}, {5, 4}, {6, 1}, {3, 0}}
		sh := shapes[rng.IntN(len(shapes))]
		j := job(sh[0], sh[1])
		if rng.IntN(4) == 0 {
			j.Spec.GPUModels = []string{"B200"}
		}
		if rng.IntN(5) == 0 {
			j.Spec.CPUMilli = 5000 // L40S nodes fit one replica
		}
		want := bf.Place(c, j, &ref)
		for _, name := range names {
			p := mustPlacer(t, name)
			got := p.Place(c, j, &pl)
			if got {
				placed[name]++
				checkPlacement(t, c, j, &pl)
				if !p.Place(c, j, &pl2) || !slices.Equal(pl.GPUs, pl2.GPUs) || !slices.Equal(pl.Nodes, pl2.Nodes) {
					t.Fatalf("%s: not deterministic", name)
				}
			}
			if want && !got && complete[name] {
				t.Fatalf("iter %d %s: %dx%d not placed but best-fit places it on %v", iter, name, sh[0], sh[1], ref.Nodes)
			}
			if got && !want {
				t.Fatalf("iter %d %s: placed what best-fit cannot", iter, name)
			}
		}
	}
	t.Logf("placed per placer (of 300): %v", placed)
}

// NVL72-style racks: a 16-GPU gang stays inside one NVLink rack (the clique).
func TestTopologyBestFitNVLinkRack(t *testing.T) {
	c := mixedCluster(t)
	use(t, c, 32) // rack 1 (GPUs 32..47) has 15 free, rack 2 (48..63) 16
	j := job(4, 4)
	j.Spec.GPUModels = []string{"B200"}
	var pl Placement
	if !mustPlacer(t, "topology-best-fit").Place(c, j, &pl) {
		t.Fatal("not placed")
	}
	if s := workloads.PlacementSpan(c, pl.GPUs); s != sim.LevelNVLink || pl.GPUs[0] < 48 {
		t.Errorf("span %s GPUs %v, want the NVLink rack 48..63", s, pl.GPUs)
	}
	j = job(2, 4) // 8 GPUs: rack 1 has the fewest free that fit
	j.Spec.GPUModels = []string{"B200"}
	if !mustPlacer(t, "topology-best-fit").Place(c, j, &pl) || pl.GPUs[0] >= 48 || pl.GPUs[0] < 32 {
		t.Errorf("8 GPUs: got %v, want rack 1 (32..47)", pl.GPUs)
	}
}

func TestFragmentationMetrics(t *testing.T) {
	c := Cluster(t, dgx(4, 2, 0))
	// node 0: GPUs 0,2,4,6 busy; node 1 fully busy; node 2: GPU 16 busy; node 3 free.
	use(t, c, 0, 2, 4, 6)
	use(t, c, 8, 9, 10, 11, 12, 13, 14, 15)
	use(t, c, 16)
	f := FragmentationProfile(c, 1)
	want := [sim.NumLevels]int32{8, 2, 4, 8, 15, 19}
	if f.Largest != want || f.Free != 19 {
		t.Errorf("profile %+v, want largest %v free 19", f, want)
	}
	if got := LargestPlaceable(c, sim.LevelLeaf, 8); got != 8 {
		t.Errorf("largest 8-GPU-replica gang in a leaf %d, want 8", got)
	}
	if got := LargestPlaceable(c, sim.LevelLeaf, 4); got != 12 {
		t.Errorf("largest 4-GPU-replica gang in a leaf %d, want 12 (node 2: 4, node 3: 8)", got)
	}
	if got := LargestPlaceable(c, sim.LevelPCIe, 2); got != 2 {
		t.Errorf("largest PCIe pair %d, want 2", got)
	}
	if got := StrandedGPUs(c, sim.LevelNode, 8); got != 11 {
		t.Errorf("GPUs stranded for 8-GPU gangs %d, want 11 (4 on node 0, 7 on node 2)", got)
	}
	if got := FreeDomains(c, sim.LevelNode, 4, nil); !slices.Equal(got, []int32{0, 2, 3}) {
		t.Errorf("nodes with >= 4 free %v", got)
	}
	if got := FreeDomains(c, sim.LevelLeaf, 16, nil); len(got) != 0 {
		t.Errorf("leaves with 16 free %v", got)
	}
}

// The topology-best-fit hot path allocates nothing once its buffers have grown.
func TestTopologyBestFitAllocFree(t *testing.T) {
	c := Cluster(t, dgx(64, 32, 0))
	use(t, c, 0, 9, 18, 27, 100, 200, 300)
	p := mustPlacer(t, "topology-best-fit")
	var pl Placement
	jobs := []*sim.Job{job(1, 1), job(1, 4), job(1, 8), job(2, 8), job(8, 8), job(40, 8), job(3, 2)}
	for _, j := range jobs {
		p.Place(c, j, &pl)
	}
	for _, j := range jobs {
		if a := testing.AllocsPerRun(20, func() { p.Place(c, j, &pl) }); a != 0 {
			t.Errorf("%dx%d: %.1f allocs per Place", j.Spec.Replicas, j.Spec.GPUsPerReplica, a)
		}
	}
	// Mixed cluster (in-node NVLink islands, NVL72 racks): same.
	c = mixedCluster(t)
	use(t, c, 1, 33, 50, 70)
	for _, j := range jobs[:5] {
		p.Place(c, j, &pl)
		if a := testing.AllocsPerRun(20, func() { p.Place(c, j, &pl) }); a != 0 {
			t.Errorf("mixed %dx%d: %.1f allocs per Place", j.Spec.Replicas, j.Spec.GPUsPerReplica, a)
		}
	}
}

// bruteLevel is the tightest level with a domain that can hold j (brute force
// over every node and GPU) and the fewest free GPUs among such domains;
// sim.NumLevels when no single spine block can.
func bruteLevel(c *sim.Cluster, j *sim.Job) (sim.Level, int32) {
	s := &j.Spec
	for l := sim.Level(0); l < sim.NumLevels; l++ {
		best := int32(-1)
		for d := range c.Domains(l) {
			for m, model := range c.Models() {
				if !s.AllowsModel(model) {
					continue
				}
				var k int32
				for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
					if c.NodeModel(n) != m || c.Node(n).GPUs == 0 {
						continue
					}
					var f int32
					first, end := c.NodeGPUs(n)
					for g := first; g < end; g++ {
						if c.GPUUsed(g) == 0 && c.GPUDomain(g, l) == int32(d) {
							f++
						}
					}
					k += Hostable(c, n, s, f, 0)
				}
				if k >= s.Replicas {
					if fr := c.DomainFree(l, int32(d)); best < 0 || fr < best {
						best = fr
					}
				}
			}
		}
		if best >= 0 {
			return l, best
		}
	}
	return sim.NumLevels, 0
}

// topology-best-fit lands in the tightest level that can hold the gang, in a
// domain with the fewest free GPUs among those that can (brute-force oracle).
func TestTopologyBestFitTightestLevel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := mustPlacer(t, "topology-best-fit")
	var pl Placement
	for iter := 0; iter < 200; iter++ {
		c := mixedCluster(t)
		for g := sim.GPUID(0); int64(g) < c.NumGPUs(); g++ {
			if rng.IntN(100) < 50 {
				use(t, c, g)
			}
		}
		shapes := [][2]int32{{1, 1}, {1, 2}, {1, 3}, {2, 2}, {1, 4}, {3, 2}, {2, 4}, {4, 2}, {5, 2}}
		sh := shapes[rng.IntN(len(shapes))]
		j := job(sh[0], sh[1])
		if rng.IntN(3) == 0 {
			j.Spec.GPUModels = []string{c.Models()[rng.IntN(len(c.Models()))]}
		}
		want, wantFree := bruteLevel(c, j)
		if !p.Place(c, j, &pl) {
			if want < sim.NumLevels {
				t.Fatalf("iter %d %dx%d: not placed, but level %s can hold it", iter, sh[0], sh[1], want)
			}
			continue
		}
		got := workloads.PlacementSpan(c, pl.GPUs)
		if got != want {
			t.Fatalf("iter %d %dx%d: span %s, want %s (GPUs %v)", iter, sh[0], sh[1], workloads.SpanName(got), workloads.SpanName(want), pl.GPUs)
		}
		if want < sim.NumLevels {
			if f := c.DomainFree(want, c.GPUDomain(pl.GPUs[0], want)); f != wantFree {
				t.Fatalf("iter %d %dx%d: chose a %s domain with %d free, best fit has %d", iter, sh[0], sh[1], want, f, wantFree)
			}
		}
	}
}
