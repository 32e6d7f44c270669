package kueue

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// tasQueue is one TAS-only ClusterQueue of 64 GPUs (the 8 x 8-GPU test cluster:
// two racks of four nodes, one block) on a flavor whose Topology has the
// documentation's block / rack / hostname levels.
const tasQueue = `
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-block
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: tas-flavor}
spec: {topologyName: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  PREEMPTION
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: tas-flavor, resources: [{name: nvidia.com/gpu, nominalQuota: 64}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: cq}
`

func newTASKueue(t *testing.T, preemption string, grace sim.Duration, rules ...TopologyRequestRule) *Kueue {
	t.Helper()
	g := policies.Dur(grace)
	m := strings.Replace(tasQueue, "PREEMPTION", preemption, 1)
	k, err := New(Params{Inline: m, EvictionGracePeriod: &g, TopologyRequests: rules}, policies.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// placed wraps the policy and records each job's nodes at its (last) start.
type placed struct {
	*Kueue
	nodes map[string][]sim.NodeID
	leaf  map[string][]int32 // leaf domain of each replica
}

func (p *placed) Observe(v *sim.View, e sim.Event) {
	p.Kueue.Observe(v, e)
	if e.Kind != sim.EvStart {
		return
	}
	if p.nodes == nil {
		p.nodes, p.leaf = map[string][]sim.NodeID{}, map[string][]int32{}
	}
	j := v.Job(e.Job)
	c := v.Cluster()
	id := string(j.Spec.ID)
	p.nodes[id] = slices.Clone(j.Nodes)
	p.leaf[id] = p.leaf[id][:0]
	for _, n := range j.Nodes {
		first, _ := c.NodeGPUs(n)
		p.leaf[id] = append(p.leaf[id], c.GPUDomain(first, sim.LevelLeaf))
	}
}

// fragmented are eight 8-GPU fillers that take nodes 0..7 at t=0 (implied
// unconstrained request: LeastFreeCapacity over equal nodes, lowest id first).
// Nodes 0 and 4 (one per rack) free up at t=100, node 7 (rack 1) at t=200, the
// rest at t=1000: from t=100 to t=200 16 GPUs are free but no rack has 16.
func fragmented(prio int32) []sim.JobSpec {
	dur := []float64{100, 1000, 1000, 1000, 100, 1000, 1000, 200}
	var jobs []sim.JobSpec
	for i, d := range dur {
		jobs = append(jobs, MakeJob(fmt.Sprintf("f%d", i)).Queue("q").GPUs(8).Prio(prio).Dur(d).Obj())
	}
	return jobs
}

func waits(res *sim.Result, id string, at float64, r sim.Reason) bool {
	return strings.Contains(Schedule(res), fmt.Sprintf("t=%g wait %s %s\n", at, id, r))
}

// A required rack-level request (2 x 8 GPUs) submitted at t=50 waits for quota
// until t=100; then quota fits (48 + 16 <= 64) but the 16 free GPUs are split
// over the two racks, so it waits with reason topology (no preemption
// configured: Preempt without candidates, parked); at t=200 node 7 frees rack 1
// (nodes 4 and 7) and it starts there. A preferred rack-level request falls back
// to the block at t=100 (nodes 0 and 4); the implied request (no rule) is
// unconstrained and starts at t=100 too.
func TestTASRequiredWaitsPreferredFallsBack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rules     []TopologyRequestRule
		start     float64
		nodes     []sim.NodeID
		topoWait  bool
		sameLeaf  bool
		wantLeafs int
	}{
		{"required", []TopologyRequestRule{{Class: "training", Required: "cloud.provider.com/topology-rack"}}, 200, []sim.NodeID{4, 7}, true, true, 1},
		{"preferred", []TopologyRequestRule{{Class: "training", Preferred: "cloud.provider.com/topology-rack"}}, 100, []sim.NodeID{0, 4}, false, false, 2},
		{"implied", nil, 100, []sim.NodeID{0, 4}, false, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &placed{Kueue: newTASKueue(t, "", 0, tc.rules...)}
			big := MakeJob("big").Queue("q").GPUs(8).Replicas(2).At(50).Dur(100).Obj()
			big.Class = sim.ClassTraining
			res := Run(t, Nodes(8, 8), p, append(fragmented(0), big)...)
			st := Starts(res)
			for i := 0; i < 8; i++ {
				if st[fmt.Sprintf("f%d", i)] != 0 || !slices.Equal(p.nodes[fmt.Sprintf("f%d", i)], []sim.NodeID{sim.NodeID(i)}) {
					t.Fatalf("filler f%d: start %v on %v, want 0 on node %d", i, st[fmt.Sprintf("f%d", i)], p.nodes[fmt.Sprintf("f%d", i)], i)
				}
			}
			if st["big"] != tc.start || !slices.Equal(p.nodes["big"], tc.nodes) {
				t.Fatalf("big started at %v on %v, want %v on %v\n%s", st["big"], p.nodes["big"], tc.start, tc.nodes, Schedule(res))
			}
			if !waits(res, "big", 50, sim.ReasonQuota) {
				t.Errorf("big should wait for quota at t=50\n%s", Schedule(res))
			}
			if got := waits(res, "big", 100, sim.ReasonTopology); got != tc.topoWait {
				t.Errorf("topology wait at t=100: %v, want %v\n%s", got, tc.topoWait, Schedule(res))
			}
			if l := p.leaf["big"]; len(slices.Compact(slices.Clone(l))) != tc.wantLeafs {
				t.Errorf("big spans leaves %v, want %d", l, tc.wantLeafs)
			}
		})
	}
}

