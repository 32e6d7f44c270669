package kube

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpusim/gpusim/internal/kubetest"
	"github.com/gpusim/gpusim/policies"
	_ "github.com/gpusim/gpusim/policies/kueue" // registers kueue
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// One control plane (and its 8 GPU nodes) serves every end-to-end test of
// the package; each test works in its own namespace and runs its own
// scheduler and FakeKubelet, one test at a time.
var e2eShared = &kubetest.Shared{Prefix: "gpusim-kube-e2e-", Setup: func(ctx context.Context, c *kubetest.Cluster) error {
	if err := c.InstallWorkloadCRDs(ctx); err != nil {
		return err
	}
	for i := 0; i < e2eNodes; i++ {
		labels := map[string]string{LabelGPUProduct: "H100", DefaultRackLabel: fmt.Sprintf("r%d", i/4)}
		if _, err := c.CreateReadyGPUNode(ctx, fmt.Sprintf("gpu-%d", i), e2eGPUs, labels); err != nil {
			return err
		}
	}
	return nil
}}

const e2eNodes, e2eGPUs = 8, 8

func TestMain(m *testing.M) {
	code := m.Run()
	e2eShared.Stop()
	os.Exit(code)
}

// e2e returns the shared control plane with its nodes and creates namespace
// ns; it skips (or fails with GPUSIM_E2E_REQUIRE=1) without the binaries.
func e2e(t *testing.T, ns string) *kubetest.Cluster {
	t.Helper()
	c := e2eShared.Get(t)
	if err := c.CreateNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return c
}

// e2ePod is a pod of scheduler sched asking for gpus GPUs for dur
// simulated seconds (no annotation when dur < 0).
func e2ePod(ns, name, sched string, gpus int64, dur float64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{SchedulerName: sched, Containers: []corev1.Container{{
			Name: "train", Image: "registry.invalid/train:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}},
		}}},
	}
	if dur >= 0 {
		p.Annotations[AnnotationDuration] = strconv.FormatFloat(dur, 'f', -1, 64)
	}
	return p
}

func createPodGroup(t *testing.T, ctx context.Context, c *kubetest.Cluster, ns, name string, minMember any) {
	t.Helper()
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"minMember": minMember},
	}}
	if _, err := c.Dynamic.Resource(podGroupGVR).Namespace(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// runner runs a scheduler in the background; stop cancels it and returns
// its result and log.
type runner struct {
	cancel context.CancelFunc
	done   chan error
	res    *sim.Result
	log    *kubetest.SyncBuffer
	ready  chan struct{}
}

func startRun(t *testing.T, c *kubetest.Cluster, opt Options) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{cancel: cancel, done: make(chan error, 1), log: &kubetest.SyncBuffer{}, ready: make(chan struct{})}
	opt.Client, opt.Dynamic, opt.Log = c.Client, c.Dynamic, r.log
	opt.Ready = func() { close(r.ready) }
	opt.Done = func(res *sim.Result) { r.res = res }
	if opt.PolicyLabel == "" {
		opt.PolicyLabel = "fifo"
	}
	if opt.Config.Policy == nil {
		opt.Config.Policy = mustPolicy(t, "fifo")
	}
	go func() { r.done <- Run(ctx, opt) }()
	select {
	case <-r.ready:
	case err := <-r.done:
		cancel()
		t.Fatalf("Run: %v\n%s", err, r.log)
	case <-time.After(time.Minute):
		cancel()
		t.Fatal("scheduler not ready after 1 min")
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *runner) stop(t *testing.T) *sim.Result {
	t.Helper()
	if r.cancel == nil {
		return r.res
	}
	r.cancel()
	r.cancel = nil
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v\n%s", err, r.log)
	}
	return r.res
}

