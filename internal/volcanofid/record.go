package volcanofid

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/gpusim/gpusim/internal/kubetest"
	"github.com/gpusim/gpusim/sim"
)

// Volcano's resources and annotations (volcano.sh/apis v1.10.0,
// pkg/apis/scheduling/v1beta1).
var (
	queueGVR    = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "queues"}
	podGroupGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
)

const (
	groupNameAnnotation = "scheduling.k8s.io/group-name" // v1beta1.KubeGroupNameAnnotationKey
	schedulerName       = "volcano"
	namespace           = "fidelity"
)

// Options configure Record.
type Options struct {
	// BinDir holds etcd and kube-apiserver (kubetest.BinDir).
	BinDir string
	// VolcanoDir is scripts/ensure-volcano.sh's cache entry: bin/vc-scheduler,
	// crds/*.yaml and the file version.
	VolcanoDir string
	// WorkDir is a scratch directory (logs, certificates, etcd data); the
	// caller removes it.
	WorkDir string
	// Timeout bounds the whole recording (real time).
	Timeout time.Duration
	// Logf reports progress (may be nil).
	Logf func(format string, args ...any)
}

// Run is one run of a job: its pods from creation to their end.
type Run struct {
	Job     string
	Index   int     // 0 for the first run, 1 after the first restart, ...
	Created float64 // simulated seconds from T0: the run's last pod was created
	Start   float64 // the last pod of the gang was bound (Volcano commits a gang in one session)
	End     float64 // the last pod ended (Succeeded, or deleted after an eviction)
	Evicted bool    // a pod of this run was evicted by the scheduler
	// Cached is when vc-scheduler's cache had the whole run: its PodGroup
	// (first run) and all its pods (-1 if the log does not say).
	Cached float64
	// EvictSeen is when the driver (the kubelets' stand-in) first saw an
	// evicted pod's deletion: the grace period starts there (-1 if none).
	EvictSeen float64
	Nodes     []string
	// PodGroup creation second (from T0, real seconds, whole) and UID: the
	// job-order tie-break of Volcano (JobInfo creation timestamp, then UID).
	PGCreated int64
	PGUID     string
}

// podState is what the driver knows of one pod.
type podState struct {
	job     string
	run     int
	bound   float64 // -1 until bound
	ended   float64 // -1 until Succeeded or gone
	node    string
	evicted bool // deleted by the scheduler (not by the driver)
	deleted bool // the driver asked to delete it
}

// driver plays the Volcano Job controller and the kubelets' terminations.
type driver struct {
	f     *Fixture
	opt   Options
	c     *kubetest.Cluster
	t0    time.Time
	grace time.Duration // real

	mu       sync.Mutex
	pods     map[string]*podState // by pod name
	runs     map[string][]*Run    // by job id
	jobs     map[string]*Job
	pgUID    map[string]string
	pgSecond map[string]int64
	done     chan struct{}
	once     sync.Once
	errs     []error
	// terminating holds the pods whose kubelet-side removal is scheduled.
	terminating sync.Map
}

// now returns simulated seconds since T0.
func (d *driver) now() float64 { return time.Since(d.t0).Seconds() / d.f.TimeScale }