// A gang that no domain of the required level can ever hold (2 x 8 GPUs on one
// 8-GPU host) is NoFit even on an empty cluster (Kueue's simulateEmpty): it
// waits with reason topology and never starts, while the quota is free.
func TestTASNeverFitsIsTopologyWait(t *testing.T) {
	k := newTASKueue(t, "", 0, TopologyRequestRule{Queue: "q", Required: "kubernetes.io/hostname"})
	res := Run(t, Nodes(8, 8), k,
		MakeJob("two-hosts").Queue("q").GPUs(8).Replicas(2).Dur(10).Obj(),
		MakeJob("one-host").Queue("q").GPUs(4).Replicas(2).At(1).Dur(10).Obj())
	st := Starts(res)
	if st["two-hosts"] != -1 || st["one-host"] != 1 {
		t.Fatalf("starts %v: two-hosts must never start, one-host at 1\n%s", st, Schedule(res))
	}
	if !waits(res, "two-hosts", 0, sim.ReasonTopology) {
		t.Errorf("want a topology wait\n%s", Schedule(res))
	}
}

// policies.md 7.4 "TAS: a quota-fitting workload can still require preemption
// because of topology fragmentation". Low-priority fillers leave 16 GPUs free at
// t=100, 8 per rack. A high-priority required-rack gang (2 x 8) at t=150 fits
// the quota (48 + 16 <= 64) but no rack: with withinClusterQueue: LowerPriority
// the preemption simulation removes candidates (most recently admitted first:
// f7, on node 7) on a copy of the cluster until rack 1 holds the gang; one
// victim suffices. It starts at 150 + grace on nodes 4 and 7.
func TestTASFragmentationTriggersPreemption(t *testing.T) {
	for _, grace := range []sim.Duration{0, 30 * sim.Second} {
		t.Run(fmt.Sprintf("grace=%v", grace), func(t *testing.T) {
			p := &placed{Kueue: newTASKueue(t, "preemption: {withinClusterQueue: LowerPriority}", grace,
				TopologyRequestRule{Class: "training", Required: "cloud.provider.com/topology-rack"})}
			hp := MakeJob("hp").Queue("q").GPUs(8).Replicas(2).Prio(10).At(150).Dur(100).Obj()
			hp.Class = sim.ClassTraining
			res := Run(t, Nodes(8, 8), p, append(fragmented(0), hp)...)
			want := 150 + grace.Seconds()
			if st := Starts(res); st["hp"] != want || !slices.Equal(p.nodes["hp"], []sim.NodeID{4, 7}) {
				t.Fatalf("hp started at %v on %v, want %v on [4 7]\n%s", st["hp"], p.nodes["hp"], want, Schedule(res))
			}
			for i := range res.Jobs {
				j := &res.Jobs[i]
				wantP := int32(0)
				if j.Spec.ID == "f7" {
					wantP = 1
				}
				if j.Preempted != wantP {
					t.Errorf("%s preempted %d times, want %d\n%s", j.Spec.ID, j.Preempted, wantP, Schedule(res))
				}
			}
		})
	}
	// A 3 x 8 gang also needs quota (48 + 24 > 64): removing f7 satisfies the
	// quota but rack 1 then holds only 16 GPUs, so the simulation goes on to f6;
	// fill-back keeps both (rack 1 needs nodes 4, 6 and 7). Both are evicted in
	// one cycle, so the gang starts after one grace period (a quota-only check
	// would stop at f7 and need a second round: 210).
	t.Run("two-victims", func(t *testing.T) {
		p := &placed{Kueue: newTASKueue(t, "preemption: {withinClusterQueue: LowerPriority}", 30*sim.Second,
			TopologyRequestRule{Class: "training", Required: "cloud.provider.com/topology-rack"})}
		hp := MakeJob("hp").Queue("q").GPUs(8).Replicas(3).Prio(10).At(150).Dur(100).Obj()
		hp.Class = sim.ClassTraining
		res := Run(t, Nodes(8, 8), p, append(fragmented(0), hp)...)
		if st := Starts(res); st["hp"] != 180 || !slices.Equal(p.nodes["hp"], []sim.NodeID{4, 6, 7}) {
			t.Fatalf("hp started at %v on %v, want 180 on [4 6 7]\n%s", st["hp"], p.nodes["hp"], Schedule(res))
		}
		for i := range res.Jobs {
			j := &res.Jobs[i]
			wantP := int32(0)
			if j.Spec.ID == "f6" || j.Spec.ID == "f7" {
				wantP = 1
			}
			if j.Preempted != wantP {
				t.Errorf("%s preempted %d times, want %d\n%s", j.Spec.ID, j.Preempted, wantP, Schedule(res))
			}
		}
	})
	// Without a preemption policy the same gang waits for f7 to finish at 200.
	t.Run("no-preemption", func(t *testing.T) {
		k := newTASKueue(t, "", 0, TopologyRequestRule{Class: "training", Required: "cloud.provider.com/topology-rack"})
		hp := MakeJob("hp").Queue("q").GPUs(8).Replicas(2).Prio(10).At(150).Dur(100).Obj()
		hp.Class = sim.ClassTraining
		res := Run(t, Nodes(8, 8), k, append(fragmented(0), hp)...)
		if st := Starts(res); st["hp"] != 200 {
			t.Fatalf("hp started at %v, want 200\n%s", st["hp"], Schedule(res))
		}
		if !waits(res, "hp", 150, sim.ReasonTopology) {
			t.Errorf("want a topology wait at 150\n%s", Schedule(res))
		}
	})
}

