package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpusim/gpusim/policies"
	_ "github.com/gpusim/gpusim/scenarios" // registers every policy
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

type nopBackend struct{ started int }

func (b *nopBackend) Start(*sim.Job) error    { b.started++; return nil }
func (b *nopBackend) Stop(*sim.Preempt) error { return nil }

// kueueParams are kueue policy params with one ResourceFlavor, one
// ClusterQueue cq (quota GPUs, and the ClusterQueue preemption block
// preemption, e.g. "{withinClusterQueue: LowerPriority}", when not empty)
// and LocalQueue ns/lq.
func kueueParams(quota int, preemption, ns string) string {
	pre := ""
	if preemption != "" {
		pre = "\n    preemption: " + preemption
	}
	return fmt.Sprintf(`inline: |
  apiVersion: kueue.x-k8s.io/v1beta1
  kind: ResourceFlavor
  metadata: {name: f}
  ---
  apiVersion: kueue.x-k8s.io/v1beta1
  kind: ClusterQueue
  metadata: {name: cq}
  spec:
    namespaceSelector: {}%s
    resourceGroups:
    - coveredResources: ["nvidia.com/gpu"]
      flavors:
      - name: f
        resources: [{name: nvidia.com/gpu, nominalQuota: %d}]
  ---
  apiVersion: kueue.x-k8s.io/v1beta1
  kind: LocalQueue
  metadata: {namespace: %s, name: lq}
  spec: {clusterQueue: cq}
`, pre, quota, ns)
}

// liveParams are the params TestLiveSubmitGrowth and TestLiveSubmitMatches
// give a policy (none: its defaults), chosen so that a job table growing
// after the first call matters: Slurm fair share over several accounts and
// users (auto-created users extend the association tree), several Volcano
// queues.
var liveParams = map[string]string{
	"kueue": kueueParams(8, "", "default"),
	"slurm": `
priority:
  weights: {fairshare: 10000, age: 100}
  calcPeriod: 1m
  decayHalfLife: 10m
accounts:
  - {name: a, shares: 3, users: [{name: u0}, {name: u1}]}
  - {name: b, shares: 1, users: [{name: u2}]}
`,
	"volcano": `
queues:
  - {name: q0, weight: 1}
  - {name: q1, weight: 2, capability: {nvidia.com/gpu: 32}}
  - {name: q2, weight: 1, guarantee: {nvidia.com/gpu: 4}}
actions: "enqueue, allocate, reclaim, backfill"
`,
	"carbon-aware":           "maxDelay: 2h",
	"easy-backfill+forecast": "forecast: {minGPUs: 4, horizon: 10m}",
	"fifo+fgd":               "placement: fgd",
}

// liveVariants are the policies TestLiveSubmitGrowth runs besides
// GrowingPolicies: labels policy+variant with liveParams of their own.
var liveVariants = []string{"easy-backfill+forecast", "fifo+fgd"}

// liveSpec gives job i of a live test the user, team and queue that spread
// the jobs over the accounts and queues of liveParams; with newUsers, every
// fourth job is of a user no account lists (Slurm creates its association
// when the job is mapped).
func liveSpec(name string, s sim.JobSpec, i int, newUsers bool) sim.JobSpec {
	switch name {
	case "kueue":
		s.Queue = "lq"
	case "slurm":
		s.User, s.Team = fmt.Sprint("u", i%3), map[int]string{0: "a", 1: "a", 2: "b"}[i%3]
		if newUsers && i%4 == 3 {
			s.User, s.Team = fmt.Sprint("new", i), ""
		}
	case "volcano":
		s.Queue = fmt.Sprint("q", i%3)
	}
	return s
}

// livePolicy builds the policy labelled label (a policy name, or
// name+variant) with its liveParams.
func livePolicy(t *testing.T, label string) sim.Policy {
	t.Helper()
	name, _, _ := strings.Cut(label, "+")
	var params *yaml.Node
	if src, ok := liveParams[label]; ok {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(src), &n); err != nil {
			t.Fatal(err)
		}
		params = n.Content[0]
	}
	p, err := policies.New(name, params)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return p
}

