package reports

import (
	"github.com/gpusim/gpusim/sim"
)

// summaryScratch holds the per-job inputs of SummarizeWith and buffers reused
// for every group, so summarising a run needs a few slices of its job count
// instead of copies of every metric per grouping.
type summaryScratch struct {
	res               *sim.Result
	held, wasted      []float64                // per job: GPU-hours held and wasted
	requeue           map[sim.JobRef][]float64 // per job with any: requeue delays (s)
	price             Prices
	gid               []int32   // per job: its group in the current grouping
	perm              []int32   // job indexes ordered by group, then index
	wait, jct, sd, rq []float64 // the values of one group
}

// collect fills the value buffers with the metrics of jobs (in that order) and
// returns the group's acc without value slices; wait, jct, sd and requeue are in
// s.wait, s.jct, s.sd and s.rq. Sums run in job order, as acc.add did.
func (s *summaryScratch) collect(jobs []int32) acc {
	s.wait, s.jct, s.sd, s.rq = s.wait[:0], s.jct[:0], s.sd[:0], s.rq[:0]
	var a acc
	for _, i := range jobs {
		j := &s.res.Jobs[i]
		m := MetricsOf(j)
		a.jobs++
		if j.State == sim.StateCompleted {
			a.completed++
		}
		if m.HasWait {
			s.wait = append(s.wait, m.Wait)
		}
		if m.HasJCT {
			s.jct = append(s.jct, m.JCT)
			s.sd = append(s.sd, m.Slowdown)
		}
		a.preempt += int(j.Preempted)
		a.gpuH += s.held[i]
		a.wastedH += s.wasted[i]
		a.cost += s.held[i] * s.price.of(s.res, j)
		if d, ok := s.requeue[sim.JobRef(i)]; ok {
			s.rq = append(s.rq, d...)
		}
	}
	a.wait, a.jct, a.sd, a.requeue = s.wait, s.jct, s.sd, s.rq
	return a
}

// groups summarises one grouping (key names a job's group): the GroupSummary of
// every group and, for Jain's index, each group's mean slowdown over its
// completed jobs (groups without any are left out of means). Each group sees
// its jobs in index order, so every figure equals the one of an acc fed job by
// job.
func (s *summaryScratch) groups(key func(j *sim.Job) string, totalH float64) (map[string]GroupSummary, map[string]float64) {
	n := len(s.res.Jobs)
	ids := map[string]int32{}
	var names []string
	for i := range s.res.Jobs {
		k := key(&s.res.Jobs[i])
		g, ok := ids[k]
		if !ok {
			g = int32(len(names))
			ids[k] = g
			names = append(names, k)
		}
		s.gid[i] = g
	}
	// Counting sort of job indexes by group (stable: index order within a group).
	start := make([]int, len(names)+1)
	for _, g := range s.gid[:n] {
		start[g+1]++
	}
	for g := range names {
		start[g+1] += start[g]
	}
	next := append([]int(nil), start[:len(names)]...)
	for i, g := range s.gid[:n] {
		s.perm[next[g]] = int32(i)
		next[g]++
	}
	out := make(map[string]GroupSummary, len(names))
	means := map[string]float64{}
	for g, name := range names {
		a := s.collect(s.perm[start[g]:start[g+1]])
		out[name] = a.group(totalH) // sorts a.sd in place
		if len(a.sd) > 0 {
			means[name] = mean(a.sd)
		}
	}
	return out, means
}