// Kueue's documented TAS setups (testdata) load without "not simulated"
// warnings for Topology/topologyName and run: in the GPU setup every training
// gang (required rack) sits in one rack, the others get the implied
// unconstrained request; the cpu/memory setup (v1alpha1 Topology) runs CPU-only
// jobs on the TAS flavor.
func TestTASDocExamplesLoadAndRun(t *testing.T) {
	for _, tc := range []struct {
		file, pool string
		gpus       bool
	}{
		{"tas-gpu-queues.yaml", "tas-group", true},
		{"tas-cpu-queues-v1alpha1.yaml", "tas-node-group", false},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := Params{Manifests: "testdata/" + tc.file,
				TopologyRequests: []TopologyRequestRule{{Class: "training", Required: "cloud.provider.com/topology-rack"}}}
			p.QueueMapping.Default = "tas-user-queue"
			k, err := New(p, policies.Env{})
			if err != nil {
				t.Fatal(err)
			}
			if k.tas == nil {
				t.Fatal("TAS is not enabled")
			}
			for _, w := range k.Warnings() {
				if strings.Contains(w, "TAS") || strings.Contains(w, "Topology") {
					t.Errorf("unexpected warning %q", w)
				}
			}
			var jobs []sim.JobSpec
			for i := 0; i < 30; i++ {
				b := MakeJob(fmt.Sprintf("j%02d", i)).At(float64(i)).Dur(float64(50 + 10*(i%7))).CPU(2000)
				if tc.gpus {
					b = b.GPUs(4).Replicas(int32(1 + i%4))
				} else {
					b = b.GPUs(0).Replicas(int32(1 + i%4))
				}
				j := b.Obj()
				if i%2 == 0 {
					j.Class = sim.ClassTraining
				}
				jobs = append(jobs, j)
			}
			nodes := Nodes(8, 4)
			for i := range nodes {
				nodes[i].Pool = tc.pool
				nodes[i].CPUMilli = 16000
			}
			pl := &placed{Kueue: k}
			res := Run(t, nodes, pl, jobs...)
			for i := range res.Jobs {
				j := &res.Jobs[i]
				if j.State != sim.StateCompleted {
					t.Fatalf("job %s ended %s\n%s", j.Spec.ID, j.State, Schedule(res))
				}
				if tc.gpus && j.Spec.Class == sim.ClassTraining {
					if l := slices.Compact(slices.Clone(pl.leaf[string(j.Spec.ID)])); len(l) != 1 {
						t.Errorf("training gang %s spans racks %v", j.Spec.ID, pl.leaf[string(j.Spec.ID)])
					}
				}
			}
		})
	}
}