// Record runs the fixture on a real kube-apiserver + etcd (internal/kubetest)
// and vc-scheduler, and returns each job's runs. It stops every process it
// started (by PID) before it returns.
//
// It also returns vc-scheduler's sessions (SessionFit, from its log).
func Record(ctx context.Context, f *Fixture, opt Options) (runs []Run, meta map[string]string, fit SessionFit, err error) {
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opt.Timeout)
	defer cancel()
	conf, err := f.SchedulerConf()
	if err != nil {
		return nil, nil, SessionFit{}, err
	}
	period := 1.0
	if f.Params.SchedulePeriod != nil {
		period = sim.Duration(*f.Params.SchedulePeriod).Seconds()
	}
	graceSim := 30.0
	if f.Params.EvictionGracePeriod != nil {
		graceSim = sim.Duration(*f.Params.EvictionGracePeriod).Seconds()
	}
	graceReal := graceSim * f.TimeScale
	if graceReal != math.Round(graceReal) {
		return nil, nil, SessionFit{}, fmt.Errorf("%s/fixture.yaml: evictionGracePeriod × timeScale = %v s: pods' terminationGracePeriodSeconds must be whole seconds", f.Dir, graceReal)
	}
	c, err := kubetest.Start(ctx, kubetest.Options{BinDir: opt.BinDir, Dir: opt.WorkDir})
	if err != nil {
		return nil, nil, SessionFit{}, err
	}
	defer c.Stop()
	logf("apiserver up")
	if err := installCRDs(ctx, c, filepath.Join(opt.VolcanoDir, "crds")); err != nil {
		return nil, nil, SessionFit{}, err
	}
	if err := c.CreateNamespace(ctx, namespace); err != nil {
		return nil, nil, SessionFit{}, err
	}
	for i := range f.Nodes {
		if _, err := c.CreateReadyGPUNode(ctx, fmt.Sprintf("n%d", i), f.GPUsPerNode, nil); err != nil {
			return nil, nil, SessionFit{}, err
		}
	}
	if err := createPriorityClasses(ctx, c, f.Jobs); err != nil {
		return nil, nil, SessionFit{}, err
	}
	if err := createQueues(ctx, c, f); err != nil {
		return nil, nil, SessionFit{}, err
	}
	// the scheduler
	// vc-scheduler watches the directory of its conf file (fsnotify) and
	// reloads on every change there, so the file gets a directory of its own.
	confDir := filepath.Join(opt.WorkDir, "conf")
	if err := os.Mkdir(confDir, 0o755); err != nil {
		return nil, nil, SessionFit{}, fmt.Errorf("volcanofid: %w", err)
	}
	confPath := filepath.Join(confDir, "volcano-scheduler.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		return nil, nil, SessionFit{}, fmt.Errorf("volcanofid: %w", err)
	}
	if err := os.WriteFile(filepath.Join(f.Dir, "volcano-scheduler.conf"), []byte(conf), 0o644); err != nil {
		return nil, nil, SessionFit{}, fmt.Errorf("volcanofid: %w", err)
	}
	kc := filepath.Join(opt.WorkDir, "kubeconfig")
	if err := writeKubeconfig(c, kc); err != nil {
		return nil, nil, SessionFit{}, err
	}
	periodReal := time.Duration(period * f.TimeScale * float64(time.Second))
	sched, err := startScheduler(opt, kc, confPath, periodReal)
	if err != nil {
		return nil, nil, SessionFit{}, err
	}
	defer sched.stop()
	// wait for the scheduler's cache: it creates the default queue
	if err := waitUntil(ctx, 60*time.Second, func() bool {
		_, err := c.Dynamic.Resource(queueGVR).Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	}); err != nil {
		return nil, nil, SessionFit{}, fmt.Errorf("volcanofid: vc-scheduler did not create the default queue (log %s): %w", sched.log, err)
	}
	logf("vc-scheduler up (period %v real)", periodReal)
	time.Sleep(2 * time.Second) // let its informers sync

	d := &driver{f: f, opt: opt, c: c, grace: time.Duration(graceReal * float64(time.Second)),
		pods: map[string]*podState{}, runs: map[string][]*Run{}, jobs: map[string]*Job{},
		pgUID: map[string]string{}, pgSecond: map[string]int64{}, done: make(chan struct{})}
	for i := range f.Jobs {
		d.jobs[f.Jobs[i].ID] = &f.Jobs[i]
	}
	// FakeKubelet: bound pods Running, then Succeeded after their duration.
	kctx, kcancel := context.WithCancel(ctx)
	defer kcancel()
	kub, err := kubetest.StartFakeKubelet(kctx, c.Client, f.TimeScale)
	if err != nil {
		return nil, nil, SessionFit{}, err
	}
	defer kub.Wait()
	if err := d.watch(kctx); err != nil {
		return nil, nil, SessionFit{}, err
	}
	// T0 on a whole second plus 0.1 s, so that jobs submitted a whole
	// number of real seconds apart get distinct creation seconds.
	t0 := time.Now().Truncate(time.Second).Add(1100 * time.Millisecond)
	time.Sleep(time.Until(t0))
	d.t0 = t0
	logf("T0 %s", t0.UTC().Format(time.RFC3339Nano))
	order := slices.Clone(f.Jobs)
	sort.SliceStable(order, func(a, b int) bool { return order[a].Submit < order[b].Submit })
	go d.submitAll(kctx, order)
	select {
	case <-d.done:
	case <-ctx.Done():
		return nil, nil, SessionFit{}, fmt.Errorf("volcanofid: %s: %w (%s)", f.Dir, ctx.Err(), d.progress())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.errs) > 0 {
		return nil, nil, SessionFit{}, errors.Join(d.errs...)
	}
	for _, j := range f.Jobs {
		for _, r := range d.runs[j.ID] {
			r.PGUID, r.PGCreated = d.pgUID[j.ID], d.pgSecond[j.ID]
			runs = append(runs, *r)
		}
	}

	var last float64
	for _, r := range runs {
		last = max(last, r.End)
	}
	fit, err = fitSessions(sched.log, t0, f.TimeScale, last)
	if err != nil {
		return nil, nil, SessionFit{}, err
	}
	ver, _ := os.ReadFile(filepath.Join(opt.VolcanoDir, "version"))
	sv, _ := c.Client.Discovery().ServerVersion()
	meta = map[string]string{
		"volcano_version":        strings.TrimSpace(string(ver)),
		"kube_apiserver_version": sv.GitVersion,
		"time_scale":             strconv.FormatFloat(f.TimeScale, 'g', -1, 64),
		"schedule_period_s":      strconv.FormatFloat(period, 'g', -1, 64),
		"schedule_period_real":   periodReal.String(),
		"eviction_grace_s":       strconv.FormatFloat(graceSim, 'g', -1, 64),
		"t0_utc":                 t0.UTC().Format(time.RFC3339Nano),
		"restart_policy":         "PodEvicted: RestartJob (all pods deleted with the grace period, recreated when all are gone)",
		"pod_cpu_memory":         "as jobs.csv (cpu_milli, memory_mib); nodes 64 CPUs, 512Gi",
		"recorded_with":          "make fidelity-volcano (internal/volcanofid)",
		// vc-scheduler's sessions (SessionFit)
		"sessions":                   strconv.Itoa(fit.N),
		"session_first_s":            strconv.FormatFloat(fit.First, 'f', 4, 64),
		"session_period_s":           strconv.FormatFloat(fit.Period, 'f', 5, 64),
		"session_fit_max_residual_s": strconv.FormatFloat(fit.MaxResidual, 'f', 3, 64),
	}
	cachedTimes(runs, f, fit.Added)
	return runs, meta, fit, nil
}

