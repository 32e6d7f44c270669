package kueue

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

const twoTeams = `
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohort: org
  preemption: {reclaimWithinCohort: RECLAIM}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohort: org
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources: [{name: nvidia.com/gpu, nominalQuota: 16}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: a, namespace: default}
spec: {clusterQueue: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: b, namespace: default}
spec: {clusterQueue: team-b}
`

func newKueue(t *testing.T, manifests string, grace sim.Duration) *Kueue {
	t.Helper()
	g := policies.Dur(grace)
	k, err := New(Params{Inline: manifests, EvictionGracePeriod: &g}, policies.Env{})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func teamJobs() []sim.JobSpec {
	var jobs []sim.JobSpec
	for i := 0; i < 32; i++ {
		jobs = append(jobs, MakeJob(fmt.Sprintf("b%02d", i)).Queue("b").Dur(1000).Obj())
	}
	for i := 0; i < 16; i++ {
		jobs = append(jobs, MakeJob(fmt.Sprintf("a%02d", i)).Queue("a").At(10).Dur(100).Obj())
	}
	return jobs
}

// policies.md 7.4: two ClusterQueues of 16 GPUs in one cohort on 32 GPUs. B borrows
// all 32 while A is idle; A then submits 16 one-GPU jobs at t=10. With
// reclaimWithinCohort: Any the head starts one cycle plus the eviction grace period
// later; A's queue head is sticky while its victim terminates (Kueue#6929), so
// with a 30 s grace A's k-th job starts at 10+30(k+1) s, and with no grace all 16
// start at once. With Never (or LowerPriority against equal priority) they wait
// for B's jobs to finish at 1000 s.
func TestReclaimWithinCohort(t *testing.T) {
	for _, tc := range []struct {
		reclaim string
		grace   sim.Duration
		wantA   func(k int) float64
	}{
		{"Any", 30 * sim.Second, func(k int) float64 { return 10 + 30*float64(k+1) }},
		{"Any", 0, func(int) float64 { return 10 }},
		{"Never", 30 * sim.Second, func(int) float64 { return 1000 }},
		{"LowerPriority", 0, func(int) float64 { return 1000 }},
	} {
		t.Run(fmt.Sprintf("%s/grace=%v", tc.reclaim, tc.grace), func(t *testing.T) {
			k := newKueue(t, strings.Replace(twoTeams, "RECLAIM", tc.reclaim, 1), tc.grace)
			res := Run(t, Nodes(4, 8), k, teamJobs()...)
			st := Starts(res)
			for i := 0; i < 32; i++ {
				if st[fmt.Sprintf("b%02d", i)] != 0 {
					t.Fatalf("B's jobs should all start at 0 by borrowing: %v", st)
				}
			}
			for i := 0; i < 16; i++ {
				if got := st[fmt.Sprintf("a%02d", i)]; got != tc.wantA(i) {
					t.Fatalf("a%02d started at %v, want %v\n%s", i, got, tc.wantA(i), Schedule(res))
				}
			}
			preempted, running := 0, 0
			for i := range res.Jobs {
				preempted += int(res.Jobs[i].Preempted)
			}
			for _, e := range res.Log {
				if e.Kind == sim.EvPreempt {
					running++
				}
			}
			// Each of A's 16 jobs evicts one B workload. With a grace period, B
			// re-borrows the quota A's finished jobs free; such a re-admitted
			// workload, evicted before its pods ran, is not started: 5 running
			// victims (EvPreempt) and 11 evicted while admitted (EvEvict). Both
			// count as preemptions, as Kueue counts both as evictions.
			wantEv, wantRun := 16, 16
			if tc.grace > 0 {
				wantRun = 5
			}
			if tc.reclaim != "Any" {
				wantEv, wantRun = 0, 0
			}
			if k.Evictions() != wantEv || preempted != wantEv || running != wantRun {
				t.Errorf("%d evictions, %d preemptions, %d of running jobs; want %d, %d, %d", k.Evictions(), preempted, running, wantEv, wantEv, wantRun)
			}
		})
	}
}

// One head per ClusterQueue per cycle, and later entries of the same cycle are
// checked against earlier admissions: with StrictFIFO a head that does not fit
// blocks its own queue but not the other queue.
func TestStrictFIFOBlocksOnlyItsQueue(t *testing.T) {
	m := strings.Replace(twoTeams, "RECLAIM", "Never", 1)
	m = strings.Replace(m, "  cohort: org\n  preemption: {reclaimWithinCohort: Never}\n", "  queueingStrategy: StrictFIFO\n", 1)
	m = strings.Replace(m, "  cohort: org\n", "", 1)
	k := newKueue(t, m, 0)
	jobs := []sim.JobSpec{
		MakeJob("a-big").Queue("a").GPUs(8).Replicas(3).Dur(10).Obj(), // 24 GPUs > 16 quota: never fits
		MakeJob("a-small").Queue("a").At(1).Dur(10).Obj(),
		MakeJob("b-small").Queue("b").At(1).Dur(10).Obj(),
	}
	e, err := sim.NewEngine(sim.Config{Cluster: Cluster(t, Nodes(4, 8)), Jobs: jobs, Policy: k})
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	st := Starts(res)
	if st["a-small"] != -1 || st["b-small"] != 1 {
		t.Errorf("StrictFIFO: a-small must stay blocked behind a-big, b-small must run: %v", st)
	}
}

func TestBestEffortFIFOSkipsInadmissibleHead(t *testing.T) {
	m := strings.Replace(twoTeams, "RECLAIM", "Never", 1)
	k := newKueue(t, m, 0)
	jobs := []sim.JobSpec{
		MakeJob("a-big").Queue("a").GPUs(8).Replicas(5).Dur(10).Obj(), // 40 GPUs > 32 in the cohort
		MakeJob("a-small").Queue("a").At(1).Dur(10).Obj(),
	}
	res := Run(t, Nodes(4, 8), k, jobs...)
	if st := Starts(res); st["a-small"] != 1 {
		t.Errorf("BestEffortFIFO: a-small should pass the inadmissible head: %v", st)
	}
}

func TestManifestErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\nspec:\n  cohrt: y\n", `m.yaml:5: ClusterQueue "x": spec.cohrt: unknown field`},
		{"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\nspec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors: [{name: nope, resources: [{name: cpu, nominalQuota: 1}]}]\n", `ResourceFlavor "nope" not found`},
		{"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\nspec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1x}]}]\n", `nominalQuota: invalid quantity "1x"`},
		{"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: x}\nspec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors: [{name: f, resources: [{name: cpu, nominalQuota: 1, borrowingLimit: 2}]}]\n", "only allowed when the queue has a cohort"},
		{"apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q}\nspec: {clusterQueue: missing}\n", `spec.clusterQueue "missing" not found`},
	} {
		_, err := ParseManifests("m.yaml", []byte(tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want error containing %q, got %v", tc.want, err)
		}
	}
}

