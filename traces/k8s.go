package traces

import (
	"errors"

	"github.com/gpusim/gpusim/traces/k8smanifest"
)

// FormatK8s is a directory (or one multi-document YAML file) of Kubernetes
// manifests with an arrival schedule (docs/k8s-manifests.md).
const FormatK8s = "k8s"

func init() {
	registerJobs(FormatK8s, "Kubernetes manifests: a directory or multi-document YAML of Job, Pod, PodGroup, TFJob, PyTorchJob, MPIJob, JobSet, PriorityClass; schedule from gpusim.io/submit-time and gpusim.io/duration annotations or schedule.csv", openK8s)
}

// openK8s translates the manifests at path with k8smanifest.Load. Each problem
// becomes a *RowError (so callers treat it as bad input); the report counts
// one row per job and carries the translation's notes.
func openK8s(path string, _ ReadOptions) (JobReader, error) {
	res, err := k8smanifest.Load(path)
	if err != nil {
		return nil, k8sRowErrors(err)
	}
	r := &sliceReader{jobs: res.Jobs, rep: newReport(path, FormatK8s)}
	r.rep.Notes = append(r.rep.Notes, res.Notes...)
	return r, nil
}

// k8sRowErrors rewraps every *k8smanifest.Error of err as a *RowError.
func k8sRowErrors(err error) error {
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	out := make([]error, 0, len(list))
	for _, e := range list {
		var ke *k8smanifest.Error
		if errors.As(e, &ke) {
			msg := ke.Msg
			if ke.Path != "" {
				msg = ke.Path + ": " + msg
			}
			out = append(out, &RowError{File: ke.File, Line: ke.Line, Err: errors.New(msg)})
			continue
		}
		out = append(out, e)
	}
	return errors.Join(out...)
}
