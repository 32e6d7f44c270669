package kube

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

// AnnotationNode is the node a pod of a gang is about to be bound to
// (written with the placement before any bind; read back at a restart to
// complete a half-bound gang).
const AnnotationNode = "gpusim.io/node"

// backend is the sim.Backend of a Kubernetes run: starts become patches and
// bindings, preemptions Evictions. In dry-run and shadow mode it binds
// nothing and ends each started job its gpusim.io/duration later.
type backend struct {
	s         *scheduler
	ctx       context.Context
	predicted []predictedEnd
	rollback  []sim.JobRef // gangs whose bind failed in the last Schedule
	shadow    map[sim.JobID]*shadowRec
	events    chan *corev1.Event // to eventLoop (nil: written inline)
	eventErrs atomic.Int64       // Events that could not be written or were dropped
}

type predictedEnd struct {
	at  sim.Time
	job sim.JobRef
}

// shadowRec is one job of a shadow run: what gpusim decided and what the
// real scheduler did.
type shadowRec struct {
	id          sim.JobID
	submit      sim.Time
	simStart    sim.Time
	simPlace    string
	realBind    sim.Time
	realNodes   []string
	simStarted  bool
	realStarted bool
}

// placement returns, per replica, the node name and the GPU indexes on it.
func (b *backend) placement(j *sim.Job) (nodes []string, gpus []string) {
	c := b.s.live.View().Cluster()
	g := int(j.Spec.GPUsPerReplica)
	for r, n := range j.Nodes {
		first, _ := c.NodeGPUs(n)
		var ix []string
		for _, gpu := range sim.ReplicaSlice(j.GPUs, r, g) {
			ix = append(ix, strconv.Itoa(int(gpu-first)))
		}
		nodes = append(nodes, c.Node(n).Name)
		gpus = append(gpus, strings.Join(ix, ","))
	}
	return nodes, gpus
}

// Start implements sim.Backend: write the placement to every pod of the
// gang, then bind them all (each step with up to maxParallelBinds requests
// in flight); if any bind fails, wait for the binds in flight, delete the
// pods bound and queue the job for requeueing (afterSchedule). A gang is
// never left half-bound by a running scheduler.
func (b *backend) Start(j *sim.Job) error {
	s := b.s
	g := s.byRef[j.Ref]
	if g == nil {
		return fmt.Errorf("kube: job %s has no pods", j.Spec.ID)
	}
	if g.broken {
		return fmt.Errorf("kube: job %s was bound outside gpusim's model at start", j.Spec.ID)
	}
	nodes, gpus := b.placement(j)
	place := sim.PlacementString(s.live.View().Cluster(), j)
	if s.opt.DryRun || s.opt.Shadow {
		b.predicted = append(b.predicted, predictedEnd{at: s.live.Now().Add(max(j.Spec.Duration, 1)), job: j.Ref})
		kind := "dry-run"
		if s.opt.Shadow {
			kind = "shadow"
			r := b.shadowOf(g)
			r.simStart, r.simPlace, r.simStarted = s.live.Now(), place, true
		} else {
			for _, p := range g.sortedPods() {
				b.event(b.ctx, p, corev1.EventTypeNormal, "GpusimDryRun", "dry run: gpusim would bind the gang to "+place)
			}
		}
		s.observe(func(o Observer) { o.Decision("dry-run") })
		s.logf("%-14s %s: would start on %s", g.id, kind, place)
		g.running = true
		return nil
	}
	var pods []*corev1.Pod
	var podNode, podGPUs []string
	for r, name := range g.replicas {
		p := g.pods[name]
		if p == nil {
			return b.fail(g, nil, fmt.Errorf("pod %s is gone", name))
		}
		pods, podNode, podGPUs = append(pods, p), append(podNode, nodes[r]), append(podGPUs, gpus[r])
	}
	for _, name := range g.helpers {
		p := g.pods[name]
		if p == nil {
			return b.fail(g, nil, fmt.Errorf("pod %s is gone", name))
		}
		pods, podNode, podGPUs = append(pods, p), append(podNode, nodes[0]), append(podGPUs, "")
	}
	// 1. The intended placement on every pod first: a restart finds it.
	if i, err := b.parallel(len(pods), func(i int) error { return b.annotate(pods[i], place, podNode[i], podGPUs[i]) }); i >= 0 {
		return b.fail(g, nil, err)
	}
	// 2. Bind them all, concurrently; undo on any failure (after every bind
	// in flight has returned, so that each pod bound is known).
	ok := make([]bool, len(pods))
	i, err := b.parallel(len(pods), func(i int) error {
		err := b.bind(pods[i], podNode[i])
		ok[i] = err == nil
		return err
	})
	var bound []*corev1.Pod
	for k, p := range pods {
		if ok[k] {
			bound = append(bound, p)
		}
	}
	if i >= 0 {
		return b.fail(g, bound, err)
	}
	s.stats.Binds += len(bound)
	g.running = true
	lat := s.opt.Now().Sub(g.last)
	s.observe(func(o Observer) { o.Decision("start"); o.BindLatency(lat) })
	s.logf("%-14s bound to %s", g.id, place)
	return nil
}

