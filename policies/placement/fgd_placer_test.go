package placement_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/policies"
	. "github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/policies/placement/fgd"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// fgdCheck is a policy that starts pending jobs (queue order, skipping what does
// not fit) where the fgd placement puts them, and checks at every placement that
// the placement's incrementally refreshed mirror gives exactly what a scorer
// built afresh on the same cluster state gives.
type fgdCheck struct {
	t      *testing.T
	placer Placer
	tw     *fgd.TargetWorkload
	pl     Placement
	placed int
	gangs  int
	// live: the expected target workload is that of the jobs submitted so far
	// (a live run's job table grows).
	live bool
}

func (f *fgdCheck) Name() string                 { return "fgd-check" }
func (f *fgdCheck) Observe(*sim.View, sim.Event) {}

func (f *fgdCheck) Schedule(v *sim.View, p *sim.Plan) error {
	if err := Prepare(f.placer, v); err != nil {
		return err
	}
	c := v.Cluster()
	if f.live {
		tw, err := fgd.NewTargetWorkloadFunc(v.NumJobs(), func(i int) *sim.JobSpec { return &v.Job(sim.JobRef(i)).Spec }, fgd.TargetConfig{})
		if err != nil {
			return err
		}
		f.tw = tw
	}
	for j := range v.Pending() {
		ok := f.placer.Place(c, j, &f.pl)
		fresh, err := fgd.NewPlacer(c, fgd.FGD, f.tw, v.Seed())
		if err != nil {
			return err
		}
		nodes, gpus, freshOK, err := fresh.PlaceGang(&j.Spec, nil, nil)
		if err != nil {
			return err
		}
		if ok != freshOK || ok && (!slices.Equal(nodes, f.pl.Nodes) || !slices.Equal(gpus, f.pl.GPUs)) {
			f.t.Fatalf("t=%v job %s: placement %v/%v %v, fresh scorer %v/%v %v", v.Now(), j.Spec.ID, f.pl.Nodes, f.pl.GPUs, ok, nodes, gpus, freshOK)
		}
		if !ok {
			continue
		}
		if err := p.AddStart(j.Ref, f.pl.Nodes, f.pl.GPUs); err != nil {
			return err // the engine validates every start (GPUs, CPU, memory, models)
		}
		f.placed++
		if j.Spec.Replicas > 1 {
			f.gangs++
		}
	}
	return nil
}

func fgdWorkload(seed uint64, n int) []sim.JobSpec {
	rng := rand.New(rand.NewPCG(seed, 7))
	jobs := make([]sim.JobSpec, n)
	for i := range jobs {
		s := sim.JobSpec{ID: sim.JobID(fmt.Sprintf("j%03d", i)), Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU,
			CPUMilli: int64(1000 * (1 + rng.IntN(8))), MemoryMiB: 1024, Class: sim.ClassTraining,
			Submit: sim.Time(sim.Seconds(float64(rng.IntN(3600)))), Duration: sim.Seconds(float64(60 + rng.IntN(3000)))}
		switch k := rng.IntN(10); {
		case k < 5: // a fraction of one GPU
			s.GPUMilli = sim.MilliGPU([]int{250, 500, 300, 700}[rng.IntN(4)])
		case k < 7:
			s.GPUsPerReplica = int32(1 << rng.IntN(3))
		case k < 9: // a gang
			s.Replicas, s.GPUsPerReplica = int32(2+rng.IntN(2)), int32(1+rng.IntN(4))
		default:
			s.GPUsPerReplica, s.GPUMilli = 0, 0 // CPU only
		}
		if rng.IntN(6) == 0 && s.GPUsPerReplica > 0 {
			s.GPUModels = []string{"A10"}
		}
		jobs[i] = s
	}
	return jobs
}

func fgdNodes() []sim.NodeSpec {
	var ns []sim.NodeSpec
	for i := range 6 {
		m, g := "V100", int32(8)
		if i%3 == 2 {
			m, g = "A10", 4
		}
		ns = append(ns, sim.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUModel: m, GPUs: g, CPUMilli: 64000, MemoryMiB: 256 << 10,
			NVLinkSize: g, PCIeSize: 2, SocketSize: g / 2, NVLinkDomain: -1})
	}
	return ns
}

// The fgd placement in a time replay: every start is valid (the engine checks
// it) and equals what the FGD scorer built afresh on that cluster state chooses,
// so the mirror refreshed from sim.Cluster.NodeVersion never goes stale, gangs
// included.
func TestFGDPlacementInReplay(t *testing.T) {
	c, err := sim.NewCluster(fgdNodes())
	if err != nil {
		t.Fatal(err)
	}
	var jobs []sim.JobSpec
	for _, s := range fgdWorkload(1, 300) {
		if c.Feasible(&s) == nil {
			jobs = append(jobs, s)
		}
	}
	tw, err := fgd.NewTargetWorkload(jobs, fgd.TargetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	pol := &fgdCheck{t: t, placer: mustPlacer(t, "fgd"), tw: tw}
	res := simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Seed: 3, NoLog: true})
	for i := range res.Jobs {
		if res.Jobs[i].State != sim.StateCompleted {
			t.Fatalf("job %s ended %v", jobs[i].ID, res.Jobs[i].State)
		}
	}
	if pol.placed < len(jobs) || pol.gangs < 20 {
		t.Fatalf("placed %d jobs (%d gangs); the test wants every job and >= 20 gangs", pol.placed, pol.gangs)
	}
}