// cachedTimes sets each run's Cached from the scheduler's cache additions.
func cachedTimes(runs []Run, f *Fixture, added map[string]float64) {
	reps := map[string]int{}
	for _, j := range f.Jobs {
		reps[j.ID] = j.Replicas
	}
	for i := range runs {
		r := &runs[i]
		c, ok := -1.0, true
		if r.Index == 0 {
			var pg float64
			if pg, ok = added["podgroup/"+r.Job]; ok {
				c = pg
			}
		}
		for k := 0; ok && k < reps[r.Job]; k++ {
			var t float64
			if t, ok = added[fmt.Sprintf("%s-%d-%d", r.Job, r.Index, k)]; ok {
				c = max(c, t)
			}
		}
		if ok {
			r.Cached = c
		}
	}
}

func (d *driver) progress() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var pending []string
	for id, rs := range d.runs {
		if len(rs) == 0 || rs[len(rs)-1].End < 0 || rs[len(rs)-1].Evicted {
			pending = append(pending, id)
		}
	}
	sort.Strings(pending)
	return fmt.Sprintf("jobs not finished: %v", pending)
}

// submitAll creates each job's PodGroup and pods at T0 + submit × scale. The
// jobs of one submit time (a flood) are created concurrently, so that they
// appear to the scheduler within as few sessions as possible.
func (d *driver) submitAll(ctx context.Context, order []Job) {
	for i := 0; i < len(order); {
		k := i
		for k < len(order) && order[k].Submit == order[i].Submit {
			k++
		}
		at := d.t0.Add(time.Duration(order[i].Submit * d.f.TimeScale * float64(time.Second)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		var wg sync.WaitGroup
		for _, j := range order[i:k] {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := d.createPodGroup(ctx, j); err != nil {
					d.fail(err)
					return
				}
				if err := d.createPods(ctx, j, 0); err != nil {
					d.fail(err)
				}
			}()
		}
		wg.Wait()
		i = k
	}
}

func (d *driver) fail(err error) {
	d.mu.Lock()
	d.errs = append(d.errs, err)
	d.mu.Unlock()
	d.finish()
}

// finish ends the recording (once).
func (d *driver) finish() { d.once.Do(func() { close(d.done) }) }

// createPodGroup creates the job's PodGroup as the Volcano Job controller
// does: minMember = replicas, minResources = replicas × the pod's requests,
// the job's queue and priority class.
func (d *driver) createPodGroup(ctx context.Context, j Job) error {
	min := map[string]any{}
	for k, v := range podRequests(j, int64(j.Replicas)) {
		min[string(k)] = v.String()
	}
	spec := map[string]any{"minMember": int64(j.Replicas), "minResources": min}
	if j.Queue != "" {
		spec["queue"] = j.Queue
	}
	if j.Priority != 0 {
		spec["priorityClassName"] = priorityClass(j.Priority)
	}
	pg := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
		"metadata": map[string]any{"name": j.ID, "namespace": namespace},
		"spec":     spec,
	}}
	got, err := d.c.Dynamic.Resource(podGroupGVR).Namespace(namespace).Create(ctx, pg, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("volcanofid: PodGroup %s: %w", j.ID, err)
	}
	d.mu.Lock()
	d.pgUID[j.ID] = string(got.GetUID())
	d.pgSecond[j.ID] = got.GetCreationTimestamp().Unix() - d.t0.Truncate(time.Second).Unix()
	d.mu.Unlock()
	return nil
}

