package kube

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	schedlisters "k8s.io/client-go/listers/scheduling/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/gpusim/gpusim/live"
	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

// PodGroup resources read through the dynamic client (when served).
var (
	podGroupGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	volcanoGVR  = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
)

// scheduler is one Run: its informers, its sim.Live and its driver. Every
// field is owned by the driver goroutine except the work queue and wake.
type scheduler struct {
	opt   Options
	queue workqueue.TypedInterface[string]
	wake  chan struct{}

	pods    corelisters.PodLister
	nodes   corelisters.NodeLister
	classes schedlisters.PriorityClassLister
	groups  map[gangKind]cache.GenericLister

	model *clusterModel
	live  *sim.Live
	clock *live.ScaledClock
	b     *backend

	gangs   map[string]*gang // by gang key
	byRef   map[sim.JobRef]*gang
	podGang map[string]string // pod ns/name -> gang key
	ends    []sim.Ended
	stats   reports.KubeSummary
	notes   map[string]bool
	extras  map[string]int // cached expected pod counts of Kubeflow/JobSet/Job owners
}

func newScheduler(opt Options) (*scheduler, error) {
	if opt.Client == nil {
		return nil, errors.New("kube: Options.Client is required")
	}
	if opt.Config.Policy == nil {
		return nil, errors.New("kube: Options.Config.Policy is required")
	}
	if err := CheckPolicy(opt.Config.Policy.Name()); err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	if opt.DryRun && opt.Shadow {
		return nil, errors.New("kube: --dry-run and --shadow exclude each other")
	}
	if opt.SchedulerName == "" {
		opt.SchedulerName = DefaultSchedulerName
	}
	if opt.Scale == 0 {
		opt.Scale = 1
	}
	if !(opt.Scale > 0) {
		return nil, fmt.Errorf("kube: time scale must be > 0, got %v", opt.Scale)
	}
	if opt.Grace <= 0 {
		opt.Grace = 2 * time.Second
	}
	if opt.Poll <= 0 {
		opt.Poll = 50 * time.Millisecond
	}
	if opt.MaxJobs <= 0 {
		opt.MaxJobs = 100_000
	}
	if opt.RackLabel == "" {
		opt.RackLabel = DefaultRackLabel
	}
	if opt.BlockLabel == "" {
		opt.BlockLabel = DefaultBlockLabel
	}
	if opt.ZoneLabel == "" {
		opt.ZoneLabel = DefaultZoneLabel
	}
	if opt.GangTimeout <= 0 {
		opt.GangTimeout = 60 * time.Second
	}
	if opt.EventInterval <= 0 {
		opt.EventInterval = 10 * time.Second
	}
	if opt.DefaultDuration <= 0 {
		opt.DefaultDuration = sim.Seconds(3600)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	s := &scheduler{
		opt:     opt,
		queue:   workqueue.NewTyped[string](),
		wake:    make(chan struct{}, 1),
		groups:  map[gangKind]cache.GenericLister{},
		gangs:   map[string]*gang{},
		byRef:   map[sim.JobRef]*gang{},
		podGang: map[string]string{},
		notes:   map[string]bool{},
		extras:  map[string]int{},
	}
	s.stats.SchedulerName, s.stats.DryRun, s.stats.Shadow = opt.SchedulerName, opt.DryRun, opt.Shadow
	return s, nil
}

func (s *scheduler) logf(format string, args ...any) {
	if s.opt.Log == nil {
		return
	}
	t := 0.0
	if s.live != nil {
		t = s.live.Now().Seconds()
	}
	fmt.Fprintf(s.opt.Log, "%10.1fs  "+format+"\n", append([]any{t}, args...)...)
}

func (s *scheduler) observe(f func(Observer)) {
	if s.opt.Observer != nil {
		f(s.opt.Observer)
	}
}

func (s *scheduler) notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// mine reports whether the pod is one this run schedules (or, in shadow
// mode, watches).
func (s *scheduler) mine(p *corev1.Pod) bool {
	return s.opt.Shadow || p.Spec.SchedulerName == s.opt.SchedulerName
}

// startInformers starts the informers and waits for their caches.
func (s *scheduler) startInformers(ctx context.Context) error {
	var fopts []informers.SharedInformerOption
	if s.opt.Namespace != "" {
		fopts = append(fopts, informers.WithNamespace(s.opt.Namespace))
	}
	f := informers.NewSharedInformerFactoryWithOptions(s.opt.Client, 0, fopts...)
	podInf := f.Core().V1().Pods()
	nodeInf := f.Core().V1().Nodes()
	pcInf := f.Scheduling().V1().PriorityClasses()
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if p, ok := obj.(*corev1.Pod); ok && s.mine(p) {
			s.queue.Add(p.Namespace + "/" + p.Name)
			s.notify()
		}
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n any) { enqueue(n) },
		DeleteFunc: enqueue,
	}); err != nil {
		return fmt.Errorf("kube: pod informer: %w", err)
	}
	s.pods, s.nodes, s.classes = podInf.Lister(), nodeInf.Lister(), pcInf.Lister()
	synced := []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced, pcInf.Informer().HasSynced}
	var df dynamicinformer.DynamicSharedInformerFactory
	if s.opt.Dynamic != nil {
		df = dynamicinformer.NewFilteredDynamicSharedInformerFactory(s.opt.Dynamic, 0, s.opt.Namespace, nil)
		for kind, gvr := range map[gangKind]schema.GroupVersionResource{gangPodGroup: podGroupGVR, gangVolcano: volcanoGVR} {
			// Only resources the API server serves: a missing CRD would
			// make the informer retry forever.
			if _, err := s.opt.Dynamic.Resource(gvr).Namespace(s.opt.Namespace).List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				s.observe(func(o Observer) { o.Error("apiserver") })
				return fmt.Errorf("kube: list %s: %w", gvr.GroupResource(), err)
			}
			inf := df.ForResource(gvr)
			if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(any) { s.notify() },
				UpdateFunc: func(any, any) { s.notify() },
			}); err != nil {
				return fmt.Errorf("kube: %s informer: %w", gvr.GroupResource(), err)
			}
			s.groups[kind] = inf.Lister()
			synced = append(synced, inf.Informer().HasSynced)
		}
	}
	f.Start(ctx.Done())
	if df != nil {
		df.Start(ctx.Done())
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		s.observe(func(o Observer) { o.Error("apiserver") })
		return fmt.Errorf("kube: informer caches did not sync: %w", context.Cause(ctx))
	}
	return nil
}