// The Kueue documentation's example setups load and run; fields gpusim does not
// simulate come back as warnings.
func TestDocExamplesLoadAndRun(t *testing.T) {
	for _, tc := range []struct {
		file, lq string
		warn     string
	}{
		{"single-clusterqueue.yaml", "user-queue", ""},
		{"cohort-borrowing.yaml", "team-a/lq", ""},
		{"fair-sharing.yaml", "vision", ""}, // simulated: see TestFairSharingExamplesSimulated
		{"tas.yaml", "tas-user-queue", ""},  // TAS is simulated (tas_test.go)
	} {
		t.Run(tc.file, func(t *testing.T) {
			p := Params{Manifests: "../../examples/kueue/" + tc.file}
			p.QueueMapping.Default = tc.lq
			k, err := New(p, policies.Env{})
			if err != nil {
				t.Fatal(err)
			}
			ws := strings.Join(k.Warnings(), "\n")
			if tc.warn != "" && !strings.Contains(ws, tc.warn) {
				t.Errorf("want a warning about %s, got %q", tc.warn, ws)
			}
			if strings.Contains(ws, "TAS") || strings.Contains(ws, "Topology") {
				t.Errorf("TAS is simulated, want no warning about it, got %q", ws)
			}
			var jobs []sim.JobSpec
			for i := 0; i < 40; i++ {
				jobs = append(jobs, MakeJob(fmt.Sprintf("j%02d", i)).GPUs(int32(1<<(i%4))).At(float64(i)).Dur(100).CPU(4000).Obj())
			}
			nodes := Nodes(4, 8)
			for i := range nodes {
				nodes[i].Pool = "h100"
			}
			res := Run(t, nodes, k, jobs...)
			for i := range res.Jobs {
				if res.Jobs[i].State != sim.StateCompleted {
					t.Fatalf("%s: job %s ended %s", tc.file, res.Jobs[i].Spec.ID, res.Jobs[i].State)
				}
			}
		})
	}
}