// podRequests is n pods' requests: nvidia.com/gpu, cpu, memory (those > 0).
func podRequests(j Job, n int64) corev1.ResourceList {
	rl := corev1.ResourceList{}
	if j.GPUs > 0 {
		rl[kubetest.GPUResource] = *resource.NewQuantity(int64(j.GPUs)*n, resource.DecimalSI)
	}
	if j.CPUMilli > 0 {
		rl[corev1.ResourceCPU] = *resource.NewMilliQuantity(j.CPUMilli*n, resource.DecimalSI)
	}
	if j.MemoryMiB > 0 {
		rl[corev1.ResourceMemory] = *resource.NewQuantity(j.MemoryMiB*n<<20, resource.BinarySI)
	}
	return rl
}

func priorityClass(p int32) string { return fmt.Sprintf("gpusim-priority-%d", p) }

// createPods creates run's pods of job j (names <job>-<run>-<i>).
func (d *driver) createPods(ctx context.Context, j Job, run int) error {
	grace := int64(d.grace / time.Second)
	req := podRequests(j, 1)
	limits := corev1.ResourceList{}
	if q, ok := req[kubetest.GPUResource]; ok {
		limits[kubetest.GPUResource] = q // extended resources need limits = requests
	}
	d.mu.Lock()
	r := &Run{Job: j.ID, Index: run, Created: -1, Start: -1, End: -1, EvictSeen: -1, Cached: -1}
	d.runs[j.ID] = append(d.runs[j.ID], r)
	for i := range j.Replicas {
		d.pods[fmt.Sprintf("%s-%d-%d", j.ID, run, i)] = &podState{job: j.ID, run: run, bound: -1, ended: -1}
	}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		r.Created = d.now() // the last pod exists: the gang is complete
		d.mu.Unlock()
	}()
	for i := range j.Replicas {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d-%d", j.ID, run, i), Namespace: namespace,
				Annotations: map[string]string{groupNameAnnotation: j.ID, kubetest.DurationAnnotation: strconv.FormatFloat(j.Duration, 'g', -1, 64)}},
			Spec: corev1.PodSpec{
				SchedulerName:                 schedulerName,
				TerminationGracePeriodSeconds: &grace,
				RestartPolicy:                 corev1.RestartPolicyNever,
				Containers:                    []corev1.Container{{Name: "main", Image: "gpusim/sleep", Resources: corev1.ResourceRequirements{Requests: req, Limits: limits}}},
			},
		}
		if j.Priority != 0 {
			p.Spec.PriorityClassName = priorityClass(j.Priority)
		}
		if _, err := d.c.Client.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("volcanofid: pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// watch follows every pod of the namespace: binds, ends, evictions.
func (d *driver) watch(ctx context.Context) error {
	fac := informers.NewSharedInformerFactoryWithOptions(d.c.Client, 0, informers.WithNamespace(namespace))
	inf := fac.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { d.onPod(ctx, o, false) },
		UpdateFunc: func(_, o any) { d.onPod(ctx, o, false) },
		DeleteFunc: func(o any) {
			if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = t.Obj
			}
			d.onPod(ctx, o, true)
		},
	}); err != nil {
		return fmt.Errorf("volcanofid: %w", err)
	}
	fac.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return errors.New("volcanofid: pod informer did not sync")
	}
	return nil
}