// Configuration errors name the manifest file and field, or the parameter.
func TestTASConfigErrors(t *testing.T) {
	topo := func(labels ...string) string {
		s := "apiVersion: kueue.x-k8s.io/v1beta1\nkind: Topology\nmetadata: {name: t}\nspec:\n  levels:\n"
		for _, l := range labels {
			s += "  - nodeLabel: " + l + "\n"
		}
		return s + "---\n"
	}
	rest := `apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
spec: {topologyName: TOPO}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
`
	for _, tc := range []struct {
		name, manifests string
		mapping         map[string]string
		rules           []TopologyRequestRule
		want            string
	}{
		{"unknown label", topo("example.com/pod", "kubernetes.io/hostname") + strings.Replace(rest, "TOPO", "t", 1), nil, nil,
			`inline:1: Topology "t": spec.levels[0].nodeLabel "example.com/pod" has no gpusim level`},
		{"unused topology", topo("example.com/pod") + strings.Replace(rest, "spec: {topologyName: TOPO}\n", "", 1), nil, nil, ""},
		{"mapped label", topo("example.com/pod", "kubernetes.io/hostname") + strings.Replace(rest, "TOPO", "t", 1), map[string]string{"example.com/pod": "spine"}, nil, ""},
		{"bad mapping", topo("kubernetes.io/hostname") + strings.Replace(rest, "TOPO", "t", 1), map[string]string{"example.com/pod": "pcie"}, nil,
			`topologyLevelMapping.example.com/pod: unknown level "pcie"`},
		{"order", topo("kubernetes.io/hostname", "cloud.provider.com/topology-rack") + strings.Replace(rest, "TOPO", "t", 1), nil, nil,
			`spec.levels[1].nodeLabel "cloud.provider.com/topology-rack" (leaf) must be finer than level 0`},
		{"missing topology", topo("kubernetes.io/hostname") + strings.Replace(rest, "TOPO", "nope", 1), nil, nil,
			`ResourceFlavor "f": spec.topologyName: Topology "nope" not found`},
		{"rule with two kinds", topo("kubernetes.io/hostname") + strings.Replace(rest, "TOPO", "t", 1), nil,
			[]TopologyRequestRule{{Required: "kubernetes.io/hostname", Unconstrained: true}}, "topologyRequests[0]: give exactly one of"},
		{"rule level not in topology", topo("kubernetes.io/hostname") + strings.Replace(rest, "TOPO", "t", 1), nil,
			[]TopologyRequestRule{{Preferred: "cloud.provider.com/topology-rack"}}, `topologyRequests[0]: level "cloud.provider.com/topology-rack" (leaf) is in no Topology`},
		{"rule bad class", topo("kubernetes.io/hostname") + strings.Replace(rest, "TOPO", "t", 1), nil,
			[]TopologyRequestRule{{Class: "nope", Unconstrained: true}}, "topologyRequests[0].class"},
		{"rule bad cq", topo("kubernetes.io/hostname") + strings.Replace(rest, "TOPO", "t", 1), nil,
			[]TopologyRequestRule{{ClusterQueue: "nope", Unconstrained: true}}, `topologyRequests[0].clusterQueue: ClusterQueue "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := New(Params{Inline: tc.manifests, TopologyLevelMapping: tc.mapping, TopologyRequests: tc.rules}, policies.Env{})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if ws := strings.Join(k.Warnings(), "\n"); (tc.name == "unused topology") != strings.Contains(ws, `Topology "t": no ResourceFlavor names it`) {
					t.Errorf("warnings %q", ws)
				}
				return
			}
			var ce *policies.ConfigError
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ce) {
				t.Fatalf("want a ConfigError containing %q, got %v", tc.want, err)
			}
		})
	}
}

// Property: on random clusters (1-3 racks of four 4- or 8-GPU nodes) and random
// gangs that fit one rack, with random priorities, preemption and grace, every
// training gang (required rack) starts inside one rack every time it starts,
// every other gang (preferred rack) starts, and every job completes (no gang is
// starved by fragmentation: each fits a rack of the empty cluster).
func TestTASPropertyRequiredStaysInOneRack(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		racks := rapid.IntRange(1, 3).Draw(rt, "racks")
		per := rapid.SampledFrom([]int32{4, 8}).Draw(rt, "gpusPerNode")
		preempt := rapid.SampledFrom([]string{"", "preemption: {withinClusterQueue: LowerPriority}"}).Draw(rt, "preemption")
		grace := sim.Duration(rapid.SampledFrom([]int{0, 10}).Draw(rt, "grace")) * sim.Second
		n := rapid.IntRange(1, 25).Draw(rt, "jobs")
		var jobs []sim.JobSpec
		for i := 0; i < n; i++ {
			g := rapid.SampledFrom([]int32{1, 2, 4, 8}).Draw(rt, "gpus")
			if g > per {
				g = per
			}
			r := rapid.Int32Range(1, 4*per/g).Draw(rt, "replicas")
			j := MakeJob(fmt.Sprintf("j%02d", i)).Queue("q").GPUs(g).Replicas(r).
				At(float64(rapid.IntRange(0, 300).Draw(rt, "at"))).Dur(float64(rapid.IntRange(1, 200).Draw(rt, "dur"))).
				Prio(int32(rapid.IntRange(0, 3).Draw(rt, "prio"))).Obj()
			if rapid.Bool().Draw(rt, "training") {
				j.Class = sim.ClassTraining
			}
			jobs = append(jobs, j)
		}
		g := policies.Dur(grace)
		m := strings.Replace(strings.Replace(tasQueue, "PREEMPTION", preempt, 1), "nominalQuota: 64", fmt.Sprintf("nominalQuota: %d", int32(racks)*4*per), 1)
		k, err := New(Params{Inline: m, EvictionGracePeriod: &g, TopologyRequests: []TopologyRequestRule{
			{Class: "training", Required: "cloud.provider.com/topology-rack"},
			{Preferred: "cloud.provider.com/topology-rack"},
		}}, policies.Env{})
		if err != nil {
			rt.Fatal(err)
		}
		p := &rackChecker{Kueue: k}
		res := Run(t, Nodes(racks*4, per), p, jobs...)
		if p.bad != "" {
			rt.Fatalf("%s\n%s", p.bad, Schedule(res))
		}
		for i := range res.Jobs {
			if j := &res.Jobs[i]; j.State != sim.StateCompleted {
				rt.Fatalf("%s ended %s\n%s", j.Spec.ID, j.State, Schedule(res))
			}
		}
	})
}

// rackChecker records the first start of a training gang outside one rack.
type rackChecker struct {
	*Kueue
	bad string
}

func (p *rackChecker) Observe(v *sim.View, e sim.Event) {
	p.Kueue.Observe(v, e)
	j := v.Job(e.Job)
	if e.Kind != sim.EvStart || j.Spec.Class != sim.ClassTraining || p.bad != "" {
		return
	}
	c := v.Cluster()
	first, _ := c.NodeGPUs(j.Nodes[0])
	for _, n := range j.Nodes {
		if f, _ := c.NodeGPUs(n); c.GPUDomain(f, sim.LevelLeaf) != c.GPUDomain(first, sim.LevelLeaf) {
			p.bad = fmt.Sprintf("t=%v: training gang %s on nodes %v spans racks", v.Now(), j.Spec.ID, j.Nodes)
		}
	}
}

// A ClusterQueue mixing a non-TAS flavor (a100 nodes, rack 0) and a TAS flavor
// (h100 nodes, rack 1): workloads without a topology request skip the TAS
// flavor (Kueue: "supports only TopologyAwareScheduling"), so the fifth 8-GPU
// one waits for quota on a100 while h100 is idle; a workload with a request
// (selected by its queue) skips the non-TAS flavor and lands in rack 1.
func TestTASMixedClusterQueue(t *testing.T) {
	m := `
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: default}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: plain}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: tas}
spec: {topologyName: default}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: plain, resources: [{name: nvidia.com/gpu, nominalQuota: 32}]}
    - {name: tas, resources: [{name: nvidia.com/gpu, nominalQuota: 32}]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: cq}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: tq}