// The fgd placement needs the run (its target workload): without Prepare it
// places nothing rather than guessing.
func TestFGDPlacementNeedsPrepare(t *testing.T) {
	c, err := sim.NewCluster(fgdNodes())
	if err != nil {
		t.Fatal(err)
	}
	var pl Placement
	j := job(1, 1)
	if mustPlacer(t, "fgd").Place(c, j, &pl) {
		t.Fatal("placed without Prepare")
	}
	if !mustPlacer(t, "best-fit").Place(c, j, &pl) {
		t.Fatal("best-fit placed nothing")
	}
}

func TestFGDPlacementArguments(t *testing.T) {
	for name, want := range map[string]string{
		"fgd": "fgd", "fgd:scorer=fgd": "fgd", "fgd:scorer=dot-product": "fgd:scorer=dot-product",
		"fgd:scorer=gpu-packing,popularity=60,step=10,cpuPods=false": "fgd:scorer=gpu-packing",
	} {
		if got := mustPlacer(t, name).Name(); got != want {
			t.Errorf("%s: Name %q, want %q", name, got, want)
		}
	}
	for bad, msg := range map[string]string{
		"fgd:scorer=nope":     "scorer: unknown",
		"fgd:popularity=0":    "popularity",
		"fgd:step=0":          "step",
		"fgd:cpuPods=maybe":   "cpuPods",
		"fgd:colour=blue":     "unknown argument",
		"fgd:popularity=101%": "popularity",
	} {
		if _, err := New(bad); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: error %v, want one mentioning %q", bad, err, msg)
		}
	}
}

// One placement layer for device-level sharing: under every placement, on a
// time-sliced pool, a job that accepts sharing joins a GPU that already has a
// sharer (best-fit's co-location rule) rather than taking an empty GPU, while a
// job that does not accept sharing gets a GPU of its own (spread co-locates only
// when no GPU is empty).
func TestEveryPlacementCoLocates(t *testing.T) {
	nodes := []sim.NodeSpec{{Name: "n0", GPUModel: "A100", GPUs: 4, CPUMilli: 64000, MemoryMiB: 1 << 20, GPUMemMiB: 40960,
		NVLinkSize: 4, PCIeSize: 2, SocketSize: 2, NVLinkDomain: -1, Sharing: sim.ShareTimeSlice, SharingClients: 2}}
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			var jobs []sim.JobSpec
			for i, acc := range []sim.JobSharing{sim.AcceptTimeSlice, sim.AcceptTimeSlice, sim.AcceptExclusive, sim.AcceptAny} {
				jobs = append(jobs, sim.JobSpec{ID: sim.JobID(fmt.Sprintf("j%d", i)), Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU,
					CPUMilli: 1000, MemoryMiB: 1024, GPUMemMiB: 8192, Sharing: acc, Submit: sim.Time(sim.Seconds(float64(i))),
					Duration: sim.Seconds(1000), Class: sim.ClassTraining})
			}
			c, err := sim.NewCluster(nodes)
			if err != nil {
				t.Fatal(err)
			}
			pol, err := policies.New("fifo", yamlParams(t, "placement: \""+name+"\""))
			if err != nil {
				t.Fatal(err)
			}
			res := simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Seed: 1, NoLog: true, Sharing: &sim.SharingConfig{}})
			gpu := func(i int) sim.GPUID { return res.Jobs[i].GPUs[0] }
			// spread co-locates only when no GPU is empty (docs/sharing.md); pack
			// co-locates only when it raises the total throughput, and an even
			// split (no interference matrix) never does while a GPU is empty
			if name == "spread" || name == "pack" {
				if gpu(0) == gpu(1) || gpu(1) == gpu(2) || gpu(2) == gpu(3) || gpu(0) == gpu(3) {
					t.Errorf("%s: GPUs %d %d %d %d, want four GPUs", name, gpu(0), gpu(1), gpu(2), gpu(3))
				}
				return
			}
			if gpu(1) != gpu(0) || gpu(3) != gpu(0) && gpu(3) == gpu(2) || gpu(2) == gpu(0) {
				t.Errorf("GPUs %d %d %d %d: want j1 on j0's GPU, j2 alone, j3 not on j2's", gpu(0), gpu(1), gpu(2), gpu(3))
			}
		})
	}
}