// withinClusterQueue: LowerPriority evicts the lowest-priority, most recently
// admitted workloads first, and fill-back keeps only the victims needed.
func TestWithinQueuePreemptionOrderAndFillBack(t *testing.T) {
	m := `
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: q}
spec: {clusterQueue: cq}
`
	k := newKueue(t, m, 0)
	jobs := []sim.JobSpec{
		MakeJob("low-old").Queue("q").GPUs(4).Prio(1).Dur(1000).Obj(),
		MakeJob("low-new").Queue("q").GPUs(2).Prio(1).At(1).Dur(1000).Obj(),
		MakeJob("mid").Queue("q").GPUs(2).Prio(5).At(2).Dur(1000).Obj(),
		MakeJob("high").Queue("q").GPUs(2).Prio(9).At(10).Dur(50).Obj(), // needs 2: evict only low-new
	}
	res := Run(t, Nodes(1, 8), k, jobs...)
	for i := range res.Jobs {
		j := &res.Jobs[i]
		want := int32(0)
		if j.Spec.ID == "low-new" {
			want = 1
		}
		if j.Preempted != want {
			t.Errorf("%s preempted %d times, want %d\n%s", j.Spec.ID, j.Preempted, want, Schedule(res))
		}
	}
	if st := Starts(res); st["high"] != 10 {
		t.Errorf("high started at %v, want 10", st["high"])
	}
}

// Per-queue metrics: B's 16 evictions (5 of running jobs, 11 of admitted
// workloads not yet started; see TestReclaimWithinCohort) are counted as
// preemptions and the runs they cut short as wasted GPU-hours; shares add up
// to 1.
func TestPerQueueMetricsAfterReclaim(t *testing.T) {
	k := newKueue(t, strings.Replace(twoTeams, "RECLAIM", "Any", 1), 30*sim.Second)
	res := Run(t, Nodes(4, 8), k, teamJobs()...)
	s := reports.Summarize(res, reports.Provenance{}, 0)
	b, a := s.PerQueue["b"], s.PerQueue["a"]
	if b.Preemptions != 16 || a.Preemptions != 0 {
		t.Errorf("preemptions a=%d b=%d, want 0 and 16", a.Preemptions, b.Preemptions)
	}
	// Recompute from the event log: each preempted run lasted from its start to the
	// preemption, on one GPU.
	var want float64
	started := map[sim.JobRef]sim.Time{}
	for _, e := range res.Log {
		switch e.Kind {
		case sim.EvStart:
			started[e.Job] = e.Time
		case sim.EvPreempt:
			want += (e.Time - started[e.Job]).Seconds() / 3600
		}
	}
	if math.Abs(b.WastedGPUHours-want) > 1e-5 || want == 0 {
		t.Errorf("wasted GPU-hours of b = %v, want %v", b.WastedGPUHours, want)
	}
	if d := a.Share + b.Share; math.Abs(d-1) > 1e-5 {
		t.Errorf("shares add up to %v", d)
	}
}

