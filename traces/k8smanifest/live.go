package k8smanifest

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// PodsJob translates the pods of one gang observed on a live API server
// (package live/kube) into one job spec, by the rules the manifests follow:
// each pod's needs by podShape (containers, init containers, sidecars, MIG
// instances; GPUs must be whole), the gang by gang (every GPU pod asks for
// the same GPUs; CPU-only members are left out of a GPU gang; priority is the
// maximum). pods are Pod objects as YAML or JSON (JSON is YAML), one per
// File; a pod's priority is its spec.priority (the API server's Priority
// admission resolves priorityClassName into it), so priorityClassName must be
// empty. The spec's ID is id, Queue the Kueue queue-name label of the first
// pod, Team its namespace, Class and User its gpusim.io annotations, Duration
// its gpusim.io/duration annotation (0 when absent: unknown). Submit is 0
// (the caller sets it). Errors are *Error values joined.
func PodsJob(id string, pods []File) (sim.JobSpec, []string, error) {
	if len(pods) == 0 {
		return sim.JobSpec{}, nil, errors.New("no pods")
	}
	t := newTranslator()
	for _, f := range pods {
		t.readFile(f)
	}
	if len(t.errs) == 0 && (len(t.pods) != len(pods) || len(t.jobsK8s)+len(t.groups)+len(t.kubeflow)+len(t.jobSets) > 0) {
		return sim.JobSpec{}, nil, fmt.Errorf("%s: want %d Pod objects, got %d", pods[0].Name, len(pods), len(t.pods))
	}
	if len(t.errs) > 0 {
		return sim.JobSpec{}, nil, t.err()
	}
	parts := make([]part, 0, len(t.pods))
	for _, p := range t.pods {
		if p.obj.Spec.PriorityClassName != "" {
			t.errorf(p.doc, []string{"spec", "priorityClassName"}, "resolve it into spec.priority first")
			continue
		}
		s, ok := t.podShape(p.doc, []string{"spec"}, &p.obj.Spec)
		if ok {
			parts = append(parts, part{where: "Pod " + nsName(&p.obj.Metadata), count: 1, shape: s})
		}
	}
	if len(t.errs) > 0 {
		return sim.JobSpec{}, nil, t.err()
	}
	first := t.pods[0]
	j, ok := t.gang(first.doc, "gang "+id, parts)
	if !ok {
		return sim.JobSpec{}, nil, t.err()
	}
	dr := t.add(first.doc, &first.obj.Metadata, j, sim.ClassUnknown, id, 0, "")
	if v, ok := first.obj.Metadata.Annotations[AnnDuration]; ok {
		d, err := parseTime(v)
		if err != nil {
			t.errorf(first.doc, []string{"metadata", "annotations", AnnDuration}, "%v", err)
		} else {
			dr.spec.Duration = d
		}
	}
	if len(t.errs) > 0 {
		return sim.JobSpec{}, nil, t.err()
	}
	notes := slices.Sorted(func(yield func(string) bool) {
		for n := range t.notes {
			if !yield(n) {
				return
			}
		}
	})
	return dr.spec, notes, nil
}