// mask returns a clone of c with everything on the refused nodes allocated.
func mask(t *testing.T, c *sim.Cluster, allow func(sim.NodeID) bool) *sim.Cluster {
	t.Helper()
	m := c.Clone()
	for n := sim.NodeID(0); int(n) < m.NumNodes(); n++ {
		if allow(n) {
			continue
		}
		first, end := m.NodeGPUs(n)
		for g := first; g < end; g++ {
			if left := sim.WholeGPU - m.GPUUsed(g); left > 0 {
				if err := m.Allocate(n, []sim.GPUID{g}, left, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := m.Allocate(n, nil, 0, m.NodeFreeCPU(n), m.NodeFreeMemory(n)); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// Placement.Allow: the bucket placements and the FGD scorers restricted to some
// nodes choose exactly what they choose on a cluster whose other nodes are full;
// the topology-aware placements never return a refused node.
func TestPlacementAllow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	jobs := fgdWorkload(9, 200)
	tw, err := fgd.NewTargetWorkload(jobs, fgd.TargetConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var restricted, found int
	for iter := 0; iter < 150; iter++ {
		c, err := sim.NewCluster(fgdNodes())
		if err != nil {
			t.Fatal(err)
		}
		for g := sim.GPUID(0); int64(g) < c.NumGPUs(); g++ {
			if k := rng.IntN(10); k < 3 {
				use(t, c, g)
			} else if k < 5 {
				if err := c.Allocate(c.GPUNode(g), []sim.GPUID{g}, sim.MilliGPU(100*(1+rng.IntN(9))), 0, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		refused := map[sim.NodeID]bool{}
		for n := range c.NumNodes() {
			refused[sim.NodeID(n)] = rng.IntN(3) == 0
		}
		allow := func(n sim.NodeID) bool { return !refused[n] }
		m := mask(t, c, allow)
		j := &sim.Job{Spec: jobs[rng.IntN(len(jobs))]}
		for _, name := range Names {
			if name == "fgd" {
				continue // below, through the scorer itself
			}
			p := mustPlacer(t, name)
			pl := Placement{Allow: allow}
			got := p.Place(c, j, &pl)
			for _, n := range pl.Nodes {
				if got && refused[n] {
					t.Fatalf("%s placed on refused node %d", name, n)
				}
			}
			switch name {
			case "first-fit", "best-fit", "spread":
				var ref Placement
				want := p.Place(m, j, &ref)
				if got != want || got && (!slices.Equal(pl.Nodes, ref.Nodes) || !slices.Equal(pl.GPUs, ref.GPUs)) {
					t.Fatalf("iter %d %s: Allow gives %v %v/%v, masked cluster %v %v/%v", iter, name, got, pl.Nodes, pl.GPUs, want, ref.Nodes, ref.GPUs)
				}
			}
			if got {
				restricted++
			}
		}
		for _, scorer := range fgd.Policies() {
			a, err := fgd.NewPlacer(c, scorer, tw, 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := fgd.NewPlacer(m, scorer, tw, 1)
			if err != nil {
				t.Fatal(err)
			}
			n1, g1, ok1, err1 := a.PlaceGangWithin(&j.Spec, allow, nil, nil)
			n2, g2, ok2, err2 := b.PlaceGang(&j.Spec, nil, nil)
			if err1 != nil || err2 != nil || ok1 != ok2 || !slices.Equal(n1, n2) || !slices.Equal(g1, g2) {
				t.Fatalf("iter %d fgd %s: within %v %v/%v (%v), masked %v %v/%v (%v)", iter, scorer, ok1, n1, g1, err1, ok2, n2, g2, err2)
			}
			if ok1 {
				found++
			}
		}
	}
	if restricted < 300 || found < 300 {
		t.Fatalf("only %d restricted placements and %d fgd placements: the test is too weak", restricted, found)
	}
}

func TestHonoursAllow(t *testing.T) {
	for _, name := range Names {
		want := name == "first-fit" || name == "best-fit" || name == "spread" || name == "fgd"
		if got := HonoursAllow(mustPlacer(t, name)); got != want {
			t.Errorf("%s: HonoursAllow %v, want %v", name, got, want)
		}
	}
}

// The fgd placement in a live run (sim.Live), whose jobs are submitted as they
// come: its target workload is that of the jobs submitted so far, rebuilt as
// more come, so every placement equals what a scorer built afresh from those
// jobs chooses (without the rebuild it kept the first call's one-job target).
func TestFGDPlacementLiveRetargets(t *testing.T) {
	c, err := sim.NewCluster(fgdNodes())
	if err != nil {
		t.Fatal(err)
	}
	var jobs []sim.JobSpec
	for _, s := range fgdWorkload(2, 200) {
		if c.Feasible(&s) == nil {
			jobs = append(jobs, s)
		}
	}
	slices.SortStableFunc(jobs, func(a, b sim.JobSpec) int { return int(a.Submit - b.Submit) })
	pol := &fgdCheck{t: t, placer: mustPlacer(t, "fgd"), live: true}
	b := simtest.ExactEnds{}
	l, err := sim.NewLive(sim.Config{Cluster: c, Policy: pol, Seed: 3}, b, len(jobs), sim.Second)
	if err != nil {
		t.Fatal(err)
	}
	simtest.DriveLive(t, l, jobs, b)
	if pol.placed < len(jobs) || pol.gangs < 10 {
		t.Fatalf("placed %d of %d jobs (%d gangs); the test wants every job and >= 10 gangs", pol.placed, len(jobs), pol.gangs)
	}
}
