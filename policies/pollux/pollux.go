package pollux

import (
	"math"
	"sort"

	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// polluxPolicy is the artifact's Pollux scheduler (simulator/pollux.py:
// PolluxPolicy.optimize with the job information of simulator.py:
// Cluster.get_pollux_job_info) with the genetic search replaced by a
// deterministic greedy optimiser of the same objective:
//
//   - speedup_j(n, r) = max_m GOODPUT_j(n, r, m) / max_m GOODPUT_j(1 node,
//     ceil(GPUs/jobs)) (speedup.py:SpeedupFunction, base goodput replaced by the
//     fair-share goodput in pollux.py:Problem.__init__); r / ceil(GPUs/jobs) for a
//     job without a fitted model;
//   - scaled by dominant share × nodes (1/GPUsPerNode) and, for a job whose
//     allocation changes, by max(age − 30·restarts, 0)/(age + 30);
//   - objective: power mean with p = −1 of (scaled speedup + 1e-3), maximised;
//   - constraints: node capacity, at most one distributed (multi-node) job per
//     node, at most 16 nodes per job, at most max_replicas = min(max(2 × most
//     GPUs profiled, 1), 64, max_batch // min_local_bsz) GPUs (ncf: 1).
//
// NSGA-II (population 100, 100 generations, random) is replaced by: (1) a
// construction that gives every job one GPU in Pollux's job order (attained
// service, then submission), then repeatedly the block of d ≥ 1 GPUs with the
// largest objective gain per GPU to one job (the look-ahead over d lets a job
// cross the restart penalty, e.g. back to its current size); (2) packing those
// sizes onto nodes, keeping unchanged jobs where they are; (3) a hill climb over
// single-GPU additions and removals on the exact objective; (4) the best of that
// and "keep every current allocation, give new jobs one GPU".
//
// The engine's Pollux (engine_pollux.go) runs the same optimiser with two
// knobs of the paper (§4.2): the fairness power p (the artifact's −1) and the
// restart penalty (the artifact's 30 s).
type polluxPolicy struct {
	p       float64 // power of the generalised mean (< 0 favours fairness; 0: geometric)
	restart float64 // restart penalty, seconds
}

func newPolluxPolicy() *polluxPolicy { return &polluxPolicy{p: -1, restart: DefaultRestart} }

// cost is one job's term of the minimised objective for scaled speedup s:
// (s + 1e-3)^p for p < 0 (1/(s + 1e-3) at the artifact's p = −1),
// −log(s + 1e-3) for p = 0 and −(s + 1e-3)^p for p > 0, so that minimising the
// sum maximises the power mean.
func cost(p, s float64) float64 {
	x := s + 1e-3
	switch {
	case p == -1:
		return 1 / x
	case p < 0:
		return math.Pow(x, p)
	case p == 0:
		return -math.Log(x)
	default:
		return -math.Pow(x, p)
	}
}

type pjob struct {
	j       *job
	maxRep  int
	factor  float64 // restart discount
	base    []int   // GPUs per node now
	baseN   int
	baseR   int
	model   bool
	baseGP  float64
	fairRep int
}

func (p *pjob) speedup(n, r int) float64 {
	if r == 0 {
		return 0
	}
	if !p.model {
		return float64(r) / float64(p.fairRep)
	}
	return p.j.goodput(n, r) / p.baseGP
}

type polluxRound struct {
	jobs     []*pjob
	nodes    int
	perNode  int
	caps     []int   // GPUs per node when they differ (Config.NodeGPUs); nil: perNode each
	share    float64 // dominant share × nodes
	maxNodes int
	p        float64 // fairness power (polluxPolicy.p)
}

func (pr *polluxRound) term(i int, row []int) float64 {
	n, r := 0, 0
	same := true
	for x, v := range row {
		if v > 0 {
			n++
			r += v
		}
		if v != pr.jobs[i].base[x] {
			same = false
		}
	}
	s := pr.jobs[i].speedup(n, r) * pr.share
	if !same {
		s *= pr.jobs[i].factor
	}
	return cost(pr.p, s)
}

func (pr *polluxRound) objective(state [][]int) float64 {
	sum := 0.0
	for i := range pr.jobs {
		sum += pr.term(i, state[i])
	}
	return sum
}

func (p *polluxPolicy) optimize(now pm.Seconds, active []*job, prev [][]int, cfg Config) ([][]int, error) {
	nj := len(active)
	totalGPUs := cfg.Nodes * cfg.GPUsPerNode
	fairRep := int(math.Ceil(float64(totalGPUs) / float64(nj)))
	pr := &polluxRound{nodes: cfg.Nodes, perNode: cfg.GPUsPerNode, share: 1 / float64(cfg.GPUsPerNode), maxNodes: 16, p: p.p, caps: cfg.NodeGPUs}
	if cfg.NodeGPUs != nil {
		totalGPUs = 0
		for _, g := range cfg.NodeGPUs {
			totalGPUs += g
		}
	}
	// Pollux's job order: attained service, then submission time.
	order := make([]int, nj)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ja, jb := active[order[a]], active[order[b]]
		if ja.attained != jb.attained {
			return ja.attained < jb.attained
		}
		return ja.spec.Submit < jb.spec.Submit
	})
	pr.jobs = make([]*pjob, nj)
	for oi, i := range order {
		j := active[i]
		q := &pjob{j: j, fairRep: fairRep}
		q.maxRep = min(max(2*j.maxProfRep, 1), 64, j.app.MaxBatchSize/j.app.MinLocalBsz, totalGPUs)
		if j.app.Name == "ncf" {
			q.maxRep = 1
		}
		if j.maxRepCap > 0 {
			q.maxRep = min(q.maxRep, j.maxRepCap)
		}
		age := now - j.spec.Submit
		q.factor = math.Max(age-p.restart*float64(max(j.restarts, 0)), 0) / (age + p.restart)
		q.base = make([]int, cfg.Nodes)
		for _, n := range prev[i] {
			q.base[n]++
		}
		for _, v := range q.base {
			if v > 0 {
				q.baseN++
				q.baseR += v
			}
		}
		if j.perf != nil {
			q.model = true
			q.baseGP = j.goodput(1, fairRep)
		}
		pr.jobs[oi] = q
	}

	best := pr.construct()
	pr.climb(best)
	bestVal := pr.objective(best)
	if keep := pr.keepAndAdmit(); keep != nil {
		pr.climb(keep)
		if v := pr.objective(keep); v < bestVal {
			best, bestVal = keep, v
		}
	}
	out := make([][]int, nj)
	for oi, i := range order {
		var a []int
		for x, v := range best[oi] {
			for range v {
				a = append(a, x)
			}
		}
		out[i] = a
	}
	return out, nil
}