// TestLiveSubmitGrowth: every policy in GrowingPolicies schedules jobs
// submitted one by one after its first call (sim.Live.Submit), as the
// Kubernetes backend submits pods it observes; and Run refuses the others.
func TestLiveSubmitGrowth(t *testing.T) {
	for _, name := range append(slices.Clone(GrowingPolicies), liveVariants...) {
		p := livePolicy(t, name)
		cl, err := sim.NewCluster([]sim.NodeSpec{{Name: "n", GPUModel: "H100", GPUs: 8, CPUMilli: 64000, MemoryMiB: 1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		b := &nopBackend{}
		l, err := sim.NewLive(sim.Config{Cluster: cl, Policy: p}, b, 20, sim.Seconds(1))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 12; i++ {
			if err := l.Advance(sim.Time(sim.Seconds(float64(100*i))), nil); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			spec := liveSpec(name, sim.JobSpec{ID: sim.JobID(fmt.Sprint("j", i)), Replicas: 1, GPUsPerReplica: 4, GPUMilli: sim.WholeGPU, Duration: sim.Seconds(100)}, i, true)
			if _, err := l.Submit(spec); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := l.Schedule(false); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			// Let the periodic passes (volcano's sessions, slurm's
			// sched_interval) run, then end the running jobs so that later
			// submissions start too.
			for at := l.NextTimer(); at > l.Now() && at < l.Now()+sim.Time(sim.Seconds(90)); at = l.NextTimer() {
				if err := l.Advance(at, nil); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := l.Schedule(false); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
			var ends []sim.Ended
			for _, j := range l.View().Running() {
				ends = append(ends, sim.Ended{Job: j.Ref})
			}
			if err := l.Advance(l.Now()+1, ends); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if b.started != 12 {
			t.Errorf("%s: %d of 12 submitted jobs started", name, b.started)
		}
	}
	if _, err := newScheduler(Options{Client: fake.NewClientset(), Config: sim.Config{Policy: fixedPolicy{}}}); err == nil || !strings.Contains(err.Error(), "does not yet accept") {
		t.Errorf("fixed-table policy: %v", err)
	}
	if _, err := newScheduler(Options{Client: fake.NewClientset(), Config: sim.Config{Policy: mustPolicy(t, "fifo")}, DryRun: true, Shadow: true}); err == nil {
		t.Error("dry run and shadow together accepted")
	}
}

// fixedPolicy stands for a policy not in GrowingPolicies.
type fixedPolicy struct{}

func (fixedPolicy) Name() string                        { return "fixed-table" }
func (fixedPolicy) Schedule(*sim.View, *sim.Plan) error { return nil }

// TestLiveSubmitMatchesSimulation: the Kubernetes backend's way of driving
// the engine (no jobs up front; each job submitted when its pods are seen)
// makes the simulation's decisions when runs take exactly their durations:
// the same first start of every job, for every growing policy. So the
// residual error of TestE2ESimVsLive comes from the real system's timing.
func TestLiveSubmitMatchesSimulation(t *testing.T) {
	trace := simLiveTrace(200)
	nodes := make([]sim.NodeSpec, e2eNodes)
	for i := range nodes {
		nodes[i] = sim.NodeSpec{Name: fmt.Sprintf("gpu-%d", i), GPUModel: "H100", GPUs: e2eGPUs, CPUMilli: 64000, MemoryMiB: 1 << 20}
	}
	jobs := make([]sim.JobSpec, len(trace))
	for i, j := range trace {
		reps, g := int32(1), int32(j.gpus)
		if j.gpus > e2eGPUs {
			reps, g = int32(j.gpus/e2eGPUs), e2eGPUs
		}
		jobs[i] = sim.JobSpec{ID: sim.JobID(j.id), Submit: sim.Time(sim.Seconds(j.submit)), Replicas: reps, GPUsPerReplica: g,
			GPUMilli: sim.WholeGPU, Duration: sim.Seconds(j.dur), Class: sim.ClassUnknown, Queue: "simlive-kueue/lq"}
	}
	for _, name := range []string{"fifo", "easy-backfill", "kueue"} {
		t.Run(name, func(t *testing.T) {
			liveMatchesSim(t, nodes, jobs, func() sim.Policy { return mustPolicy(t, name) }, nil)
		})
	}
}

// TestLiveSubmitMatchesSimulationGrowing: as TestLiveSubmitMatchesSimulation,
// for the policies whose tables grow with the job table, with the params
// that make growth matter (liveParams: Slurm accounts and users, Volcano
// queues with reclaim). Every Slurm user is listed in an account: a user a
// simulation auto-creates at set-up, a live run creates at its first job
// (docs/live-kubernetes.md).
func TestLiveSubmitMatchesSimulationGrowing(t *testing.T) {
	trace := simLiveTrace(200)
	nodes := make([]sim.NodeSpec, e2eNodes)
	for i := range nodes {
		nodes[i] = sim.NodeSpec{Name: fmt.Sprintf("gpu-%d", i), GPUModel: "H100", GPUs: e2eGPUs, CPUMilli: 64000, MemoryMiB: 1 << 20}
	}
	for _, name := range []string{"slurm", "volcano", "lucid", "easy-backfill+forecast"} {
		t.Run(name, func(t *testing.T) {
			jobs := make([]sim.JobSpec, len(trace))
			for i, j := range trace {
				reps, g := int32(1), int32(j.gpus)
				if j.gpus > e2eGPUs {
					reps, g = int32(j.gpus/e2eGPUs), e2eGPUs
				}
				jobs[i] = liveSpec(name, sim.JobSpec{ID: sim.JobID(j.id), Submit: sim.Time(sim.Seconds(j.submit)), Replicas: reps, GPUsPerReplica: g,
					GPUMilli: sim.WholeGPU, Duration: sim.Seconds(j.dur), Class: sim.ClassUnknown}, i, false)
			}
			want := liveMatchesSim(t, nodes, jobs, func() sim.Policy { return livePolicy(t, name) }, nil)
			// The policy's own order shows: some job starts before one
			// submitted earlier that waits (not FIFO).
			overtakes := 0
			for i := range want.Jobs {
				for k := range i {
					if want.Jobs[i].FirstStart < want.Jobs[k].FirstStart {
						overtakes++
					}
				}
			}
			if overtakes == 0 {
				t.Error("no job overtook an earlier one: the comparison does not exercise the policy")
			}
			t.Logf("%d jobs, %d overtakes", len(want.Jobs), overtakes)
		})
	}
}

// liveMatchesSim runs jobs through Engine.Run and through sim.Live, each job
// submitted at its Submit time and every run ended exactly its duration
// after it started, and fails unless every job starts and ends at the same
// times in both. conf, if not nil, completes both configurations. It returns
// the simulation's result.
func liveMatchesSim(t *testing.T, nodes []sim.NodeSpec, jobs []sim.JobSpec, mk func() sim.Policy, conf func(sim.Config) sim.Config) *sim.Result {
	t.Helper()
	if conf == nil {
		conf = func(c sim.Config) sim.Config { return c }
	}
	c1, _ := sim.NewCluster(nodes)
	e, err := sim.NewEngine(conf(sim.Config{Cluster: c1, Jobs: jobs, Policy: mk()}))
	if err != nil {
		t.Fatal(err)
	}
	want, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := sim.NewCluster(nodes)
	b := simtest.ExactEnds{}
	l, err := sim.NewLive(conf(sim.Config{Cluster: c2, Policy: mk()}), b, len(jobs), sim.Second)
	if err != nil {
		t.Fatal(err)
	}
	simtest.DriveLive(t, l, jobs, b)
	got := l.Result()
	for i := range want.Jobs {
		w := &want.Jobs[i]
		r, ok := l.Lookup(w.Spec.ID)
		if !ok {
			t.Fatalf("%s not submitted", w.Spec.ID)
		}
		if w.State != sim.StateCompleted {
			t.Fatalf("%s: %s in the simulation", w.Spec.ID, w.State)
		}
		if g := &got.Jobs[r]; g.FirstStart != w.FirstStart || g.End != w.End {
			t.Fatalf("%s: live start %v end %v, simulation %v %v", w.Spec.ID, g.FirstStart, g.End, w.FirstStart, w.End)
		}
	}
	return want
}
