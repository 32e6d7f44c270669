package kubetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// DurationAnnotation holds a pod's run time, as in gpusim's Kubernetes
// manifests (docs/k8s-manifests.md): seconds ("3600", "1.5") or a Go duration
// ("10m").
const DurationAnnotation = "gpusim.io/duration"

// FakeKubelet stands in for the kubelets of every node. It watches pods
// bound to a node (spec.nodeName set) through an informer, so it survives API
// server restarts, and drives their status as a kubelet would report it:
//
//   - a Pending pod becomes Running (startTime now, Ready),
//   - a Running pod becomes Succeeded (exit code 0) Scale × its
//     gpusim.io/duration after its startTime,
//   - a pod whose annotation does not parse becomes Failed (reason
//     InvalidDuration); one without the annotation runs until deleted.
//
// It runs no containers and checks no capacity: binding is the scheduler's
// (the test's) business.
type FakeKubelet struct {
	client kubernetes.Interface
	scale  float64

	mu      sync.Mutex
	pending map[types.UID]bool // pods with a completion timer or status write in flight
	wg      sync.WaitGroup
}

// StartFakeKubelet starts a FakeKubelet until ctx ends. scale is the real
// time per annotated second (0.01 runs a 100 s pod for 1 s); it must be > 0.
// It returns once the informer has synced.
func StartFakeKubelet(ctx context.Context, client kubernetes.Interface, scale float64) (*FakeKubelet, error) {
	if !(scale > 0) {
		return nil, fmt.Errorf("kubetest: FakeKubelet scale must be > 0, got %v", scale)
	}
	k := &FakeKubelet{client: client, scale: scale, pending: map[types.UID]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName!="
	}))
	inf := f.Core().V1().Pods().Informer()
	handle := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			k.observe(ctx, p)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	}); err != nil {
		return nil, fmt.Errorf("kubetest: FakeKubelet: %w", err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, errors.New("kubetest: FakeKubelet: pod informer did not sync")
	}
	return k, nil
}

// Wait waits for the status writes in flight to end (after ctx is done).
func (k *FakeKubelet) Wait() { k.wg.Wait() }

// ParseDuration reads a gpusim.io/duration value: seconds (a non-negative
// number) or a Go duration.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 || f > 1e9 {
			return 0, fmt.Errorf("%s %q: want 0..1e9 seconds", DurationAnnotation, s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q: want seconds or a non-negative duration", DurationAnnotation, s)
	}
	return d, nil
}

// observe acts on one bound pod; it is idempotent per pod UID.
func (k *FakeKubelet) observe(ctx context.Context, p *corev1.Pod) {
	if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
		return
	}
	switch p.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return
	}
	k.mu.Lock()
	if k.pending[p.UID] {
		k.mu.Unlock()
		return
	}
	k.pending[p.UID] = true
	k.mu.Unlock()
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		k.run(ctx, p.DeepCopy())
	}()
}

// run drives one pod to Running, then to its end.
func (k *FakeKubelet) run(ctx context.Context, p *corev1.Pod) {
	raw, has := p.Annotations[DurationAnnotation]
	d, derr := ParseDuration(raw)
	if has && derr != nil {
		k.setStatus(ctx, p, func(s *corev1.PodStatus) {
			s.Phase, s.Reason, s.Message = corev1.PodFailed, "InvalidDuration", derr.Error()
		})
		return
	}
	start := time.Now()
	if p.Status.Phase == corev1.PodRunning && p.Status.StartTime != nil {
		start = p.Status.StartTime.Time
	} else {
		now := metav1.NewTime(start)
		if !k.setStatus(ctx, p, func(s *corev1.PodStatus) { runningStatus(s, p, now) }) {
			return
		}
	}
	if !has {
		return
	}
	wait := time.Duration(float64(d)*k.scale) - time.Since(start)
	select {
	case <-ctx.Done():
		return
	case <-time.After(wait):
	}
	k.setStatus(ctx, p, func(s *corev1.PodStatus) { succeededStatus(s, p) })
}

// setStatus applies mutate to the latest pod status and writes it, retrying
// conflicts and unavailable API servers until ctx ends. It reports whether
// the write happened (false if the pod is gone).
func (k *FakeKubelet) setStatus(ctx context.Context, p *corev1.Pod, mutate func(*corev1.PodStatus)) bool {
	pods := k.client.CoreV1().Pods(p.Namespace)
	backoff := 50 * time.Millisecond
	for {
		cur, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
		if err == nil {
			if cur.UID != p.UID {
				return false
			}
			mutate(&cur.Status)
			_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			if err == nil {
				return true
			}
		}
		if apierrors.IsNotFound(err) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// runningStatus is the status a kubelet reports once all containers started.
func runningStatus(s *corev1.PodStatus, p *corev1.Pod, now metav1.Time) {
	s.Phase = corev1.PodRunning
	s.StartTime = &now
	s.HostIP, s.PodIP = "127.0.0.1", "127.0.0.1"
	s.Conditions = conditions(now, corev1.ConditionTrue, "")
	s.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Ready: true, Started: ptr(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		})
	}
}

// succeededStatus is the status a kubelet reports once all containers
// exited with code 0.
func succeededStatus(s *corev1.PodStatus, p *corev1.Pod) {
	now := metav1.Now()
	started := now
	if s.StartTime != nil {
		started = *s.StartTime
	}
	s.Phase = corev1.PodSucceeded
	s.Conditions = conditions(now, corev1.ConditionFalse, "PodCompleted")
	s.ContainerStatuses = nil
	for _, c := range p.Spec.Containers {
		s.ContainerStatuses = append(s.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Started: ptr(false),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: 0, Reason: "Completed", StartedAt: started, FinishedAt: now,
			}},
		})
	}
}

// conditions are the four pod conditions a kubelet maintains; ready applies
// to Ready and ContainersReady.
func conditions(now metav1.Time, ready corev1.ConditionStatus, reason string) []corev1.PodCondition {
	return []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: corev1.ContainersReady, Status: ready, Reason: reason, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: ready, Reason: reason, LastTransitionTime: now},
	}
}

func ptr[T any](v T) *T { return &v }
