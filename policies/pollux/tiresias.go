package pollux

import (
	"slices"

	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// tiresias is the artifact's discretised two-queue 2D-LAS
// (simulator/tiresias.py:TiresiasPolicy.optimize, "Tiresias+TunedJobs"): every
// job enters Q0 and moves to the back of Q1 once executed wall time × GPUs
// reaches 16 GPU-hours (starvation handling off). Each round Q0 then Q1 are
// walked in queue order; a job runs if its GPUs fit in what is left in this
// pass (others are skipped, not waited for), else it is preempted. Running jobs
// keep their GPUs; a newly running one takes them node by node from the node
// with the most free GPUs.
type tiresias struct {
	threshold  float64
	q0, q1     []*job
	running    map[*job]bool
	lastCheck  map[*job]int
	executed   map[*job]int
	registered map[*job]bool
}

func newTiresias() *tiresias {
	return &tiresias{threshold: 3600 * 16, running: map[*job]bool{}, lastCheck: map[*job]int{},
		executed: map[*job]int{}, registered: map[*job]bool{}}
}

func (t *tiresias) optimize(now pm.Seconds, active []*job, prev [][]int, cfg Config) ([][]int, error) {
	eventTime := int(now)
	isActive := make(map[*job]int, len(active))
	for i, j := range active {
		isActive[j] = i
	}
	keep := func(q []*job) []*job {
		out := q[:0]
		for _, j := range q {
			if _, ok := isActive[j]; ok {
				out = append(out, j)
			}
		}
		return out
	}
	t.q0, t.q1 = keep(t.q0), keep(t.q1)
	alloc := make([][]int, len(active))
	copy(alloc, prev)
	for _, j := range active {
		if !t.registered[j] {
			t.registered[j] = true
			t.running[j] = false
			t.q0 = append(t.q0, j)
		}
	}
	for _, j := range active {
		tmp := eventTime - t.lastCheck[j]
		t.lastCheck[j] = eventTime
		if t.running[j] {
			t.executed[j] += tmp
			if float64(t.executed[j]*j.targetReplicas) >= t.threshold {
				if i := slices.Index(t.q0, j); i >= 0 {
					t.q0 = slices.Delete(t.q0, i, i+1)
					t.q1 = append(t.q1, j)
				}
			}
		}
	}
	gpus := cfg.Nodes * cfg.GPUsPerNode
	for _, q := range [][]*job{t.q0, t.q1} {
		for _, j := range q {
			if j.targetReplicas <= gpus {
				t.running[j] = true
				gpus -= j.targetReplicas
			} else {
				t.running[j] = false
				alloc[isActive[j]] = nil
			}
		}
	}
	free := make([]int, cfg.Nodes)
	for i := range free {
		free[i] = cfg.GPUsPerNode
	}
	for _, a := range alloc {
		for _, n := range a {
			free[n]--
		}
	}
	for _, q := range [][]*job{t.q0, t.q1} {
		for _, j := range q {
			i := isActive[j]
			if t.running[j] && len(alloc[i]) == 0 {
				alloc[i] = takeGPUs(nil, free, j.targetReplicas)
			}
		}
	}
	return alloc, nil
}