// onPod records a pod's bind and end, and reacts to evictions as the Volcano
// Job controller's default policy (PodEvicted → RestartJob) does: every pod
// of the job is deleted with its grace period and, once all are gone, the
// job's pods are created again.
func (d *driver) onPod(ctx context.Context, o any, gone bool) {
	p, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	st := d.pods[p.Name]
	if st == nil {
		return
	}
	if p.Spec.NodeName != "" && st.bound < 0 {
		st.bound, st.node = now, p.Spec.NodeName
	}
	r := d.runs[st.job][st.run]
	if p.DeletionTimestamp != nil && !st.deleted && !st.evicted && !gone {
		// deleted by someone else: the scheduler's eviction
		st.evicted = true
		if !r.Evicted {
			r.Evicted, r.EvictSeen = true, now
		}
		go d.terminate(ctx, p.Name)
		for name, o := range d.pods {
			if o.job == st.job && o.run == st.run && name != p.Name && !o.deleted && !o.evicted && o.ended < 0 {
				o.deleted = true
				go d.deletePod(ctx, name)
			}
		}
	}
	if p.DeletionTimestamp != nil && st.deleted && !gone {
		go d.terminate(ctx, p.Name)
	}
	if st.ended < 0 && (gone || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed) {
		st.ended = now
	}
	d.update(ctx, st.job, st.run)
}

// update refreshes run's start and end; it restarts an evicted job once all
// its pods are gone and finishes the recording when every job completed.
// d.mu is held.
func (d *driver) update(ctx context.Context, job string, run int) {
	r := d.runs[job][run]
	allBound, allEnded := true, true
	var start, end float64
	var nodes []string
	for _, o := range d.pods {
		if o.job != job || o.run != run {
			continue
		}
		if o.bound < 0 {
			allBound = false
		} else {
			start = max(start, o.bound)
			nodes = append(nodes, o.node)
		}
		if o.ended < 0 {
			allEnded = false
		} else {
			end = max(end, o.ended)
		}
	}
	if allBound && r.Start < 0 {
		r.Start = start
		sort.Strings(nodes)
		r.Nodes = nodes
	}
	if allEnded && r.End < 0 {
		r.End = end
		if r.Evicted && run == len(d.runs[job])-1 {
			j := *d.jobs[job]
			go func() {
				if err := d.createPods(ctx, j, run+1); err != nil {
					d.fail(err)
				}
			}()
			return
		}
		for _, j := range d.f.Jobs {
			rs := d.runs[j.ID]
			if len(rs) == 0 || rs[len(rs)-1].End < 0 || rs[len(rs)-1].Evicted {
				return
			}
		}
		d.finish()
	}
}

// deletePod deletes a pod with its grace period (the job controller killing
// the other pods of an evicted job).
func (d *driver) deletePod(ctx context.Context, name string) {
	err := d.c.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		d.fail(fmt.Errorf("volcanofid: delete pod %s: %w", name, err))
	}
}

// terminate plays the kubelet for a pod being deleted: after the grace
// period the pod is removed (delete with grace 0).
func (d *driver) terminate(ctx context.Context, name string) {
	if _, loaded := d.terminating.LoadOrStore(name, true); loaded {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(d.grace):
	}
	zero := int64(0)
	err := d.c.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) && ctx.Err() == nil {
		d.fail(fmt.Errorf("volcanofid: remove pod %s: %w", name, err))
	}
}