// run is Run.
func (s *scheduler) run(ctx context.Context) error {
	defer s.queue.ShutDown()
	if err := s.startInformers(ctx); err != nil {
		return err
	}
	nodes, err := s.nodes.List(everything)
	if err != nil {
		return fmt.Errorf("kube: nodes: %w", err)
	}
	s.model, err = buildCluster(nodes, s.opt.RackLabel, s.opt.BlockLabel, s.opt.ZoneLabel, s.opt.ClassLabels)
	if err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	for _, n := range s.model.notes {
		s.logf("%s", n)
	}
	s.stats.Nodes = len(s.model.specs)
	cluster, err := sim.NewCluster(s.model.specs)
	if err != nil {
		return fmt.Errorf("kube: cluster: %w", err)
	}
	cfg := s.opt.Config
	cfg.Cluster, cfg.Jobs = cluster, nil
	s.b = &backend{s: s, ctx: ctx}
	s.live, err = sim.NewLive(cfg, s.b, s.opt.MaxJobs, sim.Seconds(s.opt.Grace.Seconds()*s.opt.Scale))
	if err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	epoch := s.opt.Now()
	s.clock = &live.ScaledClock{Epoch: epoch, Scale: s.opt.Scale, Wall: s.opt.Now}
	s.logf("%d GPU nodes, %d GPUs; policy %s; scheduler name %q%s", len(s.model.specs), cluster.NumGPUs(), s.opt.PolicyLabel, s.opt.SchedulerName, s.modeNote())
	if err := s.adoptAtStart(ctx); err != nil {
		return err
	}
	s.b.events = make(chan *corev1.Event, 4096)
	evDone := make(chan struct{})
	// Events still queued when ctx ends get a short grace of their own.
	evCtx, evCancel := context.WithCancel(context.WithoutCancel(ctx))
	go s.b.eventLoop(evCtx, evDone)
	defer func() {
		close(s.b.events)
		select {
		case <-evDone:
		case <-time.After(2 * time.Second):
		}
		evCancel()
		<-evDone
	}()
	if s.opt.Ready != nil {
		s.opt.Ready()
	}
	t0 := time.Now()
	for {
		if err := s.cycle(ctx); err != nil {
			return err
		}
		if ctx.Err() != nil {
			break
		}
		s.sleep(ctx)
		if ctx.Err() != nil {
			break
		}
	}
	return s.writeOutputs(time.Since(t0))
}

