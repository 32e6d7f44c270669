package policies

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func mustPolicy(t *testing.T, name string) sim.Policy {
	t.Helper()
	p, err := New(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The hand-checked case: one 8-GPU node; at t=0 J1 (4 GPUs, 100 s),
// J2 (8 GPUs, 50 s), J3 (2 GPUs, 30 s, walltime 30 s).
func TestHandCheckedFIFOvsEASY(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("J1").GPUs(4).Dur(100).Obj(),
		MakeJob("J2").GPUs(8).Dur(50).Obj(),
		MakeJob("J3").GPUs(2).Dur(30).Wall(30).Obj(),
	}
	cases := map[string]map[string]float64{
		"fifo":                  {"J1": 0, "J2": 100, "J3": 150},
		"easy-backfill":         {"J1": 0, "J2": 100, "J3": 0},
		"conservative-backfill": {"J1": 0, "J2": 100, "J3": 0},
		"sjf":                   {"J1": 80, "J2": 30, "J3": 0}, // shortest estimate first: J3, J2, J1
		"priority":              {"J1": 0, "J2": 100, "J3": 150},
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			res := Run(t, Nodes(1, 8), mustPolicy(t, name), jobs...)
			if d := cmp.Diff(want, Starts(res)); d != "" {
				t.Errorf("starts (-want +got):\n%s\nlog:\n%s", d, Schedule(res))
			}
		})
	}
}

func TestEASYReservationLogged(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("J1").GPUs(4).Dur(100).Obj(),
		MakeJob("J2").GPUs(8).Dur(50).Obj(),
		MakeJob("J3").GPUs(2).Dur(30).Wall(30).Obj(),
		MakeJob("J4").GPUs(4).Dur(200).Wall(200).Obj(), // would delay J2: must wait
	}
	res := Run(t, Nodes(1, 8), mustPolicy(t, "easy-backfill"), jobs...)
	want := `t=0 arrive J1
t=0 arrive J2
t=0 arrive J3
t=0 arrive J4
t=0 start J1
t=0 wait J2 no-capacity
t=0 start J3
t=0 wait J4 no-capacity
t=0 reserve J2 at=100
t=30 finish J3
t=30 wait J4 reservation
t=100 finish J1
t=100 start J2
t=100 wait J4 no-capacity
t=100 reserve J4 at=150
t=150 finish J2
t=150 start J4
t=350 finish J4
`
	if d := cmp.Diff(want, Schedule(res)); d != "" {
		t.Errorf("schedule (-want +got):\n%s", d)
	}
}

func TestNonStrictSkipsBlockedJobs(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("J1").GPUs(4).Dur(100).Obj(),
		MakeJob("J2").GPUs(8).Dur(50).Obj(),
		MakeJob("J3").GPUs(4).Dur(500).Obj(),
	}
	f := false
	p, err := newQueuePolicy("fifo", orderFIFO, bfNone, QueueParams{Strict: &f})
	if err != nil {
		t.Fatal(err)
	}
	got := Starts(Run(t, Nodes(1, 8), p, jobs...))
	want := map[string]float64{"J1": 0, "J2": 500, "J3": 0}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestPlacements(t *testing.T) {
	// Node 0 has 2 free GPUs, node 1 has 6 free, node 2 has 8 free.
	c := Cluster(t, Nodes(3, 8))
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.Allocate(0, []sim.GPUID{0, 1, 2, 3, 4, 5}, 1000, 0, 0))
	must(c.Allocate(1, []sim.GPUID{8, 9}, 1000, 0, 0))
	j := &sim.Job{Spec: MakeJob("x").GPUs(2).Obj()}
	for name, wantNode := range map[string]sim.NodeID{"first-fit": 0, "best-fit": 0, "spread": 2} {
		pl, _ := placement.New(name)
		var out placement.Placement
		if !pl.Place(c, j, &out) {
			t.Fatalf("%s: no placement", name)
		}
		if out.Nodes[0] != wantNode {
			t.Errorf("%s: node %d, want %d", name, out.Nodes[0], wantNode)
		}
	}
	j4 := &sim.Job{Spec: MakeJob("y").GPUs(4).Obj()}
	for name, wantNode := range map[string]sim.NodeID{"first-fit": 1, "best-fit": 1, "spread": 2} {
		pl, _ := placement.New(name)
		var out placement.Placement
		if !pl.Place(c, j4, &out) || out.Nodes[0] != wantNode {
			t.Errorf("%s: got %v, want node %d", name, out.Nodes, wantNode)
		}
	}
	// A gang of 3 x 4 GPUs: first-fit uses node 1 then node 2 twice.
	g := &sim.Job{Spec: MakeJob("g").GPUs(4).Replicas(3).Obj()}
	pl, _ := placement.New("first-fit")
	var out placement.Placement
	if !pl.Place(c, g, &out) {
		t.Fatal("gang not placed")
	}
	if d := cmp.Diff([]sim.NodeID{1, 2, 2}, out.Nodes); d != "" {
		t.Errorf("gang nodes: %s", d)
	}
	// spread puts one replica per node first: nodes 2 (8 free), 1 (6 free) then 2 again.
	pl, _ = placement.New("spread")
	if !pl.Place(c, g, &out) {
		t.Fatal("gang not placed (spread)")
	}
	if d := cmp.Diff([]sim.NodeID{2, 1, 2}, out.Nodes); d != "" {
		t.Errorf("spread gang nodes: %s", d)
	}
}

