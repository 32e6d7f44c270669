package federation

import (
	"fmt"
	"math"

	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Span opts jobs into cross-cluster gangs (docs/federation.md "Cross-cluster
// gangs"): an eligible gang that fits no single member is split, by whole
// replicas, over several members and admitted atomically there (all parts
// start together or none; they run at one speed and end together), slowed
// by a cross-site collective factor. Without a Span (or for a job it does not
// make eligible) a gang is dispatched whole to one cluster, as before.
type Span struct {
	// Eligible is the explicit opt-in: whether job s may span clusters.
	Eligible func(s *sim.JobSpec) bool
	// Slowdown (>= 1) multiplies a spanning gang's run time (duration and
	// walltime) for a pair of members without a Pairs entry.
	Slowdown float64
	// Pairs gives the factor of a pair of members (indices, a < b). A gang's
	// factor is the largest over the pairs of members it spans.
	Pairs map[[2]int]float64
}

// factor is the slowdown of a gang spanning members cs.
func (sp *Span) factor(cs []int) float64 {
	f := 1.0
	for a := range cs {
		for b := a + 1; b < len(cs); b++ {
			x, y := min(cs[a], cs[b]), max(cs[a], cs[b])
			g, ok := sp.Pairs[[2]int{x, y}]
			if !ok {
				g = sp.Slowdown
			}
			f = max(f, g)
		}
	}
	return f
}

// spanPart is one member's share of a spanning gang.
type spanPart struct {
	member   int
	replicas int32
	ref      sim.JobRef // the part's job (every stepper's JobRef order)
	pl       placement.Placement
}

// spanJob is a spanning gang: its parts and when it may start.
type spanJob struct {
	job   int      // index into the caller's jobs (the user's job)
	dec   int      // index into Result.Decisions
	ready sim.Time // submit + the largest WAN latency of its members
	parts []spanPart
	start sim.Time // Never while waiting
}

// maxReplicas is the most replicas of s that member cluster c could ever
// hold (the empty cluster), up to want.
func maxReplicas(c *sim.Cluster, s *sim.JobSpec, want int32) int32 {
	t := *s
	lo, hi := int32(0), want // Feasible is monotone in the replica count
	for lo < hi {
		mid := (lo + hi + 1) / 2
		t.Replicas = mid
		if c.Feasible(&t) == nil {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// splitSpans finds the eligible gangs that fit no single member and splits
// each over the members in listed order (each takes as many replicas as it
// could ever hold, until the gang is covered). It returns the workload with
// one part job per member appended (ID "<id>@<member>", the slowed duration
// and walltime) and, per spanning gang, its split (part refs not set yet).
func splitSpans(members []Member, jobs []sim.JobSpec, sp *Span) ([]sim.JobSpec, []spanJob) {
	if sp == nil || sp.Eligible == nil {
		return jobs, nil
	}
	var spans []spanJob
	var extra []sim.JobSpec
	for i := range jobs {
		s := &jobs[i]
		if !sp.Eligible(s) || s.GPUsPerReplica <= 0 || s.Fractional() || s.Unequal() || s.Replicas < 2 {
			continue
		}
		single := false
		for c := range members {
			if members[c].Config.Cluster.Feasible(s) == nil {
				single = true
				break
			}
		}
		if single {
			continue
		}
		var parts []spanPart
		left := s.Replicas
		for c := range members {
			if left == 0 {
				break
			}
			if k := maxReplicas(members[c].Config.Cluster, s, left); k > 0 {
				parts = append(parts, spanPart{member: c, replicas: k})
				left -= k
			}
		}
		if left > 0 || len(parts) < 2 {
			continue // fits not even the union: rejected as before
		}
		cs := make([]int, len(parts))
		for k, p := range parts {
			cs[k] = p.member
		}
		f := sp.factor(cs)
		for _, p := range parts {
			ps := *s
			ps.ID = sim.JobID(fmt.Sprintf("%s@%s", s.ID, members[p.member].Name))
			ps.Replicas = p.replicas
			ps.Duration = slowed(s.Duration, f)
			ps.Walltime = slowed(s.Walltime, f)
			extra = append(extra, ps)
		}
		spans = append(spans, spanJob{job: i, parts: parts, start: sim.Never})
	}
	if len(spans) == 0 {
		return jobs, nil
	}
	all := make([]sim.JobSpec, 0, len(jobs)+len(extra))
	all = append(append(all, jobs...), extra...)
	return all, spans
}

// slowed is d × f rounded up to the microsecond (0 stays 0).
func slowed(d sim.Duration, f float64) sim.Duration {
	if d <= 0 || f == 1 {
		return d
	}
	return sim.Duration(math.Ceil(float64(d)*f - 1e-9))
}

// tryStart places every part of g in its member's current state (first-fit)
// and, when all fit, starts them together at t.
func tryStart(g *spanJob, steps []*sim.Stepper, placer placement.Placer, t sim.Time, buf []sim.SpanPart) ([]sim.SpanPart, bool, error) {
	buf = buf[:0]
	for k := range g.parts {
		p := &g.parts[k]
		v := steps[p.member].View()
		if !placer.Place(v.Cluster(), v.Job(p.ref), &p.pl) {
			return buf, false, nil
		}
		buf = append(buf, sim.SpanPart{S: steps[p.member], Job: p.ref, Nodes: p.pl.Nodes, GPUs: p.pl.GPUs})
	}
	if err := sim.StartSpan(t, buf); err != nil {
		return buf, false, err
	}
	g.start = t
	return buf, true, nil
}