spec: {clusterQueue: cq}
`
	g := policies.Dur(0)
	k, err := New(Params{Inline: m, EvictionGracePeriod: &g, FlavorModels: map[string][]string{"plain": {"a100"}, "tas": {"h100"}},
		TopologyRequests: []TopologyRequestRule{{Queue: "tq", Required: "cloud.provider.com/topology-rack"}}}, policies.Env{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := Nodes(8, 8)
	for i := 0; i < 4; i++ {
		nodes[i].GPUModel = "a100"
	}
	var jobs []sim.JobSpec
	for i := 0; i < 5; i++ {
		jobs = append(jobs, MakeJob(fmt.Sprintf("u%d", i)).Queue("q").GPUs(8).Dur(100).Obj())
	}
	jobs = append(jobs, MakeJob("rack").Queue("tq").GPUs(8).Replicas(2).Dur(100).Obj())
	p := &placed{Kueue: k}
	res := Run(t, nodes, p, jobs...)
	st := Starts(res)
	for i := 0; i < 4; i++ {
		id := fmt.Sprintf("u%d", i)
		if st[id] != 0 || !slices.Equal(p.nodes[id], []sim.NodeID{sim.NodeID(i)}) {
			t.Errorf("%s started at %v on %v, want 0 on node %d", id, st[id], p.nodes[id], i)
		}
	}
	if st["u4"] != 100 || !waits(res, "u4", 0, sim.ReasonQuota) {
		t.Errorf("u4 started at %v, want 100 after a quota wait\n%s", st["u4"], Schedule(res))
	}
	if st["rack"] != 0 || !slices.Equal(p.nodes["rack"], []sim.NodeID{4, 5}) {
		t.Errorf("rack started at %v on %v, want 0 on [4 5]\n%s", st["rack"], p.nodes["rack"], Schedule(res))
	}
}

// NVLink cliques spanning nodes (GB200 NVL72 style: nvidia.com/gpu.clique maps
// to the nvlink level): 4 nodes x 4 GPUs, cliques {0,1} and {2,3}, one rack.
// Fillers hold every node at t=0; nodes 1 and 3 free up at t=100 (one per
// clique), node 2 at t=300. A 2 x 4 gang arriving at t=50 that requires one
// clique starts at t=300 on nodes 2 and 3; one that prefers a clique falls
// back to the rack at t=100 (nodes 1 and 3).
func TestTASNVLinkClique(t *testing.T) {
	m := `