// A gang that fits the free GPU count but not per node waits for "topology".
func TestWaitReasons(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("A").GPUs(4).Dur(100).Obj(),
		MakeJob("B").GPUs(4).Dur(100).Obj(),
		MakeJob("C").GPUs(8).Dur(10).Obj(), // 8 GPUs free in total (4+4) but not on one node
	}
	res := Run(t, Nodes(2, 8), mustPolicy(t, "fifo"), jobs...)
	// first-fit puts A and B on node 0; to fragment, use spread
	_ = res
	p, _ := New("fifo", yamlNode(t, "placement: spread"))
	res = Run(t, Nodes(2, 8), p, jobs...)
	if got := Schedule(res); !strings.Contains(got, "t=0 wait C topology") {
		t.Errorf("want a topology wait for C:\n%s", got)
	}
}

func yamlNode(t *testing.T, s string) *yaml.Node {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil {
		t.Fatal(err)
	}
	return n.Content[0]
}

// Conservative backfill with fragmentation: 2 nodes x 8 GPUs, X (4 GPUs, ends at
// 100) on n0 and Y (4 GPUs, ends at 200) on n1. The head H needs 8 GPUs on one
// node: 8 are free by count but not on one node, so H's reservation starts at the
// next job end (100), not now; S (4 GPUs, 50 s) fits before it and starts at once.
func TestConservativeFragmentedHeadReservesAtNextEnd(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("X").GPUs(4).Dur(100).Wall(100).Obj(),
		MakeJob("Y").GPUs(4).Dur(200).Wall(200).Obj(),
		MakeJob("H").GPUs(8).Dur(50).Wall(50).At(1).Obj(),
		MakeJob("S").GPUs(4).Dur(50).Wall(50).At(2).Obj(),
	}
	p, err := New("conservative-backfill", yamlNode(t, "placement: spread"))
	if err != nil {
		t.Fatal(err)
	}
	res := Run(t, Nodes(2, 8), p, jobs...)
	want := map[string]float64{"X": 0, "Y": 0, "H": 100, "S": 2}
	if d := cmp.Diff(want, Starts(res)); d != "" {
		t.Errorf("starts (-want +got):\n%s\nlog:\n%s", d, Schedule(res))
	}
}

// A job running past its estimated end (here: no walltime enforcement, the
// estimate is half the run time) is expected to end any moment; the profile stays
// in time order and later jobs are reserved after it.
func TestConservativeOverrunningJob(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("A").GPUs(8).Dur(100).Wall(50).Obj(),
		MakeJob("B").GPUs(8).Dur(100).Wall(100).At(60).Obj(),
		MakeJob("C").GPUs(4).Dur(10).Wall(10).At(70).Obj(),
	}
	e, err := sim.NewEngine(sim.Config{Cluster: Cluster(t, Nodes(1, 8)), Jobs: jobs, Policy: mustPolicy(t, "conservative-backfill"), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"A": 0, "B": 100, "C": 200}
	if d := cmp.Diff(want, Starts(res)); d != "" {
		t.Errorf("starts (-want +got):\n%s\nlog:\n%s", d, Schedule(res))
	}
}
