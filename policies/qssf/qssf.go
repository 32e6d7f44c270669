// Package qssf is Helios's Quasi-Shortest-Service-First scheduler (Hu et al.,
// SC'21; the authors' simulator in S-Lab-System-Group/Lucid
// simulation/policy/qssf.py): pending jobs in ascending order of predicted
// service (predicted duration x GPUs), non-preemptive, stopping at the first
// job that does not fit. The duration predictor learns online from each user's
// finished jobs. See docs/qssf.md.
package qssf

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are the qssf policy's parameters.
type Params struct {
	// Placement places the jobs (default best-fit).
	Placement string `yaml:"placement"`
	// Strict stops at the first job in order that does not fit (default true,
	// as Helios); false skips it and tries the next.
	Strict *bool `yaml:"strict"`
}

func init() {
	policies.RegisterDecoded[Params](policies.Info{
		Name:    "qssf",
		Summary: "Helios QSSF (SC'21): shortest predicted GPU-time first (duration predicted from the user's finished jobs), non-preemptive, head-of-line blocking.",
		Params:  "placement (best-fit); strict (true)",
	}, New)
}

// New builds the policy.
func New(p Params) (*QSSF, error) {
	q := &QSSF{strict: true, users: map[string]*hist{}}
	if p.Strict != nil {
		q.strict = *p.Strict
	}
	name := p.Placement
	if name == "" {
		name = "best-fit"
	}
	var err error
	if q.placer, err = placement.New(name); err != nil {
		return nil, &policies.ConfigError{Err: errors.Join(fmt.Errorf("placement: %w", err))}
	}
	return q, nil
}

type hist struct {
	sum float64 // seconds
	n   int
}

func (h *hist) mean() (float64, bool) {
	if h == nil || h.n == 0 {
		return 0, false
	}
	return h.sum / float64(h.n), true
}

// QSSF is the qssf policy. See the package documentation.
type QSSF struct {
	strict   bool
	placer   placement.Placer
	prepared *sim.Cluster
	pl       placement.Placement
	users    map[string]*hist
	all      hist
	pending  []*sim.Job
}

// Name returns "qssf".
func (q *QSSF) Name() string { return "qssf" }

// Observe learns each finished job's run time for its user's history.
func (q *QSSF) Observe(v *sim.View, e sim.Event) {
	if e.Kind != sim.EvFinish {
		return
	}
	j := v.Job(e.Job)
	d := j.End.Sub(j.FirstStart).Seconds()
	h := q.users[j.Spec.User]
	if h == nil {
		h = &hist{}
		q.users[j.Spec.User] = h
	}
	h.sum += d
	h.n++
	q.all.sum += d
	q.all.n++
}

// Predict is the duration predictor (seconds): the mean run time of the user's
// finished jobs; without any, the mean of all finished jobs; without any, the
// job's walltime estimate (0 when it has none).
func (q *QSSF) Predict(j *sim.Job) float64 {
	if m, ok := q.users[j.Spec.User].mean(); ok {
		return m
	}
	if m, ok := q.all.mean(); ok {
		return m
	}
	return j.Estimate.Seconds()
}

// Schedule starts pending jobs in ascending predicted service (predicted
// duration x GPUs; ties: fewer GPUs, then submit order), stopping at the first
// that does not fit when strict.
func (q *QSSF) Schedule(v *sim.View, p *sim.Plan) error {
	c := v.Cluster()
	if q.prepared != c {
		if err := placement.Prepare(q.placer, v); err != nil {
			return err
		}
		q.prepared = c
	}
	q.pending = q.pending[:0]
	for j := range v.Pending() {
		q.pending = append(q.pending, j)
	}
	type key struct {
		svc float64
		g   int32
	}
	keys := make(map[*sim.Job]key, len(q.pending))
	for _, j := range q.pending {
		keys[j] = key{q.Predict(j) * float64(j.Spec.TotalGPUs()), j.Spec.TotalGPUs()}
	}
	slices.SortStableFunc(q.pending, func(a, b *sim.Job) int {
		ka, kb := keys[a], keys[b]
		if c := cmp.Compare(ka.svc, kb.svc); c != 0 {
			return c
		}
		if c := cmp.Compare(ka.g, kb.g); c != 0 {
			return c
		}
		return cmp.Compare(a.Ref, b.Ref)
	})
	for _, j := range q.pending {
		if !q.placer.Place(c, j, &q.pl) {
			p.Wait(j.Ref, placement.WhyNot(c, j))
			if q.strict {
				break
			}
			continue
		}
		if err := p.AddStart(j.Ref, q.pl.Nodes, q.pl.GPUs); err != nil {
			return err
		}
	}
	return nil
}
