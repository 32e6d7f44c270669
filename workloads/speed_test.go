package workloads

import (
	"math"
	"slices"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// testCluster: 4 DGX-like nodes (8 GPUs, NVLink across the node, 2 sockets with 2
// PCIe switches each), nodes 0-1 on leaf 0 and nodes 2-3 on leaf 1 (one spine),
// plus node 4 (A100) on leaf 2 under spine 1.
func testCluster(t *testing.T) *sim.Cluster {
	t.Helper()
	var nodes []sim.NodeSpec
	for i := range 5 {
		n := sim.NodeSpec{Name: "n" + itoa(i), GPUModel: "H100-SXM-80GB", GPUs: 8, CPUMilli: 64000, MemoryMiB: 1 << 20,
			NVLinkSize: 8, PCIeSize: 2, SocketSize: 4, NVLinkDomain: -1, Leaf: int32(i / 2), Spine: 0}
		if i == 4 {
			n.GPUModel, n.Spine = "A100-SXM-80GB", 1
		}
		nodes = append(nodes, n)
	}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func placed(c *sim.Cluster, class sim.JobClass, gpus ...sim.GPUID) *sim.Job {
	j := &sim.Job{Spec: sim.JobSpec{ID: "j", Class: class, Replicas: 1, GPUsPerReplica: int32(len(gpus)), GPUMilli: 1000}}
	j.GPUs = gpus
	for _, g := range gpus {
		if n := c.GPUNode(g); !slices.Contains(j.Nodes, n) {
			j.Nodes = append(j.Nodes, n)
		}
	}
	return j
}

func span(from, n int) []sim.GPUID {
	out := make([]sim.GPUID, n)
	for i := range out {
		out[i] = sim.GPUID(from + i)
	}
	return out
}

// ring is the documented all-reduce formula with the default links.
func ring(level string, p int, mb float64) float64 {
	l := DefaultLinks()[level]
	return 2*float64(p-1)/float64(p)*mb*1e6/(l.GBps*1e9) + 2*float64(p-1)*l.LatencyUS*1e-6
}

func TestSpeedModelPlacements(t *testing.T) {
	c := testCluster(t)
	m, err := NewSpeedModel(SpeedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	const compute, mb = 0.5, 1000 // training defaults
	// The cluster's most common model is H100: the reference.
	a100 := 1.0 / 3.17
	for _, tc := range []struct {
		name string
		gpus []sim.GPUID
		want float64
	}{
		{"packed 8 in a node", span(0, 8), 1},
		{"packed 2 on a PCIe switch", span(0, 2), 1},
		{"4+4 across two nodes of a leaf", append(span(0, 4), span(8, 4)...),
			(compute + ring("nvlink", 8, mb)) / (compute + ring("leaf", 8, mb))},
		{"16 on two nodes of one leaf", span(0, 16), 1},
		{"16 across two leaves", append(span(0, 8), span(16, 8)...),
			(compute + ring("leaf", 16, mb)) / (compute + ring("spine", 16, mb))},
		{"16 across spines, one A100 node", append(span(0, 8), span(32, 8)...),
			(compute + ring("leaf", 16, mb)) / (compute/a100 + ring("core", 16, mb))},
	} {
		got := m.Speed(c, placed(c, sim.ClassTraining, tc.gpus...))
		if math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: speed %.6f, want %.6f", tc.name, got, tc.want)
		}
		if got > 1+1e-12 {
			t.Errorf("%s: speed %.4f > 1 on reference GPUs", tc.name, got)
		}
	}
	// Scattering hurts communication-heavy training more than batch inference.
	spread := append(span(0, 4), span(16, 4)...)
	tr := m.Speed(c, placed(c, sim.ClassTraining, spread...))
	bi := m.Speed(c, placed(c, sim.ClassBatchInference, spread...))
	if !(tr < bi && bi <= 1) {
		t.Errorf("training %.4f should be slower than batch inference %.4f when scattered", tr, bi)
	}
}

func TestSpeedModelThroughput(t *testing.T) {
	c := testCluster(t)
	m, err := NewSpeedModel(SpeedConfig{ReferenceModel: "A100"})
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Speed(c, placed(c, sim.ClassExperiment, 0)); math.Abs(got-3.17) > 1e-9 {
		t.Errorf("1 H100 with A100 reference: speed %g, want 3.17", got)
	}
	if got := m.Speed(c, placed(c, sim.ClassExperiment, 32)); got != 1 {
		t.Errorf("1 A100 with A100 reference: speed %g, want 1", got)
	}
	cpu := &sim.Job{Spec: sim.JobSpec{Class: sim.ClassPreprocessing, Replicas: 1}, Nodes: []sim.NodeID{0}}
	if got := m.Speed(c, cpu); got != 1 {
		t.Errorf("CPU-only: %g", got)
	}
	// Unknown models count as the reference; custom tables override defaults.
	m2, err := NewSpeedModel(SpeedConfig{ReferenceModel: "MI300X", Throughput: map[string]float64{"h100": 2}})
	if err != nil {
		t.Fatal(err)
	}
	if got := m2.Speed(c, placed(c, sim.ClassServing, 0)); got != 2 {
		t.Errorf("override: %g, want 2", got)
	}
}

func TestSpeedConfigValidate(t *testing.T) {
	cfg := SpeedConfig{
		Throughput: map[string]float64{"X": -1},
		Links:      map[string]Link{"leaf": {GBps: 0}, "moon": {GBps: 1}},
		Classes:    map[string]ClassComm{"training": {ComputeS: 0, MBPerIter: 5}, "gaming": {}},
	}
	cfg.SetDefaults()
	fe := cfg.Validate()
	for _, p := range []string{"throughput.X", "links.leaf.gbps", "links.moon", "classes.training.computeS", "classes.gaming"} {
		found := false
		for _, e := range fe {
			found = found || e.Path == p
		}
		if !found {
			t.Errorf("no error at %q in %v", p, fe)
		}
	}
	if _, err := NewSpeedModel(cfg); err == nil {
		t.Error("NewSpeedModel accepted an invalid config")
	}
	d := DefaultSpeedConfig()
	if fe := d.Validate(); len(fe) > 0 {
		t.Fatal(fe)
	}
}

// The model plugs into the engine: a run with it is deterministic and scattered
// gangs take longer than at speed 1.
func TestSpeedModelInEngineContract(t *testing.T) {
	var _ sim.SpeedModel = (*SpeedModel)(nil)
	c := testCluster(t)
	m, _ := NewSpeedModel(SpeedConfig{})
	j := placed(c, sim.ClassTraining, append(span(0, 1), span(16, 1)...)...)
	a, b := m.Speed(c, j), m.Speed(c, j)
	if a != b || !(a > 0 && a < 1) {
		t.Fatalf("speed %g %g", a, b)
	}
}

// startAt is a test policy starting every pending job on fixed nodes and GPUs.
type startAt struct {
	nodes []sim.NodeID
	gpus  []sim.GPUID
}

func (p *startAt) Name() string { return "start-at" }
func (p *startAt) Schedule(v *sim.View, pl *sim.Plan) error {
	if j := v.PendingHead(); j != nil && len(v.Running()) == 0 {
		return pl.AddStart(j.Ref, p.nodes, p.gpus)
	}
	return nil
}

// The engine runs a scattered gang for duration / speed.
func TestSpeedModelInEngine(t *testing.T) {
	c := testCluster(t)
	m, err := NewSpeedModel(SpeedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	spec := sim.JobSpec{ID: "a", Class: sim.ClassTraining, Replicas: 2, GPUsPerReplica: 4, GPUMilli: 1000,
		CPUMilli: 1000, MemoryMiB: 1024, Duration: sim.Hour}
	pol := &startAt{nodes: []sim.NodeID{0, 2}, gpus: append(span(0, 4), span(16, 4)...)}
	for _, speed := range []sim.SpeedModel{nil, m} {
		e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{spec}, Policy: pol, Speed: speed})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		want := sim.Hour
		if speed != nil {
			s := m.Speed(c, placed(c, sim.ClassTraining, pol.gpus...))
			want = sim.Duration(math.Ceil(float64(sim.Hour) / s))
			if s >= 1 {
				t.Fatalf("scattered speed %g", s)
			}
		}
		if got := res.Jobs[0].End.Sub(res.Jobs[0].FirstStart); got != want {
			t.Errorf("speed model %v: ran %v, want %v", speed != nil, got, want)
		}
	}
}
