package kubetest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// One control plane serves all end-to-end tests of the package; each test
// works in its own namespace.
var shared = &Shared{Prefix: "gpusim-kubetest-"}

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// cluster returns the shared control plane, skipping (or failing, with
// GPUSIM_E2E_REQUIRE=1) when the binaries are not built.
func cluster(t *testing.T, ns string) *Cluster {
	t.Helper()
	c := shared.Get(t)
	if err := c.CreateNamespace(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// gpuPod asks for gpus nvidia.com/gpu and runs for duration (annotation).
func gpuPod(name, duration string, gpus int64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "train", Image: "registry.invalid/train:1",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{GPUResource: *resource.NewQuantity(gpus, resource.DecimalSI)}},
		}}},
	}
	if duration != "" {
		p.Annotations = map[string]string{DurationAnnotation: duration}
	}
	return p
}

// waitPhase polls pod ns/name until it reaches phase.
func waitPhase(t *testing.T, ctx context.Context, c *Cluster, ns, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	for {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == phase {
			return p
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s/%s never %s (last: %v, err %v)", ns, name, phase, p.Status.Phase, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// A GPU node, a pod bound through pods/binding, the stand-in kubelet runs it
// for its annotated duration × scale.
func TestE2EPodLifecycle(t *testing.T) {
	const ns = "lifecycle"
	c := cluster(t, ns)
	ctx := testCtx(t)
	n, err := c.CreateGPUNode(ctx, "gpu-a", 8, map[string]string{"gpusim.io/gpu-model": "A100"})
	if err != nil {
		t.Fatal(err)
	}
	if q := n.Status.Allocatable[GPUResource]; q.Value() != 8 {
		t.Fatalf("allocatable nvidia.com/gpu = %v, want 8", q.String())
	}
	kctx, stop := context.WithCancel(ctx)
	kl, err := StartFakeKubelet(kctx, c.Client, 0.01) // 100 s of pod time = 1 s
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); kl.Wait() }()

	pods := c.Client.CoreV1().Pods(ns)
	for _, p := range []*corev1.Pod{gpuPod("train", "100", 2), gpuPod("bad", "soon", 1), gpuPod("serve", "", 1), gpuPod("unbound", "1", 1)} {
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Not bound: the kubelet leaves it alone.
	time.Sleep(200 * time.Millisecond)
	if p, _ := pods.Get(ctx, "unbound", metav1.GetOptions{}); p.Status.Phase != corev1.PodPending {
		t.Errorf("unbound pod phase %q, want Pending", p.Status.Phase)
	}
	bound := time.Now() // the kubelet's start time is after this
	for _, name := range []string{"train", "bad", "serve"} {
		if err := c.Bind(ctx, ns, name, "gpu-a"); err != nil {
			t.Fatal(err)
		}
	}
	// The real API server refuses a second binding.
	if err := c.Bind(ctx, ns, "train", "gpu-a"); err == nil || !apierrors.IsConflict(errorsCause(err)) {
		t.Errorf("second binding: %v, want Conflict", err)
	}
	run := waitPhase(t, ctx, c, ns, "train", corev1.PodRunning)
	if run.Spec.NodeName != "gpu-a" || run.Status.StartTime == nil {
		t.Fatalf("running pod: node %q start %v", run.Spec.NodeName, run.Status.StartTime)
	}
	done := waitPhase(t, ctx, c, ns, "train", corev1.PodSucceeded)
	term := done.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 0 {
		t.Fatalf("succeeded pod container state %+v", done.Status.ContainerStatuses)
	}
	// 100 s × 0.01 = 1 s after the kubelet's start (which follows bound); the
	// API keeps whole seconds, so the recorded times differ by 0..2 s.
	if el := time.Since(bound); el < time.Second || el > 10*time.Second {
		t.Errorf("Succeeded %v after binding, want 1s..10s", el)
	}
	if el := term.FinishedAt.Sub(done.Status.StartTime.Time); el < 0 || el > 2*time.Second {
		t.Errorf("recorded run time %v, want 0..2s", el)
	}
	bad := waitPhase(t, ctx, c, ns, "bad", corev1.PodFailed)
	if bad.Status.Reason != "InvalidDuration" || !strings.Contains(bad.Status.Message, `gpusim.io/duration "soon"`) {
		t.Errorf("bad pod status %q %q", bad.Status.Reason, bad.Status.Message)
	}
	waitPhase(t, ctx, c, ns, "serve", corev1.PodRunning)
	time.Sleep(300 * time.Millisecond)
	if p, _ := pods.Get(ctx, "serve", metav1.GetOptions{}); p.Status.Phase != corev1.PodRunning {
		t.Errorf("pod without duration phase %q, want Running", p.Status.Phase)
	}
}

// errorsCause unwraps to the API status error.
func errorsCause(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// The workload CRDs round-trip their objects, including the status
// subresource; Kueue's real CRDs validate their objects.
func TestE2ECRDRoundTrip(t *testing.T) {
	const ns = "crds"
	c := cluster(t, ns)
	ctx := testCtx(t)
	if err := c.InstallWorkloadCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		kind string
		spec map[string]any
	}{
		{PodGroupGVR, "PodGroup", map[string]any{"minMember": int64(4), "scheduleTimeoutSeconds": int64(60)}},
		{PyTorchJobGVR, "PyTorchJob", map[string]any{"pytorchReplicaSpecs": map[string]any{"Worker": map[string]any{"replicas": int64(2)}}}},
		{TFJobGVR, "TFJob", map[string]any{"tfReplicaSpecs": map[string]any{"PS": map[string]any{"replicas": int64(1)}}}},
		{MPIJobGVR, "MPIJob", map[string]any{"slotsPerWorker": int64(8)}},
		{JobSetGVR, "JobSet", map[string]any{"replicatedJobs": []any{map[string]any{"name": "w", "replicas": int64(3)}}}},
	} {
		api := c.Dynamic.Resource(tc.gvr).Namespace(ns)
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": tc.gvr.GroupVersion().String(), "kind": tc.kind,
			"metadata": map[string]any{"name": "x"}, "spec": tc.spec,
		}}
		if _, err := api.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		got, err := api.Get(ctx, "x", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.kind, err)
		}
		if fmt.Sprint(got.Object["spec"]) != fmt.Sprint(tc.spec) {
			t.Errorf("%s spec %v, want %v", tc.kind, got.Object["spec"], tc.spec)
		}
		// Status goes through the status subresource only.
		_ = unstructured.SetNestedField(got.Object, "Running", "status", "phase")
		if _, err := api.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("%s status: %v", tc.kind, err)
		}
		got, _ = api.Get(ctx, "x", metav1.GetOptions{})
		if ph, _, _ := unstructured.NestedString(got.Object, "status", "phase"); ph != "Running" {
			t.Errorf("%s status.phase %q after UpdateStatus", tc.kind, ph)
		}
	}

	if err := c.InstallKueueCRDs(ctx); err != nil {
		t.Fatal(err)
	}
	kueue := func(res string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: res}
	}
	mk := func(kind, name string, spec map[string]any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": kind,
			"metadata": map[string]any{"name": name}, "spec": spec,
		}}
	}
	if _, err := c.Dynamic.Resource(kueue("resourceflavors")).Create(ctx, mk("ResourceFlavor", "a100", map[string]any{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	quota := func(q map[string]any) map[string]any {
		return map[string]any{
			"namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{
				"coveredResources": []any{"nvidia.com/gpu"},
				"flavors":          []any{map[string]any{"name": "a100", "resources": []any{q}}},
			}},
		}
	}
	cqs := c.Dynamic.Resource(kueue("clusterqueues"))
	if _, err := cqs.Create(ctx, mk("ClusterQueue", "team", quota(map[string]any{"name": "nvidia.com/gpu", "nominalQuota": int64(16)})), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cqs.Get(ctx, "team", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The real schema defaults fields a hand-written CRD would not.
	if qs, _, _ := unstructured.NestedString(got.Object, "spec", "queueingStrategy"); qs != "BestEffortFIFO" {
		t.Errorf("ClusterQueue spec.queueingStrategy defaulted to %q, want BestEffortFIFO", qs)
	}
	_, err = cqs.Create(ctx, mk("ClusterQueue", "noquota", quota(map[string]any{"name": "nvidia.com/gpu"})), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "nominalQuota") {
		t.Errorf("ClusterQueue without nominalQuota: %v, want Invalid naming nominalQuota", err)
	}
	lq := mk("LocalQueue", "team", map[string]any{"clusterQueue": "team"})
	if _, err := c.Dynamic.Resource(kueue("localqueues")).Namespace(ns).Create(ctx, lq, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// After an API server restart the stored objects are there, the same client
// works again, and the FakeKubelet's informer re-watches by itself.
func TestE2ERestartAPIServer(t *testing.T) {
	const ns = "restart"
	c := cluster(t, ns)
	ctx := testCtx(t)
	if _, err := c.CreateGPUNode(ctx, "gpu-r", 4, nil); err != nil {
		t.Fatal(err)
	}
	kctx, stop := context.WithCancel(ctx)
	kl, err := StartFakeKubelet(kctx, c.Client, 0.01)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { stop(); kl.Wait() }()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"}, Data: map[string]string{"k": "v"}}
	if _, err := c.Client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := c.RestartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-apiserver restarted in %v", time.Since(start).Round(time.Millisecond))
	got, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, "keep", metav1.GetOptions{})
	if err != nil || got.Data["k"] != "v" {
		t.Fatalf("configmap after restart: %v %v", got, err)
	}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, gpuPod("after", "50", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Bind(ctx, ns, "after", "gpu-r"); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, ctx, c, ns, "after", corev1.PodSucceeded)
}