func (s *scheduler) modeNote() string {
	switch {
	case s.opt.DryRun:
		return " (dry run: nothing is bound or evicted)"
	case s.opt.Shadow:
		return " (shadow: watching every scheduler's pods, never acting)"
	}
	return ""
}

var everything = labelsEverything()

// cycle drains the work queue, advances the model, submits complete gangs
// and calls the policy.
func (s *scheduler) cycle(ctx context.Context) error {
	for s.queue.Len() > 0 {
		key, quit := s.queue.Get()
		if quit {
			return nil
		}
		s.podChanged(ctx, key)
		s.queue.Done(key)
	}
	now := s.clock.Now()
	s.ends = append(s.ends, s.b.dueEnds(now)...)
	slices.SortFunc(s.ends, func(a, b sim.Ended) int { return int(a.Job) - int(b.Job) })
	ends := s.ends
	s.ends = s.ends[:0]
	if err := s.live.Advance(now, ends); err != nil {
		return fmt.Errorf("kube: %w", err)
	}
	s.submitReady(ctx)
	if err := s.live.Schedule(false); err != nil {
		return fmt.Errorf("kube: policy %s: %w", s.opt.PolicyLabel, err)
	}
	for _, r := range s.live.Stopped() {
		if g := s.byRef[r]; g != nil {
			g.running, g.evicted = false, true
		}
	}
	s.b.afterSchedule(ctx)
	s.waitEvents(ctx)
	pending := s.live.View().PendingCount()
	s.observe(func(o Observer) { o.QueueLength(pending) })
	for n := s.b.eventErrs.Swap(0); n > 0; n-- {
		s.observe(func(o Observer) { o.Error("event") })
	}
	return nil
}

// sleep waits for a pod change, the next arrival or wake-up of the model,
// a predicted end (dry run, shadow) or Poll.
func (s *scheduler) sleep(ctx context.Context) {
	d := s.opt.Poll
	next := min(s.live.NextTimer(), s.b.nextEnd())
	if next != sim.Never {
		d = min(d, max(0, time.Duration(float64(next.Sub(s.clock.Now()))/s.opt.Scale)*time.Microsecond))
	}
	if d <= 0 {
		runtime.Gosched()
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-s.wake:
	case <-t.C:
	}
}

