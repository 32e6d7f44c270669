package k8smanifest

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// Annotations, labels and resource names the translation reads.
const (
	AnnSubmit   = "gpusim.io/submit-time" // seconds after the start (decimal) or a Go duration ("90s")
	AnnDuration = "gpusim.io/duration"    // true run time, same syntax
	AnnClass    = "gpusim.io/class"       // sim job class
	AnnUser     = "gpusim.io/user"        // job user

	LabelKueueQueue   = "kueue.x-k8s.io/queue-name"        // Kueue LocalQueue -> job queue
	LabelPodGroup     = "scheduling.x-k8s.io/pod-group"    // scheduler-plugins coscheduling member
	LabelPodGroupOld  = "pod-group.scheduling.sigs.k8s.io" // its pre-v0.24 label
	AnnVolcanoGroup   = "scheduling.k8s.io/group-name"     // Volcano PodGroup member
	ResourceGPU       = "nvidia.com/gpu"                   // whole GPUs (device plugin)
	ResourceMIGPrefix = "nvidia.com/mig-"                  // + profile: one MIG instance (mixed strategy)
	LabelGPUProduct   = "nvidia.com/gpu.product"           // GPU feature discovery: GPU model
	LabelGPUModel     = "gpusim.io/gpu-model"              // gpusim's own GPU model label
	systemClusterCrit = "system-cluster-critical"
	systemNodeCrit    = "system-node-critical"
)

// maxPodJobs bounds the jobs one NonIndexed batch Job may become.
const maxPodJobs = 100000

// Kubeflow replica types per kind (training-operator's
// pkg/apis/kubeflow.org/v1 *_types.go; mpi-operator v2beta1).
var (
	tfTypes      = []string{"Chief", "Master", "PS", "Worker", "Evaluator"}
	pyTorchTypes = []string{"Master", "Worker"}
	mpiTypes     = []string{"Launcher", "Worker"}
)

type decoded[S any] struct {
	doc doc
	obj *object[S]
}

type kubeflowJob struct {
	doc      doc
	meta     *objectMeta
	field    string
	replicas map[string]*replicaSpec
	run      *runPolicy
	types    []string
}

type podGroup struct {
	doc     doc
	obj     *object[podGroupSpec]
	members []part
}

// part is a set of identical pods in a gang.
type part struct {
	where string // field path for messages, e.g. "spec.tfReplicaSpecs.Worker"
	count int32
	shape shape
}

// shape is what one pod needs, in simulator units.
type shape struct {
	gpus     int32
	cpu, mem int64
	models   []string // nil = any
	prio     int32
	mig      string // the MIG profile of its one instance ("" = whole GPUs)
}

// draft is a job before its schedule is applied.
type draft struct {
	spec sim.JobSpec
	src  string // the object name the schedule refers to
	doc  doc
	meta *objectMeta
	// waves multiplies the duration (batch Jobs with completions >
	// parallelism).
	waves                  int32
	hasSubmit, hasDuration bool
}

type translator struct {
	errs  []*Error
	notes map[string]bool
	seen  map[string]string

	pods     []decoded[podSpec]
	jobsK8s  []decoded[batchJobSpec]
	groups   []*podGroup
	kubeflow []kubeflowJob
	jobSets  []decoded[jobSetSpec]

	classes       map[string]int32
	classWhere    map[string]string
	globalDefault string

	drafts []*draft
	bySrc  map[string][]*draft
	jobs   []sim.JobSpec
}

func newTranslator() *translator {
	return &translator{
		notes:      map[string]bool{},
		seen:       map[string]string{},
		classes:    map[string]int32{systemClusterCrit: 2000000000, systemNodeCrit: 2000001000},
		classWhere: map[string]string{},
		bySrc:      map[string][]*draft{},
	}
}

func (t *translator) addPriorityClass(d doc, o *priorityClass) {
	if o.Value == nil {
		t.errorf(d, []string{"value"}, "PriorityClass %q: required", o.Metadata.Name)
		return
	}
	if o.Metadata.Name == systemClusterCrit || o.Metadata.Name == systemNodeCrit {
		t.errorf(d, []string{"metadata", "name"}, "PriorityClass %q is built in", o.Metadata.Name)
		return
	}
	if *o.Value > 1000000000 {
		// kubernetes pkg/apis/scheduling/validation: user classes are <= HighestUserDefinablePriority.
		t.errorf(d, []string{"value"}, "PriorityClass %q: must be <= 1000000000, got %d", o.Metadata.Name, *o.Value)
		return
	}
	where := fmt.Sprintf("%s:%d", d.file, d.root.Line)
	if o.GlobalDefault {
		if t.globalDefault != "" {
			t.errorf(d, []string{"globalDefault"}, "PriorityClass %q: a second globalDefault (the first is %q at %s)", o.Metadata.Name, t.globalDefault, t.classWhere[t.globalDefault])
			return
		}
		t.globalDefault = o.Metadata.Name
	}
	t.classes[o.Metadata.Name] = *o.Value
	t.classWhere[o.Metadata.Name] = where
}

