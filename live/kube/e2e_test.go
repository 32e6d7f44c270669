package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/gpusim/gpusim/internal/kubetest"
	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

// One control plane (and its 8 GPU nodes) serves every end-to-end test of
// the package; each test works in its own namespace and runs its own
// scheduler and FakeKubelet, one test at a time.
var (
	e2eCluster *kubetest.Cluster
	e2eErr     error
	e2eOnce    sync.Once
	e2eDir     string
)

const e2eNodes, e2eGPUs = 8, 8

func TestMain(m *testing.M) {
	code := m.Run()
	if e2eCluster != nil {
		e2eCluster.Stop()
	}
	if e2eDir != "" {
		os.RemoveAll(e2eDir)
	}
	os.Exit(code)
}

// e2e returns the shared control plane with its nodes and creates namespace
// ns; it skips (or fails with GPUSIM_E2E_REQUIRE=1) without the binaries.
func e2e(t *testing.T, ns string) *kubetest.Cluster {
	t.Helper()
	bin := kubetest.BinDirOrSkip(t)
	e2eOnce.Do(func() {
		e2eDir, e2eErr = os.MkdirTemp("", "gpusim-kube-e2e-")
		if e2eErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for try := 0; try < 2; try++ {
			dir := filepath.Join(e2eDir, strconv.Itoa(try))
			if e2eErr = os.Mkdir(dir, 0o755); e2eErr != nil {
				return
			}
			if e2eCluster, e2eErr = kubetest.Start(ctx, kubetest.Options{BinDir: bin, Dir: dir}); e2eErr == nil {
				break
			}
		}
		if e2eErr != nil {
			return
		}
		if e2eErr = e2eCluster.InstallWorkloadCRDs(ctx); e2eErr != nil {
			return
		}
		for i := 0; i < e2eNodes; i++ {
			labels := map[string]string{LabelGPUProduct: "H100", DefaultRackLabel: fmt.Sprintf("r%d", i/4)}
			var n *corev1.Node
			if n, e2eErr = e2eCluster.CreateGPUNode(ctx, fmt.Sprintf("gpu-%d", i), e2eGPUs, labels); e2eErr != nil {
				return
			}
			// The TaintNodesByCondition admission plugin taints a new node
			// not-ready; the node lifecycle controller (absent here) lifts
			// it once the node is Ready.
			n.Spec.Taints = nil
			if _, e2eErr = e2eCluster.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); e2eErr != nil {
				return
			}
		}
	})
	if e2eErr != nil {
		t.Fatal(e2eErr)
	}
	if err := e2eCluster.CreateNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return e2eCluster
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
	log    *syncBuffer
	ready  chan struct{}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startRun(t *testing.T, c *kubetest.Cluster, opt Options) *runner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{cancel: cancel, done: make(chan error, 1), log: &syncBuffer{}, ready: make(chan struct{})}
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

func mustPolicy(t *testing.T, name string) sim.Policy {
	t.Helper()
	p, err := policies.New(name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor polls cond every 100 ms until it holds or d passes (then it
// fails with the tail of log).
func waitFor(t *testing.T, d time.Duration, what string, log *syncBuffer, cond func() bool) {
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
		names = append(names, "easy-backfill")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) { simVsLive(t, name) })
	}
}

func simVsLive(t *testing.T, policy string) {
	ns := "simlive-" + policy
	c := e2e(t, ns)
	const scale = 800.0 // simulated seconds per real second
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
	cl, err := sim.NewCluster(specs)
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]sim.JobSpec, len(trace))
	for i, j := range trace {
		reps, g := int32(1), int32(j.gpus)
		if j.gpus > e2eGPUs {
			reps, g = int32(j.gpus/e2eGPUs), e2eGPUs
		}
		jobs[i] = sim.JobSpec{ID: sim.JobID(ns + "/" + j.id), Submit: sim.Time(sim.Seconds(j.submit)), Replicas: reps, GPUsPerReplica: g,
			GPUMilli: sim.WholeGPU, Duration: sim.Seconds(j.dur), Class: sim.ClassUnknown, Team: ns}
	}
	e, err := sim.NewEngine(sim.Config{Cluster: cl, Jobs: jobs, Policy: mustPolicy(t, policy)})
	if err != nil {
		t.Fatal(err)
	}
	sres, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
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