// podChanged files one pod's change: it joins (or leaves) its gang; a
// running gang whose pods have all finished ends.
func (s *scheduler) podChanged(ctx context.Context, key string) {
	ns, name, _ := strings.Cut(key, "/")
	p, err := s.pods.Pods(ns).Get(name)
	if err != nil && !apierrors.IsNotFound(err) {
		s.observe(func(o Observer) { o.Error("apiserver") })
		return
	}
	if p == nil || apierrors.IsNotFound(err) {
		if gk, ok := s.podGang[key]; ok {
			if g := s.gangs[gk]; g != nil {
				delete(g.pods, name)
				s.checkEnd(g, name, true)
			}
		}
		return
	}
	kind, gname := gangOf(p)
	gk := gangKey(p.Namespace, kind, gname)
	g := s.gangs[gk]
	if g == nil {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return // finished before we saw it
		}
		if p.Spec.NodeName != "" && !s.opt.Shadow {
			return // bound by someone else (adopted at start only)
		}
		g = &gang{key: gk, kind: kind, ns: p.Namespace, name: gname, id: jobID(p.Namespace, gname), pods: map[string]*corev1.Pod{}, first: s.opt.Now()}
		s.gangs[gk] = g
	}
	if g.done && !g.skipped && p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending && g.pods[name] == nil {
		// New pods of a gang whose job ended: a new job (a controller
		// recreated them).
		gen := g.gen + 1
		old := g
		g = &gang{key: gk, kind: kind, ns: p.Namespace, name: gname, gen: gen, id: sim.JobID(fmt.Sprintf("%s~%d", jobID(p.Namespace, gname), gen)), pods: map[string]*corev1.Pod{}, first: s.opt.Now()}
		for n, q := range old.pods { // pods of the old job still waiting join the new one
			if q.Spec.NodeName == "" && q.Status.Phase == corev1.PodPending {
				g.pods[n] = q
			}
		}
		s.gangs[gk] = g
	}
	if g.skipped {
		return
	}
	if g.evicted && !g.running && g.pods[name] == nil && p.Spec.NodeName == "" {
		g.evicted = false
		g.replicas, g.helpers = nil, nil
	}
	g.pods[name] = p
	s.podGang[key] = gk
	if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
		g.last = s.opt.Now()
	}
	if s.opt.Shadow && p.Spec.NodeName != "" {
		s.b.shadowBound(g, p)
	}
	s.checkEnd(g, name, false)
}

// checkEnd ends a running gang's job once every replica pod is finished or
// gone: completed when all succeeded, failed otherwise.
func (s *scheduler) checkEnd(g *gang, changed string, deleted bool) {
	if !g.running || s.opt.DryRun || s.opt.Shadow {
		return
	}
	if !slices.Contains(g.replicas, changed) && !slices.Contains(g.helpers, changed) {
		return
	}
	outcome := sim.OutcomeCompleted
	for _, n := range g.replicas {
		p := g.pods[n]
		switch {
		case p == nil:
			outcome = sim.OutcomeFailed
		case p.Status.Phase == corev1.PodSucceeded:
		case p.Status.Phase == corev1.PodFailed:
			outcome = sim.OutcomeFailed
		default:
			return // still running
		}
	}
	g.running, g.done = false, true
	s.ends = append(s.ends, sim.Ended{Job: g.ref, Outcome: outcome})
	s.logf("%-14s %s", g.id, outcome)
}

// submitReady submits every complete gang (in the order their first pod
// was seen, then by ID) and skips, with an Event, gangs that are malformed
// or incomplete for longer than GangTimeout.
func (s *scheduler) submitReady(ctx context.Context) {
	var ready []*gang
	for _, g := range s.gangs {
		if g.submitted || g.skipped || g.done {
			continue
		}
		ready = append(ready, g)
	}
	slices.SortFunc(ready, func(a, b *gang) int {
		if c := a.first.Compare(b.first); c != 0 {
			return c
		}
		return strings.Compare(string(a.id), string(b.id))
	})
	for _, g := range ready {
		s.trySubmit(ctx, g)
	}
}