// priorityOf resolves a priorityClassName at path (empty: the global default,
// else the pod's explicit priority, else 0).
func (t *translator) priorityOf(d doc, path []string, class string, explicit *int32) (int32, bool) {
	if class == "" {
		if t.globalDefault != "" {
			return t.classes[t.globalDefault], true
		}
		if explicit != nil {
			return *explicit, true
		}
		return 0, true
	}
	v, ok := t.classes[class]
	if !ok {
		t.errorf(d, path, "no PriorityClass %q", class)
		return 0, false
	}
	return v, true
}

func sub(path []string, more ...string) []string {
	out := make([]string, 0, len(path)+len(more))
	return append(append(out, path...), more...)
}

// quantity parses a resource quantity at path into gpusim units: whole GPUs
// (must be integral), millicores, MiB (rounded up), or the plain number.
func (t *translator) quantity(d doc, path []string, res, s string) (int64, bool) {
	v, err := parseQuantity(s)
	if err == nil && v > 1<<40 {
		err = fmt.Errorf("quantity %q is too large", s)
	}
	if err != nil {
		t.errorf(d, path, "%v", err)
		return 0, false
	}
	switch res {
	case "cpu":
		return int64(math.Ceil(v*1000 - 1e-9)), true
	case "memory":
		return int64(math.Ceil(v/(1<<20) - 1e-9)), true
	case ResourceGPU:
		if v != math.Trunc(v) {
			t.errorf(d, path, "%s must be a whole number of GPUs, got %q", ResourceGPU, s)
			return 0, false
		}
	}
	return int64(v), true
}

// containerNeeds is one container's GPUs, CPU and memory: GPUs from limits
// (requests, if given, must be equal: extended resources cannot be
// overcommitted, kubernetes pkg/apis/core/validation
// validateResourceRequirements), CPU and memory from requests, else limits.
func (t *translator) containerNeeds(d doc, path []string, c *container) (gpus, cpu, mem int64, mig map[string]int64) {
	r := &c.Resources
	lim, hasLim := r.Limits[ResourceGPU]
	req, hasReq := r.Requests[ResourceGPU]
	switch {
	case hasLim:
		gpus, _ = t.quantity(d, sub(path, "resources", "limits", ResourceGPU), ResourceGPU, lim)
		if hasReq {
			if g, ok := t.quantity(d, sub(path, "resources", "requests", ResourceGPU), ResourceGPU, req); ok && g != gpus {
				t.errorf(d, sub(path, "resources", "requests", ResourceGPU), "must equal limits (%s): extended resources cannot be overcommitted", lim)
			}
		}
	case hasReq:
		t.errorf(d, sub(path, "resources", "requests", ResourceGPU), "%s needs a limit (Kubernetes: limit must be set for non overcommitable resources)", ResourceGPU)
	}
	for _, res := range []string{"cpu", "memory"} {
		s, where := r.Requests[res], "requests"
		if s == "" {
			s, where = r.Limits[res], "limits"
		}
		if s == "" {
			continue
		}
		v, _ := t.quantity(d, sub(path, "resources", where, res), res, s)
		if res == "cpu" {
			cpu = v
		} else {
			mem = v
		}
	}
	for _, k := range slices.Sorted(mapKeys(r.Limits)) {
		if profile, ok := strings.CutPrefix(k, ResourceMIGPrefix); ok && profile != "" {
			n, ok := t.quantity(d, sub(path, "resources", "limits", k), ResourceGPU, r.Limits[k])
			if ok && n > 0 {
				if mig == nil {
					mig = map[string]int64{}
				}
				mig[profile] += n
			}
		}
	}
	for _, m := range []map[string]string{r.Requests, r.Limits} {
		for k := range m {
			if k != ResourceGPU && k != "cpu" && k != "memory" && !strings.HasPrefix(k, ResourceMIGPrefix) {
				t.notef("resource %q is not simulated (ignored)", k)
			}
		}
	}
	return gpus, cpu, mem, mig
}

