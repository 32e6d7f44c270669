package policies

import (
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// profile is a step function of free GPUs over time: free[i] holds on
// [t[i], t[i+1]) and the last value holds forever.
type profile struct {
	t    []sim.Time
	free []int64
}

func (p *profile) reset(now sim.Time, free int64) {
	p.t = append(p.t[:0], now)
	p.free = append(p.free[:0], free)
}

// split makes t a breakpoint and returns its index.
func (p *profile) split(t sim.Time) int {
	i := len(p.t) - 1
	for i > 0 && p.t[i] > t {
		i--
	}
	if p.t[i] == t {
		return i
	}
	p.t = append(p.t, 0)
	p.free = append(p.free, 0)
	copy(p.t[i+2:], p.t[i+1:])
	copy(p.free[i+2:], p.free[i+1:])
	p.t[i+1] = t
	p.free[i+1] = p.free[i]
	return i + 1
}

// add adds delta on [t0, t1) (t1 = sim.Never for "from t0 on").
func (p *profile) add(t0, t1 sim.Time, delta int64) {
	i := p.split(t0)
	end := len(p.t)
	if t1 != sim.Never {
		end = p.split(t1)
	}
	for k := i; k < end; k++ {
		p.free[k] += delta
	}
}

// nextAfter returns the first breakpoint after t, or sim.Never.
func (p *profile) nextAfter(t sim.Time) sim.Time {
	for _, x := range p.t {
		if x > t {
			return x
		}
	}
	return sim.Never
}

// earliest returns the earliest breakpoint time >= from at which at least need GPUs
// stay free for dur, or sim.Never.
func (p *profile) earliest(from sim.Time, dur sim.Duration, need int64) sim.Time {
	i := 0
	for i < len(p.t)-1 && p.t[i+1] <= from {
		i++
	}
	for i < len(p.t) {
		start := max(p.t[i], from)
		end := start.Add(dur)
		ok := true
		j := i
		for ; j < len(p.t) && p.t[j] < end; j++ {
			if p.free[j] < need {
				ok = false
				break
			}
		}
		if ok {
			return start
		}
		i = j + 1
	}
	return sim.Never
}

// conservative runs a conservative backfill pass: each examined job (the blocked
// head first, then later ones in queue order, up to maxJobsTest) gets the earliest
// reservation in a per-model GPU-count profile built from running jobs' estimated
// ends and the reservations made before it; a job starts now only if its earliest
// slot is now and it can be placed now. Reservations are counted in GPUs per model,
// not pinned to nodes (documented approximation).
func (q *queuePolicy) conservative(v *sim.View, p *sim.Plan, h *sim.Job) error {
	c := v.Cluster()
	now := v.Now()
	models := c.Models()
	if len(q.prof.t) == 0 || cap(q.profs) < len(models) {
		q.profs = make([]profile, len(models))
	}
	profs := q.profs[:len(models)]
	for m := range profs {
		profs[m].reset(now, c.ModelFree(m))
	}
	q.run.each(func(r *sim.Job) bool {
		rs := &r.Spec
		if rs.GPUsPerReplica == 0 || len(r.Nodes) == 0 {
			return true
		}
		m := c.NodeModel(r.Nodes[0])
		n := int64(rs.TotalGPUs())
		if rs.Fractional() {
			n = 0 // shares a GPU: frees no whole GPU for certain
		}
		if n > 0 {
			// A job past its estimated end (it ran slower than estimated) is
			// expected to end any moment: just after now, never in the past (which
			// would break the profile's time order).
			profs[m].add(max(q.estEnd(r), now+1), sim.Never, n)
		}
		return true
	})
	q.prof.t = append(q.prof.t[:0], now) // marks profiles as initialised
	tested := 0
	passed := false
	var err error
	q.eachPending(v, func(j *sim.Job) bool {
		if !passed {
			if j != h {
				return true
			}
			passed = true
		}
		if tested >= q.maxTest {
			return false
		}
		tested++
		s := &j.Spec
		need := int64(s.TotalGPUs())
		if s.Fractional() {
			need = 1
		}
		dur := max(j.Estimate-j.Done, 1)
		best, bm := sim.Never, -1
		for m := range profs {
			if need > 0 && !s.AllowsModel(models[m]) {
				continue
			}
			if t := profs[m].earliest(now, dur, need); t < best {
				best, bm = t, m
			}
			if need == 0 {
				break
			}
		}
		if bm < 0 {
			return true
		}
		if best == now {
			if placement.QuickFit(c, s) && q.placer.Place(c, j, &q.pl) && !q.powerHeld(v, p, j) {
				if err = q.start(p, j); err != nil {
					return false
				}
				if need > 0 {
					pm := c.NodeModel(q.pl.Nodes[0])
					profs[pm].add(now, now.Add(dur), -need)
				}
				return true
			}
			// Fits by count but not by placement now (fragmentation): placement
			// can only change when a running job ends, so reserve the earliest slot
			// from the next breakpoint on (not from now+1, which would hold the
			// GPUs from now on for a job that cannot use them).
			best, bm = sim.Never, -1
			for m := range profs {
				if need > 0 && !s.AllowsModel(models[m]) {
					continue
				}
				nb := profs[m].nextAfter(now)
				if nb == sim.Never {
					continue
				}
				if t := profs[m].earliest(nb, dur, need); t < best {
					best, bm = t, m
				}
			}
			if bm < 0 {
				return true
			}
		}
		if j == h {
			p.Wait(j.Ref, placement.WhyNot(c, j))
		} else {
			p.Wait(j.Ref, sim.ReasonReservation)
		}
		if q.window > 0 && best > now.Add(q.window) {
			return true // beyond the window: no reservation
		}
		if need > 0 {
			profs[bm].add(best, best.Add(dur), -need)
		}
		if j == h {
			p.Reserve(h.Ref, best)
		}
		return true
	})
	return err
}