// trySubmit submits g's job if its pods are all there.
func (s *scheduler) trySubmit(ctx context.Context, g *gang) {
	pending := 0
	for _, p := range g.pods {
		if p.Spec.NodeName == "" && p.Status.Phase == corev1.PodPending {
			pending++
		}
	}
	if pending == 0 && !s.opt.Shadow {
		return
	}
	want, err := s.expected(ctx, g)
	if err != nil {
		s.skip(ctx, g, err.Error())
		return
	}
	have := len(g.pods)
	if want == 0 || have < want {
		if s.opt.Now().Sub(g.first) >= s.opt.GangTimeout {
			if want == 0 {
				s.skip(ctx, g, fmt.Sprintf("unknown gang reference: no %s %q in namespace %s after %v", g.kind, g.name, g.ns, s.opt.GangTimeout))
			} else {
				s.skip(ctx, g, fmt.Sprintf("%s %q: %d of %d pods after %v", g.kind, g.name, have, want, s.opt.GangTimeout))
			}
		}
		return
	}
	pods := g.sortedPods()
	var gpuPods []*corev1.Pod
	g.replicas, g.helpers = nil, nil
	for _, p := range pods {
		if podGPUs(p) > 0 {
			gpuPods = append(gpuPods, p)
			g.replicas = append(g.replicas, p.Name)
		} else {
			g.helpers = append(g.helpers, p.Name)
		}
	}
	if len(gpuPods) == 0 {
		gpuPods = pods
		g.replicas, g.helpers = g.helpers, nil
	}
	spec, notes, err := translate(s.model, g.id, pods, s.priority, s.opt.DefaultDuration)
	for _, n := range notes {
		if !s.notes[n] {
			s.notes[n] = true
			s.logf("note: %s", n)
		}
	}
	if err != nil {
		s.observe(func(o Observer) { o.Error("decode") })
		s.skip(ctx, g, err.Error())
		return
	}
	if int(spec.Replicas) != len(g.replicas) {
		s.skip(ctx, g, fmt.Sprintf("%d GPU pods but the translation made %d replicas", len(g.replicas), spec.Replicas))
		return
	}
	if qq, ok := s.opt.Config.Policy.(policies.QueueQuotas); ok && spec.Queue != "" {
		if _, ok := qq.QueueNominalGPUs(spec.Queue); !ok {
			s.skip(ctx, g, fmt.Sprintf("queue %q matches no LocalQueue of policy %s", spec.Queue, s.opt.PolicyLabel))
			return
		}
	}
	if err := s.live.View().Cluster().Feasible(&spec); err != nil {
		s.skip(ctx, g, "can never fit this cluster: "+err.Error())
		return
	}
	ref, err := s.live.Submit(spec)
	if err != nil {
		s.skip(ctx, g, "submit: "+err.Error())
		return
	}
	g.submitted, g.ref = true, ref
	s.byRef[ref] = g
	s.logf("%-14s submitted: %d x %d GPU (%s, %d pods)", g.id, spec.Replicas, spec.GPUsPerReplica, g.kind, len(pods))
}

// skip gives up on a malformed or incomplete gang: an Event on its pods and
// a log line; it is never scheduled.
func (s *scheduler) skip(ctx context.Context, g *gang, why string) {
	g.skipped = true
	s.stats.Skipped++
	s.observe(func(o Observer) { o.Decision("skip") })
	s.logf("%-14s skipped: %s", g.id, truncate(why, 300))
	for _, p := range g.sortedPods() {
		s.b.event(ctx, p, corev1.EventTypeWarning, "GpusimSkipped", "gpusim will not schedule this pod: "+why)
	}
}

// expected returns the number of pods g needs (0 = not known: its group
// object is missing).
func (s *scheduler) expected(ctx context.Context, g *gang) (int, error) {
	switch g.kind {
	case gangPod:
		return 1, nil
	case gangPodGroup, gangVolcano:
		l := s.groups[g.kind]
		if l == nil {
			return 0, nil
		}
		obj, err := l.ByNamespace(g.ns).Get(g.name)
		if err != nil {
			return 0, nil
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return 0, fmt.Errorf("%s %q: not an object", g.kind, g.name)
		}
		mm, found, err := unstructured.NestedFieldNoCopy(u.Object, "spec", "minMember")
		if err != nil || !found {
			return 0, fmt.Errorf("%s %q: spec.minMember is missing", g.kind, g.name)
		}
		n, ok := mm.(int64)
		if !ok || n < 1 || n > 1<<20 {
			return 0, fmt.Errorf("%s %q: spec.minMember must be a whole number >= 1, got %v", g.kind, g.name, mm)
		}
		return int(n), nil
	}
	if n, ok := s.extras[g.key]; ok {
		return n, nil
	}
	n, err := s.ownerPods(ctx, g)
	if err != nil {
		s.observe(func(o Observer) { o.Error("apiserver") })
		return 0, nil // retried next cycle; skipped after GangTimeout
	}
	s.extras[g.key] = n
	return n, nil
}

// truncate shortens s to at most n bytes (on a rune boundary).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !isRuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