// maxParallelBinds bounds the API requests (annotation patches, then
// bindings) that Start has in flight for one gang.
const maxParallelBinds = 16

// parallel runs f(0..n-1) on at most maxParallelBinds goroutines and waits
// for all of them. Once one fails, calls not yet started are not made. It
// returns the lowest failed index and its error (-1, nil when none failed),
// so the error reported does not depend on goroutine timing. f must only
// make API requests (and write its own slot of a result slice).
func (b *backend) parallel(n int, f func(i int) error) (int, error) {
	if n == 1 {
		if err := f(0); err != nil {
			return 0, err
		}
		return -1, nil
	}
	errs := make([]error, n)
	var failed atomic.Bool
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallelBinds)
	for i := range n {
		sem <- struct{}{}
		if failed.Load() {
			<-sem
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				errs[i] = err
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return i, err
		}
	}
	return -1, nil
}

// fail undoes a gang's partial binding: the bound pods are deleted (a pod
// cannot be unbound), the job is requeued after the plan (afterSchedule),
// and the failure is counted. It returns nil: the engine keeps the job
// running until afterSchedule requeues it.
func (b *backend) fail(g *gang, bound []*corev1.Pod, err error) error {
	s := b.s
	s.stats.Rollbacks++
	s.observe(func(o Observer) { o.Error("bind"); o.Decision("rollback") })
	s.logf("%-14s bind failed, rolling back %d bound pod(s): %v", g.id, len(bound), err)
	for _, p := range bound {
		b.deletePod(p)
	}
	for _, p := range g.sortedPods() {
		b.event(b.ctx, p, corev1.EventTypeWarning, "GpusimRollback", truncate("gang binding failed and was rolled back: "+err.Error(), 900))
	}
	for _, p := range bound {
		delete(g.pods, p.Name)
	}
	b.rollback = append(b.rollback, g.ref)
	return nil
}

// afterSchedule requeues the jobs whose binding was rolled back while all
// their pods still exist (a transient failure: nothing had been bound);
// a gang that lost pods in the rollback (they are deleted: a bound pod
// cannot be unbound) or failed three times ends as failed, and pods a
// controller recreates become a new job (ID~2).
func (b *backend) afterSchedule(ctx context.Context) {
	s := b.s
	rb := b.rollback
	b.rollback = nil
	for _, r := range rb {
		g := s.byRef[r]
		g.running = false
		if s.live.View().Job(r).State != sim.StateRunning {
			continue
		}
		g.rollbacks++
		if len(g.pods) < len(g.replicas)+len(g.helpers) || g.rollbacks >= 3 {
			g.done = true
			s.ends = append(s.ends, sim.Ended{Job: r, Outcome: sim.OutcomeFailed})
			continue
		}
		g.rollingBack = true
		if err := s.live.Interrupt(r, "rollback", 0); err != nil {
			s.logf("%-14s requeue after rollback: %v", g.id, err)
		}
		g.rollingBack = false
	}
}