// podShape computes what one pod of spec ps (at path) needs. Effective requests
// follow KEP-753: max(sum of containers and sidecars, each init container plus
// the sidecars started before it).
func (t *translator) podShape(d doc, path []string, ps *podSpec) (shape, bool) {
	n := len(t.errs)
	var s shape
	if len(ps.Containers) == 0 {
		t.errorf(d, sub(path, "containers"), "at least one container is required")
		return s, false
	}
	var sg, sc, sm int64 // containers + sidecars
	migs := map[string]int64{}
	addMIG := func(m map[string]int64) {
		for k, v := range m {
			migs[k] += v
		}
	}
	for i := range ps.Containers {
		g, c, m, mig := t.containerNeeds(d, sub(path, "containers", strconv.Itoa(i)), &ps.Containers[i])
		sg, sc, sm = sg+g, sc+c, sm+m
		addMIG(mig)
	}
	var ig, ic, im int64 // max over init containers
	var side [3]int64
	for i := range ps.InitContainers {
		c := &ps.InitContainers[i]
		g, cp, m, mig := t.containerNeeds(d, sub(path, "initContainers", strconv.Itoa(i)), c)
		addMIG(mig) // summed, not max-ed: conservative, and a pod takes one instance anyway
		if c.RestartPolicy == "Always" {
			side[0], side[1], side[2] = side[0]+g, side[1]+cp, side[2]+m
			sg, sc, sm = sg+g, sc+cp, sm+m
			continue
		}
		ig, ic, im = max(ig, g+side[0]), max(ic, cp+side[1]), max(im, m+side[2])
	}
	g := max(sg, ig)
	if g > 1<<20 {
		t.errorf(d, path, "%d GPUs in one pod is out of range", g)
		return s, false
	}
	s.gpus, s.cpu, s.mem = int32(g), max(sc, ic), max(sm, im)
	if len(migs) > 0 {
		// Mixed-strategy MIG (NVIDIA device plugin): nvidia.com/mig-<profile>.
		// A gpusim job that shares a GPU takes exactly one instance.
		var total int64
		for _, v := range migs {
			total += v
		}
		if g > 0 || total != 1 {
			t.errorf(d, path, "a pod may ask for one MIG instance (%s<profile>: 1) and no %s: gpusim jobs take one instance", ResourceMIGPrefix, ResourceGPU)
			return s, false
		}
		for k := range migs {
			s.mig = k
		}
		s.gpus = 1
	}
	s.models = t.models(d, path, ps)
	s.prio, _ = t.priorityOf(d, sub(path, "priorityClassName"), ps.PriorityClassName, ps.Priority)
	if ps.SchedulerName != "" && ps.SchedulerName != "default-scheduler" && ps.SchedulerName != "volcano" {
		t.notef("schedulerName %q is not simulated: the scenario's policies schedule every job", ps.SchedulerName)
	}
	if !ps.Tolerations.IsZero() {
		t.notef("tolerations have no effect: simulated nodes have no taints")
	}
	if !ps.Resources.IsZero() {
		t.notef("pod-level resources are not read: GPU, CPU and memory come from the containers")
	}
	if ps.Affinity != nil && (!ps.Affinity.PodAffinity.IsZero() || !ps.Affinity.PodAntiAffinity.IsZero()) {
		t.notef("podAffinity and podAntiAffinity are not simulated")
	}
	return s, len(t.errs) == n
}

