package kueue

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// Preflight checks what Kueue checks when each job arrives (Observe, EvArrive):
// that the job's queue resolves to a LocalQueue (localQueue). Unlike the run,
// which stops at the first such job when it arrives, it looks at every job of
// the run and reports each unmatched queue once, with how many jobs use it.
func (k *Kueue) Preflight(v *sim.View) error {
	type miss struct {
		first sim.JobID
		n     int
	}
	bad := map[string]*miss{}
	for r := range v.NumJobs() {
		j := v.Job(sim.JobRef(r))
		if _, err := k.localQueue(j); err != nil {
			m := bad[j.Spec.Queue]
			if m == nil {
				m = &miss{first: j.Spec.ID}
				bad[j.Spec.Queue] = m
			}
			m.n++
		}
	}
	var errs []error
	known := strings.Join(slices.Sorted(maps.Keys(k.m.LocalQueues)), ", ")
	for _, q := range slices.Sorted(maps.Keys(bad)) {
		m := bad[q]
		errs = append(errs, &policies.ConfigError{Err: fmt.Errorf("queue %q of %d job(s) (first: %s) matches no LocalQueue (known: %s); set queueMapping", q, m.n, m.first, known)})
	}
	return errors.Join(errs...)
}