apiVersion: kueue.x-k8s.io/v1beta1
kind: Topology
metadata: {name: nvl}
spec:
  levels:
  - nodeLabel: cloud.provider.com/topology-rack
  - nodeLabel: nvidia.com/gpu.clique
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: gb200}
spec: {topologyName: nvl}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gb200, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: cq}
`
	for _, tc := range []struct {
		rule  TopologyRequestRule
		start float64
		nodes []sim.NodeID
	}{
		{TopologyRequestRule{Class: "training", Required: "nvidia.com/gpu.clique"}, 300, []sim.NodeID{2, 3}},
		{TopologyRequestRule{Class: "training", Preferred: "nvidia.com/gpu.clique"}, 100, []sim.NodeID{1, 3}},
	} {
		name := "required"
		if tc.rule.Preferred != "" {
			name = "preferred"
		}
		t.Run(name, func(t *testing.T) {
			g := policies.Dur(0)
			k, err := New(Params{Inline: m, EvictionGracePeriod: &g, TopologyRequests: []TopologyRequestRule{tc.rule}}, policies.Env{})
			if err != nil {
				t.Fatal(err)
			}
			nodes := Nodes(4, 4)
			for i := range nodes {
				nodes[i].NVLinkDomain = int32(1 + i/2)
			}
			var jobs []sim.JobSpec
			for i, d := range []float64{1000, 100, 300, 100} {
				jobs = append(jobs, MakeJob(fmt.Sprintf("f%d", i)).Queue("q").GPUs(4).Dur(d).Obj())
			}
			gang := MakeJob("gang").Queue("q").GPUs(4).Replicas(2).At(50).Dur(10).Obj()
			gang.Class = sim.ClassTraining
			p := &placed{Kueue: k}
			res := Run(t, nodes, p, append(jobs, gang)...)
			if st := Starts(res); st["gang"] != tc.start || !slices.Equal(p.nodes["gang"], tc.nodes) {
				t.Fatalf("gang started at %v on %v, want %v on %v\n%s", st["gang"], p.nodes["gang"], tc.start, tc.nodes, Schedule(res))
			}
		})
	}
}

// topologyRequests rules apply only to ClusterQueues with a TAS flavor: a
// default rule does not make the workloads of a non-TAS ClusterQueue
// inadmissible.
func TestTASRulesSkipNonTASClusterQueues(t *testing.T) {
	m := strings.Replace(tasQueue, "PREEMPTION", "", 1) + `---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: plain}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: plain-cq}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: plain, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: pq}
spec: {clusterQueue: plain-cq}
`
	k, err := New(Params{Inline: m, TopologyRequests: []TopologyRequestRule{{Required: "kubernetes.io/hostname"}}}, policies.Env{})
	if err != nil {
		t.Fatal(err)
	}
	res := Run(t, Nodes(2, 8), k,
		MakeJob("tas").Queue("q").GPUs(4).Replicas(2).Dur(10).Obj(),
		MakeJob("plain").Queue("pq").GPUs(8).Dur(10).Obj())
	if st := Starts(res); st["tas"] != 0 || st["plain"] != 0 {
		t.Fatalf("starts %v, want both at 0\n%s", st, Schedule(res))
	}
}