// models returns the GPU models a pod may run on (nil = any): the values of
// the GPU-model node labels (nvidia.com/gpu.product, gpusim.io/gpu-model) that
// its nodeSelector and required node affinity ask for. Other label keys are
// not simulated (gpusim nodes carry no labels other than their GPU model).
func (t *translator) models(d doc, path []string, ps *podSpec) []string {
	var sel []string // nil = any
	has := false
	for _, k := range slices.Sorted(mapKeys(ps.NodeSelector)) {
		if k == LabelGPUProduct || k == LabelGPUModel {
			v := ps.NodeSelector[k]
			if has && !slices.Contains(sel, v) {
				t.errorf(d, sub(path, "nodeSelector", k), "asks for GPU model %q and %q at once", v, sel[0])
				return nil
			}
			sel, has = []string{v}, true
			continue
		}
		t.notef("nodeSelector %q is not simulated (nodes have no such label)", k)
	}
	if ps.Affinity == nil || ps.Affinity.NodeAffinity == nil {
		return sel
	}
	na := ps.Affinity.NodeAffinity
	if !na.Preferred.IsZero() {
		t.notef("preferred node affinity is not simulated")
	}
	if na.Required == nil || len(na.Required.NodeSelectorTerms) == 0 {
		return sel
	}
	// Terms are ORed; the expressions of a term are ANDed.
	var aff []string
	anyTerm := false
	for i, term := range na.Required.NodeSelectorTerms {
		var tm []string
		constrained := false
		for j, e := range term.MatchExpressions {
			if e.Key != LabelGPUProduct && e.Key != LabelGPUModel {
				t.notef("node affinity on %q is not simulated (nodes have no such label)", e.Key)
				continue
			}
			p := sub(path, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", strconv.Itoa(i), "matchExpressions", strconv.Itoa(j))
			if e.Operator != "In" {
				t.errorf(d, sub(p, "operator"), "only In is simulated for the GPU model label, got %q", e.Operator)
				continue
			}
			if len(e.Values) == 0 {
				t.errorf(d, sub(p, "values"), "In needs at least one value")
				continue
			}
			vals := slices.Clone(e.Values)
			slices.Sort(vals)
			vals = slices.Compact(vals)
			if constrained {
				tm = intersect(tm, vals)
			} else {
				tm, constrained = vals, true
			}
		}
		if len(term.MatchFields) > 0 {
			t.notef("node affinity matchFields are not simulated")
		}
		if !constrained {
			anyTerm = true
			continue
		}
		aff = append(aff, tm...)
	}
	if anyTerm {
		return sel
	}
	slices.Sort(aff)
	aff = slices.Compact(aff)
	if has {
		aff = intersect(aff, sel)
	}
	if len(aff) == 0 {
		t.errorf(d, sub(path, "affinity"), "nodeSelector and node affinity allow no GPU model together")
		return nil
	}
	return aff
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// intersect returns the sorted values in both sorted lists.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// gang turns parts into a gang of every pod, as the Kubeflow operators' gang
// PodGroup counts them (training-operator pkg/controller.v1/common/job.go,
// ReconcileJobs: minMember := totalReplicas unless
// schedulingPolicy.minAvailable): the pods with GPUs must all ask for the same
// number (gpusim gangs are uniform); CPU-only pods (parameter servers, MPI
// launchers) are left out unless the whole job is CPU-only; CPU and memory
// per replica are the maximum over the parts kept; GPU models are the
// intersection; priority the maximum.
func (t *translator) gang(d doc, what string, parts []part) (sim.JobSpec, bool) {
	j := sim.JobSpec{GPUMilli: sim.WholeGPU}
	var kept []part
	for _, p := range parts {
		if p.count > 0 && p.shape.gpus > 0 {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		for _, p := range parts {
			if p.count > 0 {
				kept = append(kept, p)
			}
		}
	} else if len(kept) < len(parts) {
		for _, p := range parts {
			if p.count > 0 && p.shape.gpus == 0 {
				t.notef("CPU-only pods of GPU gangs (parameter servers, launchers) are not simulated")
			}
		}
	}
	if len(kept) == 0 {
		t.errs = append(t.errs, &Error{File: d.file, Line: d.root.Line, Msg: what + ": no pods (every replica count is 0)"})
		return j, false
	}
	var total int64
	first := kept[0]
	anyModel := true
	var models []string
	for _, p := range kept {
		if p.shape.mig != first.shape.mig {
			t.errs = append(t.errs, &Error{File: d.file, Line: d.root.Line, Msg: fmt.Sprintf("%s: %s and %s ask for different MIG instances (%q, %q): gpusim gangs need the same GPUs in every pod", what, first.where, p.where, first.shape.mig, p.shape.mig)})
			return j, false
		}
		if p.shape.gpus != first.shape.gpus {
			t.errs = append(t.errs, &Error{File: d.file, Line: d.root.Line, Msg: fmt.Sprintf("%s: %s asks for %d GPUs per pod and %s for %d: gpusim gangs need the same GPUs in every pod", what, first.where, first.shape.gpus, p.where, p.shape.gpus)})
			return j, false
		}
		total += int64(p.count)
		j.CPUMilli = max(j.CPUMilli, p.shape.cpu)
		j.MemoryMiB = max(j.MemoryMiB, p.shape.mem)
		if p.shape.models != nil {
			if anyModel {
				models, anyModel = p.shape.models, false
			} else {
				models = intersect(models, p.shape.models)
			}
		}
	}
	if !anyModel && len(models) == 0 {
		t.errs = append(t.errs, &Error{File: d.file, Line: d.root.Line, Msg: what + ": the pods allow no common GPU model"})
		return j, false
	}
	if total > 1<<24 {
		t.errs = append(t.errs, &Error{File: d.file, Line: d.root.Line, Msg: fmt.Sprintf("%s: %d pods is out of range", what, total)})
		return j, false
	}
	// Negative priorities are legal: the maximum over the parts kept.
	j.Priority = first.shape.prio
	for _, p := range kept[1:] {
		j.Priority = max(j.Priority, p.shape.prio)
	}
	j.Replicas, j.GPUsPerReplica = int32(total), first.shape.gpus
	if first.shape.mig != "" {
		if total != 1 {
			t.errs = append(t.errs, &Error{File: d.file, Line: d.root.Line, Msg: fmt.Sprintf("%s: %d pods on MIG instances: a gpusim job on a MIG instance is one pod", what, total)})
			return j, false
		}
		j.Sharing, j.MIGProfile = sim.AcceptMIG, first.shape.mig
	}
	j.GPUModels = models
	return j, true
}

// translate turns the decoded objects into drafts.
func (t *translator) translate() {
	groups := map[string]*podGroup{}
	for _, g := range t.groups {
		groups[ns(&g.obj.Metadata)+"/"+g.obj.Metadata.Name] = g
	}
	// memberOf returns the PodGroup a pod template joins (nil if none).
	memberOf := func(d doc, path []string, owner, pod *objectMeta) (*podGroup, bool) {
		name, key := pod.Labels[LabelPodGroup], LabelPodGroup
		if name == "" {
			name, key = pod.Labels[LabelPodGroupOld], LabelPodGroupOld
		}
		field := "labels"
		if name == "" {
			name, key, field = pod.Annotations[AnnVolcanoGroup], AnnVolcanoGroup, "annotations"
		}
		if name == "" {
			return nil, true
		}
		g := groups[ns(owner)+"/"+name]
		if g == nil {
			t.errorf(d, sub(path, field, key), "no PodGroup %q in namespace %q", name, ns(owner))
			return nil, false
		}
		for _, a := range []string{AnnSubmit, AnnDuration} {
			if _, ok := owner.Annotations[a]; ok {
				t.errorf(d, []string{"metadata", "annotations", a}, "a member of PodGroup %q: set the schedule on the PodGroup", name)
				return nil, false
			}
		}
		return g, true
	}
	for _, p := range t.pods {
		path := []string{"spec"}
		s, ok := t.podShape(p.doc, path, &p.obj.Spec)
		if !ok {
			continue
		}
		g, ok := memberOf(p.doc, []string{"metadata"}, &p.obj.Metadata, &p.obj.Metadata)
		if !ok {
			continue
		}
		pt := part{where: "Pod " + nsName(&p.obj.Metadata), count: 1, shape: s}
		if g != nil {
			g.members = append(g.members, pt)
			continue
		}
		j, ok := t.gang(p.doc, "Pod "+nsName(&p.obj.Metadata), []part{pt})
		if ok {
			t.add(p.doc, &p.obj.Metadata, j, sim.ClassUnknown, "", 0, "")
		}
	}
	for _, b := range t.jobsK8s {
		t.batchJob(b, memberOf)
	}
	for _, g := range t.groups {
		t.podGroupJob(g)
	}
	for _, k := range t.kubeflow {
		t.kubeflowJob(k)
	}
	for _, s := range t.jobSets {
		t.jobSet(s)
	}
}

// ns is the object's namespace ("default" when empty).
func ns(m *objectMeta) string {
	if m.Namespace == "" {
		return "default"
	}
	return m.Namespace
}

// jobPods is the number of pods a batch/v1 Job runs at once and the number
// of waves it takes: parallelism (default 1) capped by completions; with
// completions > parallelism the pods run in ceil(completions/parallelism)
// waves.
func (t *translator) jobPods(d doc, path []string, s *batchJobSpec) (pods, waves int32, ok bool) {
	par := int32(1)
	if s.Parallelism != nil {
		par = *s.Parallelism
	}
	if par < 0 {
		t.errorf(d, sub(path, "parallelism"), "must be >= 0, got %d", par)
		return 0, 0, false
	}
	comp := par
	if s.Completions != nil {
		comp = *s.Completions
		if comp < 0 {
			t.errorf(d, sub(path, "completions"), "must be >= 0, got %d", comp)
			return 0, 0, false
		}
	}
	switch s.CompletionMode {
	case "", "NonIndexed", "Indexed":
	default:
		t.errorf(d, sub(path, "completionMode"), "must be NonIndexed or Indexed, got %q", s.CompletionMode)
		return 0, 0, false
	}
	if s.CompletionMode == "Indexed" && s.Completions == nil {
		t.errorf(d, sub(path, "completions"), "required with completionMode Indexed")
		return 0, 0, false
	}
	pods = min(par, comp)
	if pods == 0 {
		t.errorf(d, sub(path, "parallelism"), "the Job runs no pods (parallelism or completions is 0)")
		return 0, 0, false
	}
	waves = (comp + pods - 1) / pods
	if waves > 1 {
		t.notef("Jobs with completions > parallelism run as one gang for ceil(completions/parallelism) x the duration")
	}
	return pods, waves, true
}

func (t *translator) batchJob(b decoded[batchJobSpec], memberOf func(doc, []string, *objectMeta, *objectMeta) (*podGroup, bool)) {
	d, s := b.doc, &b.obj.Spec
	pods, waves, ok := t.jobPods(d, []string{"spec"}, s)
	if !ok {
		return
	}
	sh, ok := t.podShape(d, []string{"spec", "template", "spec"}, &s.Template.Spec)
	if !ok {
		return
	}
	g, ok := memberOf(d, []string{"spec", "template", "metadata"}, &b.obj.Metadata, &s.Template.Metadata)
	if !ok {
		return
	}
	name := nsName(&b.obj.Metadata)
	if g != nil {
		if waves > 1 {
			t.errorf(d, []string{"spec", "completions"}, "a member of PodGroup %q must have completions <= parallelism", g.obj.Metadata.Name)
			return
		}
		g.members = append(g.members, part{where: "Job " + name, count: pods, shape: sh})
		return
	}
	var wall sim.Duration
	if s.ActiveDeadlineSeconds != nil {
		wall = t.deadline(d, []string{"spec", "activeDeadlineSeconds"}, *s.ActiveDeadlineSeconds)
	}
	if s.CompletionMode == "Indexed" || pods == 1 {
		// An Indexed Job's pods run together (each index is a rank): one gang.
		j, ok := t.gang(d, "Job "+name, []part{{where: "spec.template", count: pods, shape: sh}})
		if ok {
			t.add(d, &b.obj.Metadata, j, sim.ClassUnknown, "", wall, "").waves = waves
		}
		return
	}
	// A NonIndexed Job's pods are independent: one job per pod.
	if pods > maxPodJobs {
		t.errorf(d, []string{"spec", "parallelism"}, "a NonIndexed Job becomes one job per pod: at most %d, got %d", maxPodJobs, pods)
		return
	}
	t.notef("NonIndexed Jobs with parallelism > 1 become one job per pod (<name>-0, <name>-1, ...)")
	for i := range pods {
		j, ok := t.gang(d, "Job "+name, []part{{where: "spec.template", count: 1, shape: sh}})
		if !ok {
			return
		}
		t.add(d, &b.obj.Metadata, j, sim.ClassUnknown, name+"-"+strconv.Itoa(int(i)), wall, "").waves = waves
	}
}

func (t *translator) deadline(d doc, path []string, s int64) sim.Duration {
	if s <= 0 || s > 1e12 {
		t.errorf(d, path, "must be in 1..1e12 seconds, got %d", s)
		return 0
	}
	return sim.Seconds(float64(s))
}

func (t *translator) podGroupJob(g *podGroup) {
	d, o := g.doc, g.obj
	name := "PodGroup " + nsName(&o.Metadata)
	if len(g.members) == 0 {
		t.errorf(d, []string{"metadata", "name"}, "%s: no Pod or Job joins it (label %s or annotation %s)", name, LabelPodGroup, AnnVolcanoGroup)
		return
	}
	j, ok := t.gang(d, name, g.members)
	if !ok {
		return
	}
	if o.Spec.MinMember != nil {
		if m := *o.Spec.MinMember; m > j.Replicas || m < 0 {
			t.errorf(d, []string{"spec", "minMember"}, "must be in 0..%d (the member pods with GPUs), got %d", j.Replicas, m)
			return
		} else if m < j.Replicas {
			t.notef("a PodGroup minMember below its pod count is simulated as a gang of all pods")
		}
	}
	if o.Spec.PriorityClassName != "" {
		p, ok := t.priorityOf(d, []string{"spec", "priorityClassName"}, o.Spec.PriorityClassName, nil)
		if !ok {
			return
		}
		j.Priority = p
	}
	t.add(d, &o.Metadata, j, sim.ClassUnknown, "", 0, o.Spec.Queue)
}

func (t *translator) kubeflowJob(k kubeflowJob) {
	d := k.doc
	what := nsName(k.meta)
	if len(k.replicas) == 0 {
		t.errorf(d, []string{"spec", k.field}, "required")
		return
	}
	var parts []part
	for _, typ := range slices.Sorted(func(yield func(string) bool) {
		for ty := range k.replicas {
			if !yield(ty) {
				return
			}
		}
	}) {
		path := []string{"spec", k.field, typ}
		if !slices.Contains(k.types, typ) {
			t.errorf(d, path, "unknown replica type %q (want %s)", typ, strings.Join(k.types, ", "))
			continue
		}
		r := k.replicas[typ]
		if r == nil {
			t.errorf(d, path, "must be a mapping with replicas and template")
			continue
		}
		n := int32(1) // training-operator setDefaultReplicas
		if r.Replicas != nil {
			n = *r.Replicas
		}
		if n < 0 {
			t.errorf(d, sub(path, "replicas"), "must be >= 0, got %d", n)
			continue
		}
		sh, ok := t.podShape(d, sub(path, "template", "spec"), &r.Template.Spec)
		if !ok {
			continue
		}
		parts = append(parts, part{where: joinPath(path), count: n, shape: sh})
	}
	if len(t.errs) > 0 {
		return
	}
	j, ok := t.gang(d, what, parts)
	if !ok {
		return
	}
	var wall sim.Duration
	if k.run.ActiveDeadlineSeconds != nil {
		wall = t.deadline(d, []string{"spec", "runPolicy", "activeDeadlineSeconds"}, *k.run.ActiveDeadlineSeconds)
	}
	queue := ""
	if sp := k.run.SchedulingPolicy; sp != nil {
		queue = sp.Queue
		if sp.PriorityClass != "" {
			p, ok := t.priorityOf(d, []string{"spec", "runPolicy", "schedulingPolicy", "priorityClass"}, sp.PriorityClass, nil)
			if !ok {
				return
			}
			j.Priority = p
		}
		if sp.MinAvailable != nil {
			if m := *sp.MinAvailable; m < 0 || m > j.Replicas {
				t.errorf(d, []string{"spec", "runPolicy", "schedulingPolicy", "minAvailable"}, "must be in 0..%d (the pods with GPUs), got %d", j.Replicas, m)
				return
			} else if m < j.Replicas {
				t.notef("a minAvailable below the pod count is simulated as a gang of all pods")
			}
		}
	}
	t.add(d, k.meta, j, sim.ClassTraining, "", wall, queue)
}

func (t *translator) jobSet(s decoded[jobSetSpec]) {
	d := s.doc
	if len(s.obj.Spec.ReplicatedJobs) == 0 {
		t.errorf(d, []string{"spec", "replicatedJobs"}, "required")
		return
	}
	var parts []part
	names := map[string]bool{}
	ok := true
	for i := range s.obj.Spec.ReplicatedJobs {
		rj := &s.obj.Spec.ReplicatedJobs[i]
		path := []string{"spec", "replicatedJobs", strconv.Itoa(i)}
		if rj.Name == "" || names[rj.Name] {
			t.errorf(d, sub(path, "name"), "required and unique, got %q", rj.Name)
			ok = false
			continue
		}
		names[rj.Name] = true
		n := int32(1)
		if rj.Replicas != nil {
			n = *rj.Replicas
		}
		if n < 0 {
			t.errorf(d, sub(path, "replicas"), "must be >= 0, got %d", n)
			ok = false
			continue
		}
		pods, waves, pok := t.jobPods(d, sub(path, "template", "spec"), &rj.Template.Spec)
		sh, sok := t.podShape(d, sub(path, "template", "spec", "template", "spec"), &rj.Template.Spec.Template.Spec)
		if !pok || !sok {
			ok = false
			continue
		}
		if waves > 1 {
			t.errorf(d, sub(path, "template", "spec", "completions"), "a JobSet's Jobs must have completions <= parallelism (gpusim runs the JobSet as one gang)")
			ok = false
			continue
		}
		if int64(n)*int64(pods) > 1<<24 {
			t.errorf(d, sub(path, "replicas"), "%d x %d pods is out of range", n, pods)
			ok = false
			continue
		}
		parts = append(parts, part{where: joinPath(path), count: n * pods, shape: sh})
	}
	if !ok {
		return
	}
	j, ok := t.gang(d, "JobSet "+nsName(&s.obj.Metadata), parts)
	if ok {
		t.add(d, &s.obj.Metadata, j, sim.ClassTraining, "", 0, "")
	}
}

// add records a draft job from the object with metadata m: id (the object's
// name unless given), queue from the Kueue label, class and user from the
// gpusim.io annotations.
func (t *translator) add(d doc, m *objectMeta, j sim.JobSpec, class sim.JobClass, id string, wall sim.Duration, queue string) *draft {
	src := nsName(m)
	if id == "" {
		id = src
	}
	j.ID = sim.JobID(id)
	j.Class = class
	j.Walltime = wall
	if m.Namespace != "" {
		j.Team = m.Namespace
	}
	if c, ok := m.Annotations[AnnClass]; ok {
		cl, err := sim.ParseClass(c)
		if err != nil || c == "" {
			t.errorf(d, []string{"metadata", "annotations", AnnClass}, "unknown job class %q (want one of %s)", c, classNames())
		} else {
			j.Class = cl
		}
	}
	j.User = m.Annotations[AnnUser]
	j.Queue = m.Labels[LabelKueueQueue]
	if j.Queue == "" {
		j.Queue = queue
	}
	dr := &draft{spec: j, src: src, doc: d, meta: m}
	t.drafts = append(t.drafts, dr)
	t.bySrc[src] = append(t.bySrc[src], dr)
	return dr
}

func classNames() string {
	s := make([]string, len(sim.Classes))
	for i, c := range sim.Classes {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

// parseTime reads a schedule value: decimal seconds or a Go duration.
func parseTime(s string) (sim.Duration, error) {
	s = strings.TrimSpace(s)
	var sec float64
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		sec = v
	} else if dd, derr := time.ParseDuration(s); derr == nil {
		sec = dd.Seconds()
	} else {
		return 0, fmt.Errorf("want seconds or a duration such as 90s or 2h, got %q", s)
	}
	if math.IsNaN(sec) || sec < 0 || sec > 1e12 {
		return 0, fmt.Errorf("must be in 0..1e12 seconds, got %q", s)
	}
	return sim.Seconds(sec), nil
}

// finish applies the annotations' schedule to drafts that have none from the
// schedule file, checks every job and sorts them.
func (t *translator) finish() {
	ids := map[sim.JobID]*draft{}
	for _, dr := range t.drafts {
		if prev, dup := ids[dr.spec.ID]; dup {
			t.errs = append(t.errs, &Error{File: dr.doc.file, Line: dr.doc.root.Line, Msg: fmt.Sprintf("job ID %q is also produced by %s:%d", dr.spec.ID, prev.doc.file, prev.doc.root.Line)})
			continue
		}
		ids[dr.spec.ID] = dr
		for _, a := range []string{AnnSubmit, AnnDuration} {
			v, ok := dr.meta.Annotations[a]
			if !ok {
				continue
			}
			path := []string{"metadata", "annotations", a}
			if (a == AnnSubmit && dr.hasSubmit) || (a == AnnDuration && dr.hasDuration) {
				t.errorf(dr.doc, path, "also given in %s: give the schedule once", ScheduleFile)
				continue
			}
			x, err := parseTime(v)
			if err != nil {
				t.errorf(dr.doc, path, "%v", err)
				continue
			}
			if a == AnnSubmit {
				dr.spec.Submit, dr.hasSubmit = sim.Time(x), true
			} else {
				dr.spec.Duration, dr.hasDuration = x, true
			}
		}
		if !dr.hasDuration {
			t.errorf(dr.doc, []string{"metadata", "name"}, "%q has no duration: set the %s annotation or a %s row", dr.src, AnnDuration, ScheduleFile)
			continue
		}
		if dr.waves > 1 {
			if dr.spec.Duration.Seconds()*float64(dr.waves) > 1e12 {
				t.errorf(dr.doc, []string{"spec", "completions"}, "%d waves of %v exceed 1e12 seconds", dr.waves, dr.spec.Duration)
				continue
			}
			dr.spec.Duration *= sim.Duration(dr.waves)
		}
		if err := dr.spec.Validate(); err != nil {
			t.errs = append(t.errs, &Error{File: dr.doc.file, Line: dr.doc.root.Line, Msg: fmt.Sprintf("job %q: %v", dr.spec.ID, err)})
			continue
		}
		t.jobs = append(t.jobs, dr.spec)
	}
	sort.Slice(t.jobs, func(a, b int) bool {
		if t.jobs[a].Submit != t.jobs[b].Submit {
			return t.jobs[a].Submit < t.jobs[b].Submit
		}
		return t.jobs[a].ID < t.jobs[b].ID
	})
}