// namespaceSelector: {} (all namespaces, the documentation's setting) is what the
// simulation does anyway; a real selector is reported as not simulated.
func TestNamespaceSelectorWarning(t *testing.T) {
	base := `apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: SEL
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
`
	for sel, warn := range map[string]bool{"{}": false, "{matchLabels: {team: a}}": true} {
		m, err := ParseManifests("m.yaml", []byte(strings.Replace(base, "SEL", sel, 1)))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Contains(strings.Join(m.Warnings, "\n"), "namespaceSelector")
		if got != warn {
			t.Errorf("namespaceSelector %s: warning %v, want %v (%v)", sel, got, warn, m.Warnings)
		}
	}
}

// Issue 17, gap 6: with evictionGracePeriod 0s, a workload admitted while
// borrowing in one cycle and reclaimed in the next, at the same instant, is a
// real Kueue eviction (the controller admits the Workload, then evicts it). On
// 32 GPUs (team-a and team-b nominal 16 each, reclaimWithinCohort Any), at 0 s:
// cycle 1 parks a's head a0 (40 GPUs, never fits) and admits b1 (b's nominal
// 16); cycle 2 parks a0b (48 GPUs) and admits b2 by borrowing a's idle 16;
// cycle 3 a1 reclaims a's quota and evicts b2 before its pods ran. The engine
// logs it (EvEvict at 0 s) and counts it as b2's preemption; b2 starts when a1
// frees the quota at 30 s.
func TestAdmitThenReclaimAtOneInstantIsAnEviction(t *testing.T) {
	k := newKueue(t, strings.Replace(twoTeams, "RECLAIM", "Any", 1), 0)
	res := Run(t, Nodes(4, 8), k,
		MakeJob("b1").Queue("b").Replicas(2).GPUs(8).Dur(100).Obj(),
		MakeJob("b2").Queue("b").Replicas(2).GPUs(8).Dur(50).Obj(),
		MakeJob("a0").Queue("a").Replicas(5).GPUs(8).Dur(10).Obj(),
		MakeJob("a0b").Queue("a").Replicas(6).GPUs(8).Dur(10).Obj(),
		MakeJob("a1").Queue("a").Replicas(2).GPUs(8).Dur(30).Obj(),
	)
	st := Starts(res)
	for id, want := range map[string]float64{"b1": 0, "a1": 0, "b2": 30} {
		if st[id] != want {
			t.Errorf("%s started at %v, want %v\n%s", id, st[id], want, Schedule(res))
		}
	}
	var evicts []string
	for _, e := range res.Log {
		if e.Kind == sim.EvEvict {
			evicts = append(evicts, fmt.Sprintf("%s@%v", res.Jobs[e.Job].Spec.ID, e.Time.Seconds()))
		}
	}
	if fmt.Sprint(evicts) != "[b2@0]" {
		t.Errorf("evict events %v, want [b2@0]\n%s", evicts, Schedule(res))
	}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		want := int32(0)
		if j.Spec.ID == "b2" {
			want = 1
		}
		if j.Preempted != want {
			t.Errorf("%s preempted %d times, want %d", j.Spec.ID, j.Preempted, want)
		}
	}
	if k.Evictions() != 1 {
		t.Errorf("Kueue evictions %d, want 1", k.Evictions())
	}
	if b := reports.Summarize(res, reports.Provenance{}, 0).PerQueue["b"]; b.Preemptions != 1 || b.WastedGPUHours != 0 {
		t.Errorf("queue b: %d preemptions, %v wasted GPU-hours; want 1 and 0", b.Preemptions, b.WastedGPUHours)
	}
}