func (b *backend) annotate(p *corev1.Pod, place, node, gpus string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q,%q:%q}}}`, AnnotationPlacement, place, AnnotationNode, node, AnnotationGPUs, gpus)
	_, err := b.s.opt.Client.CoreV1().Pods(p.Namespace).Patch(b.ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("annotate pod %s/%s: %w", p.Namespace, p.Name, err)
	}
	return nil
}

// bind binds p to node through pods/binding. A 409 Conflict on a pod
// already bound to that node is success (idempotent).
func (b *backend) bind(p *corev1.Pod, node string) error {
	c := b.s.opt.Client.CoreV1().Pods(p.Namespace)
	err := c.Bind(b.ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if apierrors.IsConflict(err) {
		cur, gerr := c.Get(b.ctx, p.Name, metav1.GetOptions{})
		if gerr == nil && cur.Spec.NodeName == node {
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("bind pod %s/%s to %s: %w", p.Namespace, p.Name, node, err)
	}
	return nil
}

func (b *backend) deletePod(p *corev1.Pod) {
	zero := int64(0)
	err := b.s.opt.Client.CoreV1().Pods(p.Namespace).Delete(b.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		b.s.observe(func(o Observer) { o.Error("bind") })
		b.s.logf("delete pod %s/%s: %v", p.Namespace, p.Name, err)
	}
}

// Stop implements sim.Backend: a preemption evicts every pod of the gang
// through the Eviction API (policy/v1) with the plan's grace period. It
// returns once the evictions are accepted (the kubelet then stops the
// containers within the grace period).
func (b *backend) Stop(p *sim.Preempt) error {
	s := b.s
	g := s.byRef[p.Job]
	if g == nil || g.rollingBack {
		return nil
	}
	g.running = false
	if s.opt.DryRun || s.opt.Shadow {
		b.predicted = slices.DeleteFunc(b.predicted, func(e predictedEnd) bool { return e.job == p.Job })
		s.observe(func(o Observer) { o.Decision("dry-run") })
		s.logf("%-14s would be preempted (%s)", g.id, p.Mode)
		return nil
	}
	grace := int64(float64(p.Grace) / 1e6 / s.opt.Scale)
	for _, name := range append(slices.Clone(g.replicas), g.helpers...) {
		pod := g.pods[name]
		if pod == nil || pod.Spec.NodeName == "" && !slices.Contains(g.replicas, name) {
			continue
		}
		ev := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			DeleteOptions: &metav1.DeleteOptions{GracePeriodSeconds: &grace}}
		if err := s.opt.Client.PolicyV1().Evictions(pod.Namespace).Evict(b.ctx, ev); err != nil && !apierrors.IsNotFound(err) {
			s.observe(func(o Observer) { o.Error("evict") })
			s.logf("%-14s evict %s: %v", g.id, pod.Name, err)
			continue
		}
		s.stats.Evictions++
		delete(g.pods, name)
	}
	s.observe(func(o Observer) { o.Decision("preempt") })
	s.logf("%-14s evicted (%s, grace %ds)", g.id, p.Reason, grace)
	return nil
}

// dueEnds returns the predicted ends (dry run, shadow) at or before now.
func (b *backend) dueEnds(now sim.Time) []sim.Ended {
	var out []sim.Ended
	b.predicted = slices.DeleteFunc(b.predicted, func(e predictedEnd) bool {
		if e.at <= now {
			out = append(out, sim.Ended{Job: e.job, Outcome: sim.OutcomeCompleted})
			if g := b.s.byRef[e.job]; g != nil {
				g.running = false
			}
			return true
		}
		return false
	})
	return out
}

// nextEnd is the earliest predicted end (sim.Never if none).
func (b *backend) nextEnd() sim.Time {
	t := sim.Never
	for _, e := range b.predicted {
		t = min(t, e.at)
	}
	return t
}

func (b *backend) shadowOf(g *gang) *shadowRec {
	if b.shadow == nil {
		b.shadow = map[sim.JobID]*shadowRec{}
	}
	r := b.shadow[g.id]
	if r == nil {
		r = &shadowRec{id: g.id, submit: b.s.live.Now()}
		b.shadow[g.id] = r
	}
	return r
}

// shadowBound records that the real scheduler bound one of g's pods.
func (b *backend) shadowBound(g *gang, p *corev1.Pod) {
	r := b.shadowOf(g)
	if !slices.Contains(r.realNodes, p.Spec.NodeName) {
		r.realNodes = append(r.realNodes, p.Spec.NodeName)
	}
	if !r.realStarted {
		r.realBind, r.realStarted = b.s.live.Now(), true
		b.s.logf("%-14s shadow: bound by its scheduler to %s", g.id, p.Spec.NodeName)
	}
}

// event queues a Kubernetes Event on pod p (never in shadow mode). Events
// are written by their own goroutine (eventLoop) so that the driver never
// waits for them; when the queue is full the Event is dropped and counted
// as an "event" error.
func (b *backend) event(_ context.Context, p *corev1.Pod, typ, reason, msg string) {
	s := b.s
	if s.opt.Shadow {
		return
	}
	if s.opt.DryRun && !strings.HasPrefix(msg, "dry run") {
		msg = "dry run: " + msg
	}
	now := metav1.NewTime(s.opt.Now())
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: p.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
		Reason:         reason, Message: truncate(msg, 1000), Type: typ,
		Source:         corev1.EventSource{Component: s.opt.SchedulerName},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}
	if b.events == nil {
		b.writeEvent(b.ctx, ev)
		return
	}
	select {
	case b.events <- ev:
	default:
		b.eventErrs.Add(1)
	}
}

func (b *backend) writeEvent(ctx context.Context, ev *corev1.Event) {
	if _, err := b.s.opt.Client.CoreV1().Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		b.eventErrs.Add(1)
	}
}

// eventLoop writes queued Events until the queue is closed, then signals done.
func (b *backend) eventLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	for ev := range b.events {
		b.writeEvent(ctx, ev)
	}
}

// waitEvents writes an Event on the first pod of each pending gang whose
// wait reason changed (at most one per EventInterval per gang).
func (s *scheduler) waitEvents(ctx context.Context) {
	now := s.opt.Now()
	v := s.live.View()
	for j := v.PendingHead(); j != nil; j = v.NextPending(j) {
		g := s.byRef[j.Ref]
		if g == nil {
			continue
		}
		r := s.live.WaitReason(j.Ref)
		if r == g.reason || r == sim.ReasonNone || now.Sub(g.reasonAt) < s.opt.EventInterval && !g.reasonAt.IsZero() {
			continue
		}
		g.reason, g.reasonAt = r, now
		pods := g.sortedPods()
		if len(pods) > 0 {
			s.b.event(ctx, pods[0], corev1.EventTypeNormal, "GpusimWaiting", fmt.Sprintf("%s (%s, policy %s)", r.Text(), r, s.opt.PolicyLabel))
		}
	}
}

// priority is a pod's priority: spec.priority (set by the Priority
// admission plugin), else its PriorityClass's value, else the global
// default class's, else 0.
func (s *scheduler) priority(p *corev1.Pod) (int32, error) {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority, nil
	}
	if n := p.Spec.PriorityClassName; n != "" {
		pc, err := s.classes.Get(n)
		if err != nil {
			return 0, fmt.Errorf("no PriorityClass %q", n)
		}
		return pc.Value, nil
	}
	pcs, err := s.classes.List(everything)
	if err != nil {
		return 0, err
	}
	for _, pc := range pcs {
		if pc.GlobalDefault {
			return pc.Value, nil
		}
	}
	return 0, nil
}

// writeOutputs writes the run directory (and shadow.csv in shadow mode).
func (s *scheduler) writeOutputs(wall time.Duration) error {
	res := s.live.Result()
	if s.opt.OutDir == "" {
		if s.opt.Done != nil {
			s.opt.Done(res)
		}
		return nil
	}
	label := s.opt.PolicyLabel
	if label == "" {
		label = res.Policy
	}
	res.Policy = label + " (live)"
	prov := reports.Provenance{Version: s.opt.Version, GoVersion: runtime.Version(), Seed: s.opt.Seed, Scenario: s.opt.Scenario, ScenarioSHA256: s.opt.ScenarioSHA256}
	sum := reports.SummarizeWith(res, prov, wall, reports.Prices{})
	sum.Mode = reports.ModeLive
	st := s.stats
	sum.Live = &reports.LiveSummary{Backend: "kubernetes", Policy: label, Scale: s.opt.Scale, Host: s.host(), GPUs: int(res.Cluster.NumGPUs()), Kube: &st}
	if err := reports.WriteRunDir(s.opt.OutDir, res, sum); err != nil {
		return fmt.Errorf("kube: outputs: %w", err)
	}
	if s.opt.Shadow {
		if err := s.writeShadow(filepath.Join(s.opt.OutDir, "shadow.csv")); err != nil {
			return err
		}
	}
	if s.opt.Done != nil {
		s.opt.Done(res)
	}
	return nil
}

// host is the API server's host (never credentials).
func (s *scheduler) host() string {
	if s.opt.Host != "" {
		return s.opt.Host
	}
	return "kubernetes"
}

// writeShadow writes one row per job of a shadow run: what gpusim decided
// and what the real scheduler did (times in simulated seconds).
func (s *scheduler) writeShadow(path string) error {
	var rows []*shadowRec
	for _, r := range s.b.shadow {
		rows = append(rows, r)
	}
	slices.SortFunc(rows, func(a, b *shadowRec) int { return strings.Compare(string(a.id), string(b.id)) })
	var bld strings.Builder
	bld.WriteString("job_id,submit_s,gpusim_start_s,gpusim_placement,real_bind_s,real_nodes\n")
	opt := func(ok bool, t sim.Time) string {
		if !ok {
			return ""
		}
		return strconv.FormatFloat(t.Seconds(), 'f', 3, 64)
	}
	for _, r := range rows {
		fmt.Fprintf(&bld, "%s,%s,%s,%s,%s,%s\n", csvField(string(r.id)), opt(true, r.submit), opt(r.simStarted, r.simStart), csvField(r.simPlace),
			opt(r.realStarted, r.realBind), csvField(strings.Join(r.realNodes, ";")))
	}
	if err := fsutil.WriteBytesAtomic(path, []byte(bld.String())); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	return nil
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
