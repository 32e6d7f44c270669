package kube

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces/k8smanifest"
)

// Labels and annotations that make a pod a member of a gang.
const (
	LabelKubeflowJob    = "training.kubeflow.org/job-name"           // training-operator (TFJob, PyTorchJob) and mpi-operator v2 pods
	LabelJobSet         = "jobset.sigs.k8s.io/jobset-name"           // JobSet pods
	LabelJobName        = "batch.kubernetes.io/job-name"             // batch/v1 Job pods (v1.27+)
	LabelJobNameOld     = "job-name"                                 // its legacy label
	LabelJobIndex       = "batch.kubernetes.io/job-completion-index" // indexed Job pods
	AnnotationGPUs      = "gpusim.io/gpus"                           // the pod's GPU indexes on its node, "0,1,2"
	AnnotationPlacement = "gpusim.io/placement"                      // the gang's placement, "node:0,1;node2:0,1" in replica order
	AnnotationDuration  = k8smanifest.AnnDuration
	// maxAnnotation bounds the gpusim.io annotations read (longer ones are malformed).
	maxAnnotation = 4096
)

// gangKind is where a gang's membership comes from.
type gangKind uint8

const (
	gangPod      gangKind = iota // a single pod
	gangPodGroup                 // scheduler-plugins PodGroup (minMember)
	gangVolcano                  // Volcano PodGroup (minMember)
	gangKubeflow                 // TFJob / PyTorchJob / MPIJob (every replica)
	gangJobSet                   // JobSet (every pod)
	gangIndexed                  // indexed batch/v1 Job (parallelism)
)

var gangKindNames = [...]string{"pod", "podgroup", "volcano", "kubeflow", "jobset", "indexed-job"}

func (k gangKind) String() string { return gangKindNames[k] }

// gangOf returns the gang a pod belongs to: its kind and name (the pod's
// own name for a single pod). PodGroup labels win over the workload labels
// (the training-operator and JobSet label their pods and, with gang
// scheduling on, also create a PodGroup).
func gangOf(p *corev1.Pod) (gangKind, string) {
	if n := p.Labels[k8smanifest.LabelPodGroup]; n != "" {
		return gangPodGroup, n
	}
	if n := p.Labels[k8smanifest.LabelPodGroupOld]; n != "" {
		return gangPodGroup, n
	}
	if n := p.Annotations[k8smanifest.AnnVolcanoGroup]; n != "" {
		return gangVolcano, n
	}
	if n := p.Labels[LabelKubeflowJob]; n != "" {
		return gangKubeflow, n
	}
	if n := p.Labels[LabelJobSet]; n != "" {
		return gangJobSet, n
	}
	if _, ok := p.Labels[LabelJobIndex]; ok {
		n := p.Labels[LabelJobName]
		if n == "" {
			n = p.Labels[LabelJobNameOld]
		}
		if n != "" {
			return gangIndexed, n
		}
	}
	return gangPod, p.Name
}

// gangKey identifies a gang: namespace, kind and name.
func gangKey(ns string, k gangKind, name string) string {
	return ns + "/" + k.String() + "/" + name
}

// jobID names a gang's job as manifests name it: "name", or
// "namespace/name" outside the default namespace.
func jobID(ns, name string) sim.JobID {
	if ns == "" || ns == "default" {
		return sim.JobID(name)
	}
	return sim.JobID(ns + "/" + name)
}

// gang is one job's pods as observed.
type gang struct {
	key   string
	kind  gangKind
	ns    string
	name  string
	id    sim.JobID
	gen   int                    // generation: the job of a gang that ended and got new pods is id~gen
	pods  map[string]*corev1.Pod // by name: the latest copy seen
	first time.Time              // first pod seen (incomplete-gang timeout)
	last  time.Time              // last pod of the gang seen pending (bind latency)

	submitted   bool
	ref         sim.JobRef
	replicas    []string // GPU pods in replica order (at submit)
	helpers     []string // CPU-only members of a GPU gang (bound with replica 0)
	running     bool
	done        bool
	skipped     bool
	reason      sim.Reason
	reasonAt    time.Time
	broken      bool // found bound at start but not adoptable: its start is refused
	rollbacks   int
	rollingBack bool // Interrupt after a failed bind: Stop evicts nothing
	evicted     bool // the pods were evicted for a preemption: new pods join the requeued job
}

