package reports

import (
	"github.com/gpusim/gpusim/sim"
)

// summaryScratch holds the per-job inputs of SummarizeWith and value buffers
// reused for every grouping, so summarising a run needs a few slices of its job
// count instead of copies of every metric per group, and reads the jobs in
// order (a run's jobs are hundreds of MB; random access would miss the cache).
type summaryScratch struct {
	res               *sim.Result
	held, wasted      []float64                // per job: GPU-hours held and wasted
	requeue           map[sim.JobRef][]float64 // per job with any: requeue delays (s)
	price             Prices
	gid               []int32   // per job: its group in the current grouping
	wait, jct, sd, rq []float64 // values of every group, group after group
}

// all returns the acc of every job (value slices in s's buffers).
func (s *summaryScratch) all() acc {
	s.wait, s.jct, s.sd, s.rq = s.wait[:0], s.jct[:0], s.sd[:0], s.rq[:0]
	var a acc
	for i := range s.res.Jobs {
		j := &s.res.Jobs[i]
		m := MetricsOf(j)
		if m.HasWait {
			s.wait = append(s.wait, m.Wait)
		}
		if m.HasJCT {
			s.jct = append(s.jct, m.JCT)
			s.sd = append(s.sd, m.Slowdown)
		}
	}
	a.wait, a.jct, a.sd = s.wait, s.jct, s.sd
	return a
}

// groupCount counts one group's values, then holds their write positions.
type groupCount struct{ jobs, wait, jct, rq int }

// groups summarises one grouping (key names a job's group): the GroupSummary of
// every group and, for Jain's index, each group's mean slowdown over its
// completed jobs (groups without any are left out of means). A first pass over
// the jobs counts each group's values, a second one places them group after
// group in job order and sums in job order, so every figure equals the one of
// an acc fed job by job.
func (s *summaryScratch) groups(key func(j *sim.Job) string, totalH float64) (map[string]GroupSummary, map[string]float64) {
	ids := map[string]int32{}
	var names []string
	var cnt []groupCount
	for i := range s.res.Jobs {
		j := &s.res.Jobs[i]
		k := key(j)
		g, ok := ids[k]
		if !ok {
			g = int32(len(names))
			ids[k] = g
			names = append(names, k)
			cnt = append(cnt, groupCount{})
		}
		s.gid[i] = g
		m := MetricsOf(j)
		c := &cnt[g]
		c.jobs++
		if m.HasWait {
			c.wait++
		}
		if m.HasJCT {
			c.jct++
		}
		c.rq += len(s.requeue[sim.JobRef(i)])
	}
	// Start offsets of each group's values; cnt becomes the write positions.
	start := make([]groupCount, len(names)+1)
	for g, c := range cnt {
		start[g+1] = groupCount{start[g].jobs + c.jobs, start[g].wait + c.wait, start[g].jct + c.jct, start[g].rq + c.rq}
	}
	copy(cnt, start)
	end := start[len(names)]
	s.wait, s.jct, s.sd, s.rq = grow(s.wait, end.wait), grow(s.jct, end.jct), grow(s.sd, end.jct), grow(s.rq, end.rq)
	accs := make([]acc, len(names))
	for i := range s.res.Jobs {
		j := &s.res.Jobs[i]
		g := s.gid[i]
		a, c := &accs[g], &cnt[g]
		m := MetricsOf(j)
		a.jobs++
		if j.State == sim.StateCompleted {
			a.completed++
		}
		if m.HasWait {
			s.wait[c.wait] = m.Wait
			c.wait++
		}
		if m.HasJCT {
			s.jct[c.jct], s.sd[c.jct] = m.JCT, m.Slowdown
			c.jct++
		}
		a.preempt += int(j.Preempted)
		a.gpuH += s.held[i]
		a.wastedH += s.wasted[i]
		a.cost += s.held[i] * s.price.of(s.res, j)
		c.rq += copy(s.rq[c.rq:], s.requeue[sim.JobRef(i)])
	}
	out := make(map[string]GroupSummary, len(names))
	means := map[string]float64{}
	for g, name := range names {
		a := &accs[g]
		lo, hi := start[g], start[g+1]
		a.wait, a.jct, a.sd, a.requeue = s.wait[lo.wait:hi.wait], s.jct[lo.jct:hi.jct], s.sd[lo.jct:hi.jct], s.rq[lo.rq:hi.rq]
		out[name] = a.group(totalH) // sorts a.sd in place
		if len(a.sd) > 0 {
			means[name] = mean(a.sd)
		}
	}
	return out, means
}

// grow returns b resized to n (reusing its storage when it is large enough).
func grow(b []float64, n int) []float64 {
	if cap(b) >= n {
		return b[:n]
	}
	return make([]float64, n)
}