// installCRDs installs the Volcano CRDs copied by scripts/ensure-volcano.sh.
func installCRDs(ctx context.Context, c *kubetest.Cluster, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("volcanofid: no Volcano CRDs in %s (run scripts/ensure-volcano.sh)", dir)
	}
	sort.Strings(files)
	var docs []*unstructured.Unstructured
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("volcanofid: %w", err)
		}
		ds, err := kubetest.DecodeYAML(f, b)
		if err != nil {
			return err
		}
		docs = append(docs, ds...)
	}
	return c.InstallCRDs(ctx, docs...)
}

// createPriorityClasses creates one PriorityClass per non-zero job priority.
func createPriorityClasses(ctx context.Context, c *kubetest.Cluster, jobs []Job) error {
	seen := map[int32]bool{}
	for _, j := range jobs {
		if j.Priority == 0 || seen[j.Priority] {
			continue
		}
		seen[j.Priority] = true
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: priorityClass(j.Priority)}, Value: j.Priority}
		if _, err := c.Client.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("volcanofid: PriorityClass %s: %w", pc.Name, err)
		}
	}
	return nil
}

// createQueues creates the params' queues as Volcano Queue objects.
func createQueues(ctx context.Context, c *kubetest.Cluster, f *Fixture) error {
	for _, q := range f.Params.Queues {
		spec := map[string]any{}
		if q.Weight != nil {
			spec["weight"] = int64(*q.Weight)
		} else {
			spec["weight"] = int64(1)
		}
		if len(q.Capability) > 0 {
			spec["capability"] = resourceMap(q.Capability)
		}
		if len(q.Guarantee) > 0 {
			spec["guarantee"] = map[string]any{"resource": resourceMap(q.Guarantee)}
		}
		if q.Reclaimable != nil {
			spec["reclaimable"] = *q.Reclaimable
		}
		if q.Priority != 0 {
			spec["priority"] = int64(q.Priority)
		}
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
			"metadata": map[string]any{"name": q.Name}, "spec": spec,
		}}
		if _, err := c.Dynamic.Resource(queueGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("volcanofid: Queue %s: %w", q.Name, err)
		}
	}
	return nil
}

// resourceMap turns a policy resource list (gpu, cpu, memory) into a
// Kubernetes one.
func resourceMap(rl map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range rl {
		if k == "gpu" {
			k = string(kubetest.GPUResource)
		}
		out[k] = v
	}
	return out
}

// writeKubeconfig writes a kubeconfig for c's admin credentials.
func writeKubeconfig(c *kubetest.Cluster, path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.Config.Host, CertificateAuthorityData: c.Config.CAData}
	cfg.AuthInfos["admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.Config.CertData, ClientKeyData: c.Config.KeyData}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "admin"}
	cfg.CurrentContext = "e2e"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("volcanofid: kubeconfig: %w", err)
	}
	return nil
}

// scheduler is the vc-scheduler child process.
type scheduler struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startScheduler(opt Options, kubeconfig, conf string, period time.Duration) (*scheduler, error) {
	logPath := filepath.Join(opt.WorkDir, "vc-scheduler.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("volcanofid: %w", err)
	}
	cmd := exec.Command(filepath.Join(opt.VolcanoDir, "bin", "vc-scheduler"),
		"--kubeconfig="+kubeconfig, "--scheduler-conf="+conf,
		"--schedule-period="+period.String(), "--leader-elect=false",
		"--enable-healthz=false", "--enable-metrics=false",
		"--cache-dump-dir="+opt.WorkDir, "--logtostderr=true", "-v=4")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Dir = opt.WorkDir
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("volcanofid: start vc-scheduler: %w", err)
	}
	s := &scheduler{cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(s.done)
	}()
	return s, nil
}

// stop sends SIGTERM to the scheduler's PID, then SIGKILL after 5 s.
func (s *scheduler) stop() { kubetest.StopProcess(s.cmd, s.done, 5*time.Second) }

// waitUntil polls ok every 100 ms until it holds, ctx ends or timeout passes.
func waitUntil(ctx context.Context, timeout time.Duration, ok func() bool) error {
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}