// sortedPods returns the gang's pods sorted by completion index (indexed
// Jobs), then name.
func (g *gang) sortedPods() []*corev1.Pod {
	out := make([]*corev1.Pod, 0, len(g.pods))
	for _, p := range g.pods {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int {
		ia, ea := strconv.Atoi(a.Labels[LabelJobIndex])
		ib, eb := strconv.Atoi(b.Labels[LabelJobIndex])
		if ea == nil && eb == nil && ia != ib {
			return ia - ib
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// podGPUs returns the nvidia.com/gpu limit of a pod's containers (summed;
// init containers by the KEP-753 rule are left to the translation): used
// only to tell GPU replicas from CPU-only helpers.
func podGPUs(p *corev1.Pod) int64 {
	var n int64
	for i := range p.Spec.Containers {
		if q, ok := p.Spec.Containers[i].Resources.Limits[ResourceGPU]; ok {
			n += q.Value()
		}
	}
	for i := range p.Spec.InitContainers {
		if q, ok := p.Spec.InitContainers[i].Resources.Limits[ResourceGPU]; ok {
			n = max(n, q.Value())
		}
	}
	return n
}

// translate turns the gang's pods into a job spec with k8smanifest.PodsJob
// (the manifests' rules), then sets what only the live cluster knows: the
// eligible node classes (GPUModels) and the duration default.
func translate(m *clusterModel, id sim.JobID, pods []*corev1.Pod, prio func(*corev1.Pod) (int32, error), defDur sim.Duration) (sim.JobSpec, []string, error) {
	files := make([]k8smanifest.File, len(pods))
	for i, p := range pods {
		b, err := minimalPodJSON(p, prio)
		if err != nil {
			return sim.JobSpec{}, nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		files[i] = k8smanifest.File{Name: "pod " + p.Namespace + "/" + p.Name, Data: b}
	}
	spec, notes, err := k8smanifest.PodsJob(string(id), files)
	if err != nil {
		return spec, nil, err
	}
	if q := spec.Queue; q != "" && !strings.Contains(q, "/") && pods[0].Namespace != "" && pods[0].Namespace != "default" {
		spec.Queue = pods[0].Namespace + "/" + q // a LocalQueue lives in the pod's namespace
	}
	if _, ok := pods[0].Annotations[AnnotationDuration]; !ok {
		spec.Duration = defDur
	}
	// Eligibility: the classes every GPU pod of the gang may use.
	allowed, all := []string(nil), true
	for _, p := range pods {
		models, any, split := m.eligible(&p.Spec)
		if split != "" {
			notes = append(notes, fmt.Sprintf("pod %s/%s: its node selector matches only part of node class %q, which is left out (add the label key to --class-labels)", p.Namespace, p.Name, split))
		}
		if any {
			continue
		}
		if all {
			allowed, all = models, false
		} else {
			allowed = intersectSorted(allowed, models)
		}
	}
	if !all {
		if len(allowed) == 0 {
			return spec, notes, fmt.Errorf("no node is eligible (node selector, node affinity, taints and tolerations)")
		}
		spec.GPUModels = allowed
	} else {
		spec.GPUModels = nil
	}
	return spec, notes, nil
}

func intersectSorted(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); ok {
			out = append(out, x)
		}
	}
	return out
}

// minimalPodJSON is the part of a pod the translation reads: name,
// namespace, the Kueue queue label, the gpusim.io annotations (bounded),
// container and init-container resources, and the resolved priority.
// Selectors, affinity and tolerations are matched against the real nodes
// here (eligible), not by the manifests' GPU-model rule.
func minimalPodJSON(p *corev1.Pod, prio func(*corev1.Pod) (int32, error)) ([]byte, error) {
	type ctr struct {
		Name          string                         `json:"name"`
		Resources     corev1.ResourceRequirements    `json:"resources"`
		RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
	}
	type spec struct {
		Containers     []ctr  `json:"containers"`
		InitContainers []ctr  `json:"initContainers,omitempty"`
		Priority       *int32 `json:"priority,omitempty"`
	}
	type pod struct {
		APIVersion string            `json:"apiVersion"`
		Kind       string            `json:"kind"`
		Metadata   metav1.ObjectMeta `json:"metadata"`
		Spec       spec              `json:"spec"`
	}
	out := pod{APIVersion: "v1", Kind: "Pod"}
	out.Metadata.Name, out.Metadata.Namespace = p.Name, p.Namespace
	if q := p.Labels[k8smanifest.LabelKueueQueue]; q != "" {
		out.Metadata.Labels = map[string]string{k8smanifest.LabelKueueQueue: q}
	}
	for _, k := range []string{k8smanifest.AnnDuration, k8smanifest.AnnClass, k8smanifest.AnnUser} {
		v, ok := p.Annotations[k]
		if !ok {
			continue
		}
		if len(v) > maxAnnotation {
			return nil, fmt.Errorf("annotation %s: %d bytes (at most %d)", k, len(v), maxAnnotation)
		}
		if out.Metadata.Annotations == nil {
			out.Metadata.Annotations = map[string]string{}
		}
		out.Metadata.Annotations[k] = v
	}
	for _, c := range p.Spec.Containers {
		out.Spec.Containers = append(out.Spec.Containers, ctr{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range p.Spec.InitContainers {
		out.Spec.InitContainers = append(out.Spec.InitContainers, ctr{Name: c.Name, Resources: c.Resources, RestartPolicy: c.RestartPolicy})
	}
	v, err := prio(p)
	if err != nil {
		return nil, err
	}
	out.Spec.Priority = &v
	return json.Marshal(out)
}