// mustPolicy makes a registered policy; kueue gets testdata/kueue-simlive.yaml.
func mustPolicy(t *testing.T, name string) sim.Policy {
	t.Helper()
	var params *yaml.Node
	if name == "kueue" {
		params = &yaml.Node{}
		if err := yaml.Unmarshal([]byte("manifests: testdata/kueue-simlive.yaml"), params); err != nil {
			t.Fatal(err)
		}
		params = params.Content[0]
	}
	p, err := policies.New(name, params)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond every 100 ms until it holds or d passes (then it
// fails with the tail of log).
func waitFor(t *testing.T, d time.Duration, what string, log *kubetest.SyncBuffer, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			s := log.String()
			t.Fatalf("timed out after %v waiting for %s; scheduler log tail:\n%s", d, what, s[max(0, len(s)-6000):])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func getPod(t *testing.T, c *kubetest.Cluster, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := c.Client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func podEvents(t *testing.T, c *kubetest.Cluster, ns, pod string) []corev1.Event {
	t.Helper()
	l, err := c.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

func hasEvent(evs []corev1.Event, reason string) bool {
	for _, e := range evs {
		if e.Reason == reason {
			return true
		}
	}
	return false
}

// traceJob is one job of the sim-vs-live trace.
type traceJob struct {
	id     string
	submit float64 // simulated seconds
	gpus   int     // 1, 2, 4, 8 or 16 (two 8-GPU pods in a PodGroup)
	dur    float64
}

// simLiveTrace is a seeded trace of n jobs whose load (about 1.3 on 64 GPUs)
// makes a queue: sizes 1, 2, 4, 8 and 16 GPUs, durations 600-3600 s.
func simLiveTrace(n int) []traceJob {
	rng := rand.New(rand.NewPCG(13, 1))
	sizes := []int{1, 1, 1, 2, 2, 4, 4, 8, 8, 16}
	out := make([]traceJob, n)
	t := 0.0
	for i := range out {
		t += math.Round(rng.ExpFloat64() * 110)
		out[i] = traceJob{id: fmt.Sprintf("j%03d", i), submit: t, gpus: sizes[rng.IntN(len(sizes))], dur: float64(600 + 60*rng.IntN(51))}
	}
	return out
}

// TestE2ESimVsLive runs a 200-job trace live on 64 GPUs (8 nodes, FakeKubelet)
// and in simulation, and compares them with the fidelity code of `gpusim
// report` (Kendall tau-b of first starts, mean JCT). fifo always; easy-backfill
// too with GPUSIM_E2E_FULL=1.
func TestE2ESimVsLive(t *testing.T) {
	names := []string{"fifo"}
	if os.Getenv("GPUSIM_E2E_FULL") == "1" {
		names = append(names, "easy-backfill", "kueue")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) { simVsLive(t, name) })
	}
}

func simVsLive(t *testing.T, policy string) {
	ns := "simlive-" + policy
	c := e2e(t, ns)
	// Simulated seconds per real second: backfill and quota decisions hinge
	// on end times, so they run at half the speed (the kubelet's and the
	// watches' delays are then half as long in simulated time).
	scale := 800.0
	switch policy {
	case "easy-backfill":
		scale = 400
	case "kueue":
		scale = 250 // at 400, 8 % JCT error: admission under a 48-GPU quota amplifies the delays
	}
	if v, err := strconv.ParseFloat(os.Getenv("GPUSIM_E2E_SIMLIVE_SCALE"), 64); err == nil && v > 0 {
		scale = v
	}
	n := 200
	if v, err := strconv.Atoi(os.Getenv("GPUSIM_E2E_SIMLIVE_JOBS")); err == nil && v > 0 {
		n = v
	}
	trace := simLiveTrace(n)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kl, err := kubetest.StartFakeKubelet(ctx, c.Client, 1/scale)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Wait()
	defer cancel()
	sched := "gpusim-" + policy
	r := startRun(t, c, Options{SchedulerName: sched, Namespace: ns, PolicyLabel: policy, Config: sim.Config{Policy: mustPolicy(t, policy)}, Scale: scale, Poll: 20 * time.Millisecond})
	t0 := time.Now()
	pods := 0
	for _, j := range trace {
		if d := time.Until(t0.Add(time.Duration(j.submit / scale * float64(time.Second)))); d > 0 {
			time.Sleep(d)
		}
		n, g := 1, int64(j.gpus)
		if j.gpus > e2eGPUs {
			n, g = j.gpus/e2eGPUs, e2eGPUs
			createPodGroup(t, ctx, c, ns, j.id, int64(n))
		}
		for k := 0; k < n; k++ {
			name := j.id
			if n > 1 {
				name = fmt.Sprintf("%s-%d", j.id, k)
			}
			p := e2ePod(ns, name, sched, g, j.dur)
			if n > 1 {
				p.Labels["scheduling.x-k8s.io/pod-group"] = j.id
			}
			if policy == "kueue" {
				p.Labels["kueue.x-k8s.io/queue-name"] = "lq"
			}
			if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			pods++
		}
	}
	waitFor(t, time.Duration(trace[len(trace)-1].submit/scale*float64(time.Second))+2*time.Minute, "every pod to succeed", r.log, func() bool {
		l, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		done := 0
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodSucceeded {
				done++
			}
		}
		return done == pods
	})
	wall := time.Since(t0)
	live := r.stop(t)
	// The simulation: the same trace on the same cluster model.
	nodes, err := c.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	np := make([]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		np[i] = &nodes.Items[i]
	}
	specs, err := ClusterOf(np, DefaultRackLabel, DefaultBlockLabel, DefaultZoneLabel, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The twin: the live run's jobs (submit times as the scheduler observed
	// them, as `gpusim live` simulates them) on the same cluster model; and
	// the trace itself (submit times as written).
	twin := make([]sim.JobSpec, len(live.Jobs))
	for i := range live.Jobs {
		twin[i] = live.Jobs[i].Spec
	}
	jobs := make([]sim.JobSpec, len(trace))
	for i, j := range trace {
		reps, g := int32(1), int32(j.gpus)
		if j.gpus > e2eGPUs {
			reps, g = int32(j.gpus/e2eGPUs), e2eGPUs
		}
		jobs[i] = sim.JobSpec{ID: sim.JobID(ns + "/" + j.id), Submit: sim.Time(sim.Seconds(j.submit)), Replicas: reps, GPUsPerReplica: g,
			GPUMilli: sim.WholeGPU, Duration: sim.Seconds(j.dur), Class: sim.ClassUnknown, Team: ns}
		if policy == "kueue" {
			jobs[i].Queue = ns + "/lq"
		}
	}
	simulate := func(jobs []sim.JobSpec) *sim.Result {
		cl, err := sim.NewCluster(specs)
		if err != nil {
			t.Fatal(err)
		}
		return simtest.RunConfig(t, sim.Config{Cluster: cl, Jobs: jobs, Policy: mustPolicy(t, policy)})
	}
	sres := simulate(twin)
	ft := reports.CompareFidelity(policy, reports.JobRows(simulate(jobs)), reports.JobRows(live))
	t.Logf("against the trace's own submit times: Kendall tau-b %.4f, mean JCT live %.0f s vs sim %.0f s (%+.2f%%)", ft.KendallTau, ft.MeanLiveJCTS, ft.MeanSimJCTS, 100*ft.MeanJCTDiff)
	var over float64 // mean live run time beyond the duration (kubelet and watch delays)
	for i := range live.Jobs {
		j := &live.Jobs[i]
		over += (j.End - j.LastStart).Seconds() - j.Spec.Duration.Seconds()
	}
	over /= float64(max(len(live.Jobs), 1))
	t.Logf("mean live run time beyond the duration: %.1f s simulated (%.0f ms real)", over, over/scale*1000)
	f := reports.CompareFidelity(policy, reports.JobRows(sres), reports.JobRows(live))
	js, _ := json.Marshal(map[string]any{"policy": policy, "jobs": len(trace), "pods": pods, "wall_s": wall.Seconds(), "started": f.Started, "completed": f.Completed,
		"kendall_tau_b": f.KendallTau, "mean_jct_sim_s": f.MeanSimJCTS, "mean_jct_live_s": f.MeanLiveJCTS, "mean_jct_diff": f.MeanJCTDiff,
		"mean_abs_start_err_s": f.MeanAbsStartErrS, "p95_abs_start_err_s": f.P95AbsStartErrS})
	t.Logf("sim vs live: %s", js)
	if f.Completed != len(trace) || f.Started != len(trace) {
		t.Fatalf("%d jobs started and %d completed in both runs, want %d\n%s", f.Started, f.Completed, len(trace), r.log)
	}
	if f.KendallTau < 0.95 {
		t.Errorf("Kendall tau-b of start order %.4f < 0.95", f.KendallTau)
	}
	if math.Abs(f.MeanJCTDiff) > 0.05 {
		t.Errorf("mean JCT live %.0f s vs sim %.0f s: %.2f%% > 5%%", f.MeanLiveJCTS, f.MeanSimJCTS, 100*f.MeanJCTDiff)
	}
}

func readSummary(t *testing.T, dir string) *reports.Summary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s reports.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Mode != reports.ModeLive || s.Live == nil || s.Live.Kube == nil || s.Live.Backend != "kubernetes" {
		t.Fatalf("summary.json: mode %q, live %+v", s.Mode, s.Live)
	}
	return &s
}

// TestE2EHostile: malformed pods and gangs are skipped with an Event each
// while a good pod beside them runs; the scheduler never stops.
func TestE2EHostile(t *testing.T) {
	const ns, sched = "hostile", "gpusim-hostile"
	c := e2e(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kl, err := kubetest.StartFakeKubelet(ctx, c.Client, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Wait()
	defer cancel()
	out := t.TempDir()
	r := startRun(t, c, Options{SchedulerName: sched, Namespace: ns, Scale: 100, GangTimeout: 2 * time.Second, OutDir: out, Poll: 20 * time.Millisecond})
	// The API server itself refuses negative and fractional GPU requests
	// (pkg/apis/core/validation: extended resources must be whole and
	// non-negative); the translation refuses them too (TestTranslateHostile).
	for _, q := range []string{"-1", "500m"} {
		p := e2ePod(ns, "bad-quantity", sched, 1, 10)
		p.Spec.Containers[0].Resources.Limits[ResourceGPU] = resource.MustParse(q)
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err == nil {
			t.Errorf("the API server accepted nvidia.com/gpu %s", q)
		}
	}
	createPodGroup(t, ctx, c, ns, "zero", int64(0))
	createPodGroup(t, ctx, c, ns, "short", int64(3))
	createPodGroup(t, ctx, c, ns, "text", "two")
	mk := func(name string, gpus int64, dur float64, f func(*corev1.Pod)) {
		p := e2ePod(ns, name, sched, gpus, dur)
		if f != nil {
			f(p)
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	group := func(g string) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.Labels["scheduling.x-k8s.io/pod-group"] = g }
	}
	hostile := []string{"huge", "baddur", "orphan", "zero-0", "short-0", "toobig", "text-0"}
	mk("huge", 1, 10, func(p *corev1.Pod) { p.Annotations[AnnotationDuration] = string(bytes.Repeat([]byte("9"), 100_000)) })
	mk("baddur", 1, 10, func(p *corev1.Pod) { p.Annotations[AnnotationDuration] = "soon" })
	mk("orphan", 1, 10, group("nogroup"))
	mk("zero-0", 1, 10, group("zero"))
	mk("short-0", 1, 10, group("short"))
	mk("toobig", 100, 10, nil)
	mk("text-0", 1, 10, group("text"))
	mk("good", 2, 50, nil)
	waitFor(t, time.Minute, "the good pod to succeed and every hostile pod to get an Event", r.log, func() bool {
		if getPod(t, c, ns, "good").Status.Phase != corev1.PodSucceeded {
			return false
		}
		for _, h := range hostile {
			if !hasEvent(podEvents(t, c, ns, h), "GpusimSkipped") {
				return false
			}
		}
		return true
	})
	for _, h := range hostile {
		if p := getPod(t, c, ns, h); p.Spec.NodeName != "" {
			t.Errorf("hostile pod %s was bound to %s", h, p.Spec.NodeName)
		}
	}
	r.stop(t)
	s := readSummary(t, out)
	if s.Live.Kube.Skipped != len(hostile) || s.Live.Kube.Binds != 1 || s.Jobs.Completed != 1 {
		t.Errorf("skipped %d (want %d), binds %d, completed %d\n%s", s.Live.Kube.Skipped, len(hostile), s.Live.Kube.Binds, s.Jobs.Completed, r.log)
	}
}

// TestE2EHalfBoundAtStart: a gang found half-bound at start is completed to
// its recorded placement (or rolled back when its recorded node is gone),
// never left half-bound and never bound twice. Gang gc's bound pod has
// already Succeeded when the scheduler starts (a leader stopped between two
// binds of short pods): its pending pod is still bound to its recorded node.
func TestE2EHalfBoundAtStart(t *testing.T) {
	const ns, sched = "halfbound", "gpusim-hb"
	c := e2e(t, ns)
	ctx := context.Background()
	createPodGroup(t, ctx, c, ns, "ga", int64(2))
	createPodGroup(t, ctx, c, ns, "gb", int64(2))
	createPodGroup(t, ctx, c, ns, "gc", int64(2))
	mk := func(group, name, node, place string) {
		p := e2ePod(ns, name, sched, 4, -1)
		p.Labels["scheduling.x-k8s.io/pod-group"] = group
		p.Annotations[AnnotationPlacement], p.Annotations[AnnotationNode], p.Annotations[AnnotationGPUs] = place, node, "0,1,2,3"
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("ga", "ga-0", "gpu-0", "gpu-0:0,1,2,3;gpu-1:0,1,2,3")
	mk("ga", "ga-1", "gpu-1", "gpu-0:0,1,2,3;gpu-1:0,1,2,3")
	mk("gb", "gb-0", "gpu-2", "gpu-2:0,1,2,3;gone:0,1,2,3")
	mk("gb", "gb-1", "gone", "gpu-2:0,1,2,3;gone:0,1,2,3")
	mk("gc", "gc-0", "gpu-3", "gpu-3:0,1,2,3;gpu-4:0,1,2,3")
	mk("gc", "gc-1", "gpu-4", "gpu-3:0,1,2,3;gpu-4:0,1,2,3")
	// A scheduler that died after binding the first pod of each gang.
	for _, b := range [][2]string{{"ga-0", "gpu-0"}, {"gb-0", "gpu-2"}, {"gc-0", "gpu-3"}} {
		if err := c.Bind(ctx, ns, b[0], b[1]); err != nil {
			t.Fatal(err)
		}
	}
	// gc-0 ran and finished before the next scheduler started.
	gc0 := getPod(t, c, ns, "gc-0")
	gc0.Status.Phase = corev1.PodSucceeded
	if _, err := c.Client.CoreV1().Pods(ns).UpdateStatus(ctx, gc0, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := startRun(t, c, Options{SchedulerName: sched, Namespace: ns, Scale: 100, OutDir: out})
	if p := getPod(t, c, ns, "ga-1"); p.Spec.NodeName != "gpu-1" {
		t.Errorf("ga-1 on %q after the start, want gpu-1 (its recorded node)", p.Spec.NodeName)
	}
	if p := getPod(t, c, ns, "gc-1"); p.Spec.NodeName != "gpu-4" {
		t.Errorf("gc-1 on %q after the start, want gpu-4 (its recorded node; gc-0 had finished)", p.Spec.NodeName)
	}
	if _, err := c.Client.CoreV1().Pods(ns).Get(ctx, "gb-0", metav1.GetOptions{}); err == nil {
		if p := getPod(t, c, ns, "gb-0"); p.DeletionTimestamp == nil {
			t.Errorf("gb-0 still bound: the gang whose recorded node is gone was not rolled back")
		}
	}
	if p := getPod(t, c, ns, "gb-1"); p.Spec.NodeName != "" {
		t.Errorf("gb-1 bound to %q", p.Spec.NodeName)
	}
	// Binding is idempotent: a 409 for the same node is success, another node an error.
	b := &backend{s: &scheduler{opt: Options{Client: c.Client}}, ctx: ctx}
	ga0 := getPod(t, c, ns, "ga-0")
	if err := b.bind(ga0, "gpu-0"); err != nil {
		t.Errorf("re-bind to the same node: %v", err)
	}
	if err := b.bind(ga0, "gpu-3"); err == nil {
		t.Error("re-bind to another node succeeded")
	}
	res := r.stop(t)
	s := readSummary(t, out)
	k := s.Live.Kube
	if k.Completed != 2 || k.RolledBack != 1 || k.Adopted != 2 || k.Binds != 2 || k.Skipped != 0 {
		t.Errorf("kube summary %+v, want 2 completed, 1 rolled back, 2 adopted, 2 binds, none skipped\n%s", k, r.log)
	}
	if len(res.Jobs) != 2 || res.Jobs[0].Spec.ID != "halfbound/ga" || res.Jobs[0].State != sim.StateRunning ||
		res.Jobs[1].Spec.ID != "halfbound/gc" || res.Jobs[1].State != sim.StateRunning || res.Jobs[1].Spec.Replicas != 2 {
		t.Errorf("jobs %+v", res.Jobs)
	}
}

// TestE2EDryRun: a dry run decides (Events say so, outputs record the
// starts) and binds nothing.
func TestE2EDryRun(t *testing.T) {
	const ns, sched = "dryrun", "gpusim-dry"
	c := e2e(t, ns)
	ctx := context.Background()
	out := t.TempDir()
	r := startRun(t, c, Options{SchedulerName: sched, Namespace: ns, Scale: 100, DryRun: true, OutDir: out, Poll: 20 * time.Millisecond})
	for i := 0; i < 3; i++ {
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, e2ePod(ns, fmt.Sprintf("d%d", i), sched, 8, 100), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, time.Minute, "dry-run Events on every pod", r.log, func() bool {
		for i := 0; i < 3; i++ {
			if !hasEvent(podEvents(t, c, ns, fmt.Sprintf("d%d", i)), "GpusimDryRun") {
				return false
			}
		}
		return true
	})
	time.Sleep(500 * time.Millisecond)
	for i := 0; i < 3; i++ {
		if p := getPod(t, c, ns, fmt.Sprintf("d%d", i)); p.Spec.NodeName != "" || p.Annotations[AnnotationPlacement] != "" {
			t.Errorf("dry run touched pod %s: node %q, placement %q", p.Name, p.Spec.NodeName, p.Annotations[AnnotationPlacement])
		}
	}
	res := r.stop(t)
	started := 0
	for i := range res.Jobs {
		if res.Jobs[i].FirstStart != sim.Never {
			started++
		}
	}
	s := readSummary(t, out)
	if started != 3 || !s.Live.Kube.DryRun || s.Live.Kube.Binds != 0 {
		t.Errorf("dry run: %d started, summary %+v", started, s.Live.Kube)
	}
}

// TestE2EShadow: shadow mode watches pods of another scheduler (bound here by
// the test), records what gpusim would have done and never acts.
func TestE2EShadow(t *testing.T) {
	const ns = "shadow"
	c := e2e(t, ns)
	ctx := context.Background()
	out := t.TempDir()
	r := startRun(t, c, Options{SchedulerName: "ignored", Namespace: ns, Scale: 100, Shadow: true, OutDir: out, Poll: 20 * time.Millisecond})
	for _, n := range []string{"s0", "s1"} {
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, e2ePod(ns, n, "other-scheduler", 2, 1000), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Bind(ctx, ns, "s0", "gpu-5"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "shadow decisions for both pods", r.log, func() bool {
		s := r.log.String()
		return bytes.Count([]byte(s), []byte("shadow: would start")) >= 2 && bytes.Contains([]byte(s), []byte("shadow: bound by its scheduler to gpu-5"))
	})
	r.stop(t)
	if p := getPod(t, c, ns, "s1"); p.Spec.NodeName != "" {
		t.Errorf("shadow mode bound s1 to %s", p.Spec.NodeName)
	}
	if evs := podEvents(t, c, ns, "s1"); len(evs) > 0 {
		t.Errorf("shadow mode wrote events: %v", evs[0].Reason)
	}
	b, err := os.ReadFile(filepath.Join(out, "shadow.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || rows[1][0] != "shadow/s0" || rows[1][5] != "gpu-5" || rows[1][4] == "" || rows[2][4] != "" {
		t.Fatalf("shadow.csv:\n%s", b)
	}
	for _, row := range rows[1:] {
		if row[2] == "" || row[3] == "" {
			t.Errorf("row without a gpusim decision: %v", row)
		}
	}
	if s := readSummary(t, out); !s.Live.Kube.Shadow {
		t.Error("summary: shadow false")
	}
}

// TestE2EPreemption: kueue preempts a low-priority workload for a
// high-priority one (priority from a PriorityClass through the API server's
// Priority admission); the victim's pod goes through the Eviction API and the
// high-priority pod is bound.
func TestE2EPreemption(t *testing.T) {
	const ns, sched = "preempt", "gpusim-preempt"
	c := e2e(t, ns)
	ctx := context.Background()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "gpusim-e2e-high"}, Value: 1000}
	if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var params yaml.Node
	if err := yaml.Unmarshal([]byte(kueueParams(64, "{withinClusterQueue: LowerPriority}", "preempt")), &params); err != nil {
		t.Fatal(err)
	}
	pol, err := policies.New("kueue", params.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	r := startRun(t, c, Options{SchedulerName: sched, Namespace: ns, PolicyLabel: "kueue", Config: sim.Config{Policy: pol}, Scale: 100, OutDir: out, Poll: 20 * time.Millisecond})
	for i := 0; i < e2eNodes; i++ {
		p := e2ePod(ns, fmt.Sprintf("low-%d", i), sched, e2eGPUs, -1) // runs until deleted
		p.Labels["kueue.x-k8s.io/queue-name"] = "lq"
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, time.Minute, "the low-priority pods to be bound", r.log, func() bool {
		for i := 0; i < e2eNodes; i++ {
			if getPod(t, c, ns, fmt.Sprintf("low-%d", i)).Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
	high := e2ePod(ns, "high", sched, e2eGPUs, -1)
	high.Labels["kueue.x-k8s.io/queue-name"] = "lq"
	high.Spec.PriorityClassName = "gpusim-e2e-high"
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, high, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, time.Minute, "the high-priority pod to be bound", r.log, func() bool {
		return getPod(t, c, ns, "high").Spec.NodeName != ""
	})
	gone := 0
	for i := 0; i < e2eNodes; i++ {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("low-%d", i), metav1.GetOptions{})
		if err != nil || p.DeletionTimestamp != nil {
			gone++
		}
	}
	r.stop(t)
	s := readSummary(t, out)
	if gone != 1 || s.Live.Kube.Evictions != 1 || s.Jobs.Preemptions < 1 {
		t.Errorf("%d low-priority pods evicted, summary evictions %d, preemptions %d, want 1\n%s", gone, s.Live.Kube.Evictions, s.Jobs.Preemptions, r.log)
	}
}

// TestE2EBindRollback: a bind fails in the middle of a gang during a normal
// run. Pod gr-2 of a 3-pod PodGroup is terminating (deleted, held by a
// finalizer) when the gang is placed, so the API server refuses its binding
// ("being deleted") while gr-0 and gr-1 bind (the three binds are in flight
// together). The scheduler must delete the two bound pods (a bound pod
// cannot be unbound), leave no pod bound from the half gang, end the job
// (its pods are gone) and, once a controller recreates the pods, schedule
// them as a new job (gr~1) whose three pods all bind.
func TestE2EBindRollback(t *testing.T) {
	const ns, sched = "rollback", "gpusim-rb"
	c := e2e(t, ns)
	ctx := context.Background()
	createPodGroup(t, ctx, c, ns, "gr", int64(3))
	const hold = "gpusim.io/e2e-hold"
	mk := func(name string, finalizer bool) {
		t.Helper()
		p := e2ePod(ns, name, sched, e2eGPUs, -1)
		p.Labels["scheduling.x-k8s.io/pod-group"] = "gr"
		if finalizer {
			p.Finalizers = []string{hold}
		}
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("gr-2", true)
	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "gr-2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if p := getPod(t, c, ns, "gr-2"); p.DeletionTimestamp == nil {
		t.Fatal("gr-2 is not terminating")
	}
	mk("gr-0", false)
	mk("gr-1", false)
	out := t.TempDir()
	r := startRun(t, c, Options{SchedulerName: sched, Namespace: ns, Scale: 100, OutDir: out, Poll: 20 * time.Millisecond})
	waitFor(t, 30*time.Second, "the rollback", r.log, func() bool {
		return strings.Contains(r.log.String(), "rollback/gr    bind failed, rolling back")
	})
	// What the rollback left: no pod of gr bound (gr-0 and gr-1 deleted).
	waitFor(t, 10*time.Second, "gr-0 and gr-1 to be deleted", r.log, func() bool {
		l, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				return false
			}
		}
		return len(l.Items) == 1 && l.Items[0].Name == "gr-2"
	})
	if !strings.Contains(r.log.String(), "rolling back 2 bound pod(s)") {
		t.Errorf("the scheduler did not roll back exactly the two bound pods:\n%s", r.log)
	}
	if !hasEvent(podEvents(t, c, ns, "gr-2"), "GpusimRollback") {
		t.Error("no GpusimRollback Event on gr-2")
	}
	// A controller recreates the gang: gr-2 goes (finalizer lifted), all three come back.
	p := getPod(t, c, ns, "gr-2")
	p.Finalizers = nil
	if _, err := c.Client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "gr-2 to go", r.log, func() bool {
		_, err := c.Client.CoreV1().Pods(ns).Get(ctx, "gr-2", metav1.GetOptions{})
		return err != nil
	})
	for _, n := range []string{"gr-0", "gr-1", "gr-2"} {
		mk(n, false)
	}
	waitFor(t, 30*time.Second, "the recreated gang to be bound", r.log, func() bool {
		for _, n := range []string{"gr-0", "gr-1", "gr-2"} {
			if getPod(t, c, ns, n).Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
	res := r.stop(t)
	s := readSummary(t, out)
	if s.Live.Kube.Rollbacks != 1 || s.Live.Kube.Binds != 3 {
		t.Errorf("summary rollbacks %d, binds %d; want 1 rollback and 3 binds (the recreated gang)\n%s", s.Live.Kube.Rollbacks, s.Live.Kube.Binds, r.log)
	}
	states := map[sim.JobID]sim.JobState{}
	for _, j := range res.Jobs {
		states[j.Spec.ID] = j.State
	}
	if len(states) != 2 || states["rollback/gr"] != sim.StateKilled || states["rollback/gr~1"] != sim.StateRunning {
		t.Errorf("jobs %v, want rollback/gr killed (failed after the rollback) and rollback/gr~1 running\n%s", states, r.log)
	}
}

// TestE2EWorkloadGangs: gangs from workload controllers' labels rather than
// a PodGroup, as the controllers would create them on a real server: an
// indexed batch/v1 Job (parallelism 2; pods labelled job-name and
// job-completion-index, owned by the Job) and a JobSet (one replicated Job
// of 2 replicas x parallelism 1; pods labelled jobset-name and the Job
// labels). Neither gang starts before its last pod exists.
func TestE2EWorkloadGangs(t *testing.T) {
	const ns, sched = "workloads", "gpusim-wl"
	c := e2e(t, ns)
	ctx := context.Background()
	two := int32(2)
	mode := batchv1.IndexedCompletion
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "ij", Namespace: ns}, Spec: batchv1.JobSpec{
		Parallelism: &two, Completions: &two, CompletionMode: &mode,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, SchedulerName: sched,
			Containers: []corev1.Container{{Name: "train", Image: "registry.invalid/train:1"}}}},
	}}
	job, err := c.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	js := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
		"metadata": map[string]any{"name": "js", "namespace": ns},
		"spec": map[string]any{"replicatedJobs": []any{map[string]any{
			"name": "workers", "replicas": int64(2),
			"template": map[string]any{"spec": map[string]any{"parallelism": int64(1), "completions": int64(1)}},
		}}},
	}}
	if _, err := c.Dynamic.Resource(ownerGVRs["JobSet"]).Namespace(ns).Create(ctx, js, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jobPod := func(i int) *corev1.Pod {
		// As the Job controller names and labels an indexed Job's pods
		// (pkg/controller/job: podGenerateNameWithIndex, addCompletionIndexLabel).
		p := e2ePod(ns, fmt.Sprintf("ij-%d-x%d", i, i), sched, 4, 600)
		idx := strconv.Itoa(i)
		p.Labels = map[string]string{LabelJobName: "ij", LabelJobNameOld: "ij", LabelJobIndex: idx,
			"batch.kubernetes.io/controller-uid": string(job.UID), "controller-uid": string(job.UID)}
		p.Annotations["batch.kubernetes.io/job-completion-index"] = idx
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "ij", UID: job.UID, Controller: ptrTo(true)}}
		return p
	}
	setPod := func(i int) *corev1.Pod {
		// As JobSet's Jobs label their pods (jobset-name, replicatedjob-name,
		// job-index, plus the Job controller's labels).
		jn := fmt.Sprintf("js-workers-%d", i)
		p := e2ePod(ns, jn+"-0-x", sched, 4, 600)
		p.Labels = map[string]string{LabelJobSet: "js", "jobset.sigs.k8s.io/replicatedjob-name": "workers",
			"jobset.sigs.k8s.io/job-index": strconv.Itoa(i), LabelJobName: jn, LabelJobIndex: "0"}
		return p
	}
	create := func(p *corev1.Pod) {
		t.Helper()
		if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	r := startRun(t, c, Options{SchedulerName: sched, Namespace: ns, Scale: 100, OutDir: out, Poll: 20 * time.Millisecond})
	create(jobPod(0))
	create(setPod(0))
	time.Sleep(time.Second) // several cycles: neither gang is complete
	for _, n := range []string{"ij-0-x0", "js-workers-0-0-x"} {
		if p := getPod(t, c, ns, n); p.Spec.NodeName != "" {
			t.Fatalf("%s bound to %s before its gang was complete\n%s", n, p.Spec.NodeName, r.log)
		}
	}
	create(jobPod(1))
	create(setPod(1))
	names := []string{"ij-0-x0", "ij-1-x1", "js-workers-0-0-x", "js-workers-1-0-x"}
	waitFor(t, 30*time.Second, "both gangs to be bound", r.log, func() bool {
		for _, n := range names {
			if getPod(t, c, ns, n).Spec.NodeName == "" {
				return false
			}
		}
		return true
	})
	res := r.stop(t)
	log := r.log.String()
	for _, want := range []string{"workloads/ij   submitted: 2 x 4 GPU (indexed-job, 2 pods)", "workloads/js   submitted: 2 x 4 GPU (jobset, 2 pods)"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	ids := map[sim.JobID]int32{}
	for _, j := range res.Jobs {
		ids[j.Spec.ID] = j.Spec.Replicas
	}
	if len(ids) != 2 || ids["workloads/ij"] != 2 || ids["workloads/js"] != 2 {
		t.Errorf("jobs %v, want workloads/ij and workloads/js with 2 replicas each", ids)
	}
	// Each gang under one placement, every pod on the node it records.
	for _, n := range names {
		p := getPod(t, c, ns, n)
		if p.Annotations[AnnotationNode] != p.Spec.NodeName || p.Annotations[AnnotationPlacement] == "" {
			t.Errorf("%s: bound to %s, annotations %v", n, p.Spec.NodeName, p.Annotations)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