func (pr *polluxRound) newState() [][]int {
	s := make([][]int, len(pr.jobs))
	for i := range s {
		s[i] = make([]int, pr.nodes)
	}
	return s
}

// usage returns free GPUs per node and the distributed job on each node.
func (pr *polluxRound) usage(state [][]int) (free, dist []int) {
	free = make([]int, pr.nodes)
	dist = make([]int, pr.nodes)
	for x := range free {
		free[x] = pr.capOf(x)
		dist[x] = -1
	}
	for i, row := range state {
		n := 0
		for _, v := range row {
			if v > 0 {
				n++
			}
		}
		for x, v := range row {
			free[x] -= v
			if v > 0 && n > 1 {
				dist[x] = i
			}
		}
	}
	return free, dist
}

// capOf is node x's GPUs.
func (pr *polluxRound) capOf(x int) int {
	if pr.caps != nil {
		return pr.caps[x]
	}
	return pr.perNode
}

// totalGPUs is the cluster's GPUs.
func (pr *polluxRound) totalGPUs() int {
	if pr.caps == nil {
		return pr.nodes * pr.perNode
	}
	t := 0
	for _, g := range pr.caps {
		t += g
	}
	return t
}

func nodesOf(r, perNode int) int { return (r + perNode - 1) / perNode }

// construct is steps (1) and (2): sizes by marginal gain per GPU, then packing.
func (pr *polluxRound) construct() [][]int {
	nj := len(pr.jobs)
	reps := make([]int, nj)
	gpus := pr.totalGPUs()
	sizeTerm := func(i, r int) float64 {
		q := pr.jobs[i]
		n := nodesOf(r, pr.perNode)
		s := q.speedup(n, r) * pr.share
		if !(r == q.baseR && n == q.baseN) {
			s *= q.factor
		}
		return cost(pr.p, s)
	}
	for i := range pr.jobs {
		if gpus == 0 {
			break
		}
		reps[i] = 1
		gpus--
	}
	for gpus > 0 {
		bi, bd, bg := -1, 0, 0.0
		for i, q := range pr.jobs {
			if reps[i] == 0 {
				continue
			}
			cur := sizeTerm(i, reps[i])
			for d := 1; d <= gpus && reps[i]+d <= q.maxRep; d++ {
				g := (cur - sizeTerm(i, reps[i]+d)) / float64(d)
				if g > bg*(1+1e-12) {
					bi, bd, bg = i, d, g
				}
			}
		}
		if bi < 0 {
			break
		}
		reps[bi] += bd
		gpus -= bd
	}
	return pr.pack(reps)
}

