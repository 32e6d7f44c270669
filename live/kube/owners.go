package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func labelsEverything() labels.Selector { return labels.Everything() }

// Workload resources whose pods form a gang of every replica.
var ownerGVRs = map[string]schema.GroupVersionResource{
	"TFJob":      {Group: "kubeflow.org", Version: "v1", Resource: "tfjobs"},
	"PyTorchJob": {Group: "kubeflow.org", Version: "v1", Resource: "pytorchjobs"},
	"MPIJob":     {Group: "kubeflow.org", Version: "v2beta1", Resource: "mpijobs"},
	"JobSet":     {Group: "jobset.x-k8s.io", Version: "v1alpha2", Resource: "jobsets"},
}

// replicaFields are the replica-spec maps of the Kubeflow kinds.
var replicaFields = map[string]string{"TFJob": "tfReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}

// ownerPods returns the number of pods g's workload object runs at once:
// every replica of a TFJob/PyTorchJob/MPIJob (as training-operator's gang
// PodGroup counts them: pkg/controller.v1/common/job.go ReconcileJobs,
// minMember = total replicas), replicas x parallelism of every replicated
// Job of a JobSet, and min(parallelism, completions) of an indexed Job.
func (s *scheduler) ownerPods(ctx context.Context, g *gang) (int, error) {
	if g.kind == gangIndexed {
		j, err := s.opt.Client.BatchV1().Jobs(g.ns).Get(ctx, g.name, metav1.GetOptions{})
		if err != nil {
			return 0, err
		}
		par := int32(1)
		if j.Spec.Parallelism != nil {
			par = *j.Spec.Parallelism
		}
		if j.Spec.Completions != nil && *j.Spec.Completions < par {
			par = *j.Spec.Completions
		}
		return int(max(par, 0)), nil
	}
	kind := ""
	if g.kind == gangJobSet {
		kind = "JobSet"
	} else {
		for _, p := range g.pods {
			if k := ownerKind(p); k != "" {
				kind = k
				break
			}
		}
	}
	gvr, ok := ownerGVRs[kind]
	if !ok || s.opt.Dynamic == nil {
		return 0, nil
	}
	u, err := s.opt.Dynamic.Resource(gvr).Namespace(g.ns).Get(ctx, g.name, metav1.GetOptions{})
	if err != nil {
		return 0, err
	}
	return countReplicas(kind, u)
}

// ownerKind is the Kubeflow kind among a pod's owner references ("" if none).
func ownerKind(p *corev1.Pod) string {
	for _, o := range p.OwnerReferences {
		if _, ok := replicaFields[o.Kind]; ok {
			return o.Kind
		}
	}
	return ""
}

// countReplicas sums the replicas of a Kubeflow job or JobSet object.
func countReplicas(kind string, u *unstructured.Unstructured) (int, error) {
	total := int64(0)
	if f, ok := replicaFields[kind]; ok {
		specs, _, err := unstructured.NestedMap(u.Object, "spec", f)
		if err != nil {
			return 0, fmt.Errorf("%s %s: spec.%s: %w", kind, u.GetName(), f, err)
		}
		for _, v := range specs {
			m, _ := v.(map[string]any)
			n, found, _ := unstructured.NestedInt64(m, "replicas")
			if !found {
				n = 1
			}
			total += max(n, 0)
		}
		return int(min(total, 1<<20)), nil
	}
	jobs, _, err := unstructured.NestedSlice(u.Object, "spec", "replicatedJobs")
	if err != nil {
		return 0, fmt.Errorf("JobSet %s: spec.replicatedJobs: %w", u.GetName(), err)
	}
	for _, v := range jobs {
		m, _ := v.(map[string]any)
		r, found, _ := unstructured.NestedInt64(m, "replicas")
		if !found {
			r = 1
		}
		par, found, _ := unstructured.NestedInt64(m, "template", "spec", "parallelism")
		if !found {
			par = 1
		}
		if c, found, _ := unstructured.NestedInt64(m, "template", "spec", "completions"); found && c < par {
			par = c
		}
		total += max(r, 0) * max(par, 0)
	}
	return int(min(total, 1<<20)), nil
}