// pack places the sizes: unchanged jobs keep their nodes, then the others in
// descending size, single-node jobs best-fit, multi-node jobs on the emptiest
// nodes without another distributed job; a job that does not fit shrinks.
func (pr *polluxRound) pack(reps []int) [][]int {
	state := pr.newState()
	free := make([]int, pr.nodes)
	dist := make([]int, pr.nodes)
	for x := range free {
		free[x] = pr.capOf(x)
		dist[x] = -1
	}
	placed := make([]bool, len(reps))
	for i, q := range pr.jobs {
		if reps[i] == q.baseR && reps[i] > 0 {
			ok := true
			for x, v := range q.base {
				if v > free[x] || (v > 0 && q.baseN > 1 && dist[x] >= 0) {
					ok = false
				}
			}
			if ok {
				for x, v := range q.base {
					state[i][x] = v
					free[x] -= v
					if v > 0 && q.baseN > 1 {
						dist[x] = i
					}
				}
				placed[i] = true
			}
		}
	}
	idx := make([]int, 0, len(reps))
	for i := range reps {
		if !placed[i] && reps[i] > 0 {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return reps[idx[a]] > reps[idx[b]] })
	for _, i := range idx {
		for r := reps[i]; r > 0; r-- {
			if pr.placeOne(state[i], r, free, dist, i) {
				break
			}
		}
	}
	return state
}

// placeOne puts r GPUs of job i on nodes, updating free and dist; false if they
// do not fit.
func (pr *polluxRound) placeOne(row []int, r int, free, dist []int, i int) bool {
	// One node: the fullest node that still fits (best fit).
	bx := -1
	for x := range free {
		if free[x] >= r && (bx < 0 || free[x] < free[bx]) {
			bx = x
		}
	}
	if bx >= 0 {
		row[bx] += r
		free[bx] -= r
		return true
	}
	// Several nodes, none hosting another distributed job: the emptiest first.
	cand := make([]int, 0, pr.nodes)
	total := 0
	for x := range free {
		if free[x] > 0 && dist[x] < 0 {
			cand = append(cand, x)
			total += free[x]
		}
	}
	if total < r {
		return false
	}
	sort.SliceStable(cand, func(a, b int) bool { return free[cand[a]] > free[cand[b]] })
	left := r
	var used []int
	for _, x := range cand {
		if left == 0 || len(used) == pr.maxNodes {
			break
		}
		k := min(free[x], left)
		row[x] += k
		left -= k
		used = append(used, x)
	}
	if left > 0 {
		for _, x := range used {
			row[x] = 0
		}
		return false
	}
	for _, x := range used {
		free[x] -= row[x]
		dist[x] = i
	}
	return true
}

// keepAndAdmit is the state that keeps every current allocation and gives each
// job without GPUs one GPU where one is free.
func (pr *polluxRound) keepAndAdmit() [][]int {
	state := pr.newState()
	for i, q := range pr.jobs {
		if q.baseR <= q.maxRep {
			copy(state[i], q.base)
		}
	}
	free, dist := pr.usage(state)
	for i, q := range pr.jobs {
		if q.baseR == 0 || q.baseR > q.maxRep {
			pr.placeOne(state[i], 1, free, dist, i)
		}
	}
	return state
}

// climb is step (3): steepest descent of the objective over adding or removing
// one GPU of one job on one node, within the constraints.
func (pr *polluxRound) climb(state [][]int) {
	nj := len(pr.jobs)
	terms := make([]float64, nj)
	for i := range pr.jobs {
		terms[i] = pr.term(i, state[i])
	}
	for iter := 0; iter < 4*pr.totalGPUs(); iter++ {
		free, dist := pr.usage(state)
		bi, bx, bdv, bgain, bterm := -1, -1, 0, 1e-12, 0.0
		for i, q := range pr.jobs {
			row := state[i]
			n, r := 0, 0
			for _, v := range row {
				if v > 0 {
					n++
					r += v
				}
			}
			for x := range row {
				// add one GPU on x
				if free[x] > 0 && r+1 <= q.maxRep {
					nn := n
					if row[x] == 0 {
						nn++
					}
					ok := nn <= pr.maxNodes
					if ok && nn > 1 {
						// every node of the job must be free of other distributed jobs
						for y, v := range row {
							if (v > 0 || y == x) && dist[y] >= 0 && dist[y] != i {
								ok = false
								break
							}
						}
					}
					if ok {
						row[x]++
						t := pr.term(i, row)
						row[x]--
						if g := terms[i] - t; g > bgain {
							bi, bx, bdv, bgain, bterm = i, x, 1, g, t
						}
					}
				}
				// remove one GPU on x
				if row[x] > 0 {
					row[x]--
					t := pr.term(i, row)
					row[x]++
					if g := terms[i] - t; g > bgain {
						bi, bx, bdv, bgain, bterm = i, x, -1, g, t
					}
				}
			}
		}
		if bi < 0 {
			return
		}
		state[bi][bx] += bdv
		terms[bi] = bterm
	}
}
