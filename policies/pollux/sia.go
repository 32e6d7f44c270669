package pollux

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/rounds"
	"github.com/gpusim/gpusim/sim"
	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// Sia (SOSP'23) on the engine: heterogeneity-aware, goodput-optimised
// allocation of elastic jobs, after siasosp23/artifacts sia-simulator/sia.py
// (SiaPolicy.optimize_mip, _compute_goodputs_v2, alloc_to_placement_fast,
// get_restart_penalty; docs/pollux.md "Sia"). Every round (60 s):
//
//   - configurations per GPU type (nodes of one GPU model, all of g GPUs):
//     1, 2, 4, … GPUs below g on one node, then k·g GPUs on k whole nodes, up
//     to 64 GPUs (sia.py's CONFIGS_4GPU / CONFIGS_8GPU);
//   - a job's goodput on (type t, n nodes, r GPUs) is its Pollux goodput model
//     (the same fitted model and batch-size optimiser as the engine's Pollux)
//     times the type's throughput relative to the profiles' GPU (the speed
//     model's factor, sim.View.SpeedOn): the artifact profiles every type, we
//     have only the Pollux (T4) profiles, so one model scaled per type is the
//     assumption. A job without a fitted model may only take 1 GPU (value 1 on
//     every type), as sia.py's nnz_speedups;
//   - goodputs are normalised so the job's smallest is 1 (values below 1e-4
//     floored) and, except for the job's current configuration, multiplied by
//     the re-allocation factor max(age − restarts·δ, 0)/(age + δ) (1 while age
//     < δ), δ per application (cifar10 30 s, imagenet 250 s, bert 120 s,
//     deepspeech2 25 s, yolov3 45 s, other 30 s);
//   - choose at most one configuration per job within each type's GPUs,
//     minimising Σ round(G^p, 2) (clipped at 3000) + λn·(jobs without GPUs),
//     p = −0.5, λn = 1.1. sia.py solves this MILP with CBC; we solve it
//     exactly by dynamic programming over the GPUs used per type (siaDP)
//     when that is small enough (siaDPBudget), else greedily (siaBest):
//     repeatedly the move (a job to another configuration) with the largest
//     objective decrease per GPU added (moves that add no GPU first), until
//     none improves;
//   - placement (sia.py's alloc_to_placement_fast): jobs that keep their
//     configuration stay; the others, largest first, take whole free nodes of
//     their type for each full node, the rest on the fullest node of the type
//     that fits (spread over the emptiest otherwise).
//
// Jobs re-pick their batch size as the engine's Pollux does (agents).
type SiaParams struct {
	// Round is the round length (default 60s).
	Round *policies.Dur `yaml:"round"`
	// P is the fairness power (default −0.5, sia's sia_default_p_val); must
	// be < 0 or > 0.
	P *float64 `yaml:"p"`
	// LambdaN is the cost of a job left without GPUs (default 1.1).
	LambdaN *float64 `yaml:"lambdaN"`
	// RestartPenalty, when set, replaces the per-application δ.
	RestartPenalty *policies.Dur `yaml:"restartPenalty"`
}

func init() {
	policies.RegisterDecoded[SiaParams](policies.Info{
		Name:    "sia",
		Summary: "Sia (SOSP'23): rounds of 60 s; per job and (GPU type, nodes, GPUs) configuration the Pollux goodput scaled by the type's throughput, normalised, with Sia's re-allocation factor; one configuration per job minimising Σ G^p + λn·unallocated (p = −0.5, λn = 1.1), the MILP solved exactly by dynamic programming (greedily when too large); jobs re-pick their batch size (Plan.AddRate). Jobs: trace format pollux-adaptive (docs/pollux.md).",
		Params:  "round (60s); p (-0.5); lambdaN (1.1); restartPenalty (per application: cifar10 30s, imagenet 250s, bert 120s, deepspeech2 25s, yolov3 45s, else 30s)",
	}, NewSia)
}

// NewSia builds the engine's Sia: a rounds.Driver (Repack, Placer) around
// siaAlloc.
func NewSia(p SiaParams) (*rounds.Driver, error) {
	s := &siaAlloc{p: -0.5, lambdaN: 1.1, penalty: -1}
	round := 60 * sim.Second
	var errs []error
	if p.Round != nil {
		if round = sim.Duration(*p.Round); round < sim.Second {
			errs = append(errs, errors.New("round: must be at least 1s"))
		}
	}
	if p.P != nil {
		if s.p = *p.P; math.IsNaN(s.p) || s.p == 0 || s.p < -10 || s.p > 1 {
			errs = append(errs, fmt.Errorf("p: must be in -10..1 and not 0, got %v", s.p))
		}
	}
	if p.LambdaN != nil {
		if s.lambdaN = *p.LambdaN; !(s.lambdaN > 0) || math.IsInf(s.lambdaN, 0) {
			errs = append(errs, fmt.Errorf("lambdaN: must be > 0, got %v", s.lambdaN))
		}
	}
	if p.RestartPenalty != nil {
		if s.penalty = sim.Duration(*p.RestartPenalty).Seconds(); s.penalty < 0 {
			errs = append(errs, errors.New("restartPenalty: must be >= 0"))
		}
	}
	if len(errs) > 0 {
		return nil, &policies.ConfigError{Err: errors.Join(errs...)}
	}
	s.agents = agents{name: "sia", every: round}
	d, err := rounds.New("sia", round, s)
	if err != nil {
		return nil, err
	}
	d.Repack = true
	return d, nil
}

// siaRestartPenalty is sia.py:get_restart_penalty (seconds) by application.
func siaRestartPenalty(app string) float64 {
	switch {
	case strings.Contains(app, "deepspeech"):
		return 25
	case strings.Contains(app, "imagenet"):
		return 250
	case strings.Contains(app, "cifar"):
		return 30
	case strings.Contains(app, "bert"):
		return 120
	case strings.Contains(app, "yolov3"):
		return 45
	}
	return 30
}

// siaType is one GPU type of the cluster: its nodes (all of per GPUs).
type siaType struct {
	model string
	nodes []sim.NodeID
	per   int
}

// siaConfig is (type, nodes, GPUs).
type siaConfig struct{ t, n, r int }

// siaAlloc is Sia as a rounds.Allocator, Rater and Placer.
type siaAlloc struct {
	agents
	p, lambdaN, penalty float64

	types []siaType
	confs []siaConfig
	cost  [][]float64 // per active job and configuration; NaN: not allowed
	cur   []int       // current configuration per active job (−1 none)
	pick  []int       // chosen configuration per active job (−1 none)
	out   [][]sim.NodeID
}

// Allocate implements rounds.Allocator.
func (s *siaAlloc) Allocate(v *sim.View, active []*sim.Job, want []int32) error {
	if err := s.account(v); err != nil {
		return err
	}
	if err := s.report(v); err != nil {
		return err
	}
	s.round = v.Now()
	c := v.Cluster()
	if err := s.cluster(c); err != nil {
		return err
	}
	s.cost = s.cost[:0]
	s.cur = s.cur[:0]
	for _, j := range active {
		g, err := s.get(j)
		if err != nil {
			return err
		}
		row, cur, err := s.row(v, j, g)
		if err != nil {
			return err
		}
		s.cost = append(s.cost, row)
		s.cur = append(s.cur, cur)
	}
	if pick, ok := siaDP(s.cost, s.confs, s.types, s.lambdaN, siaDPBudget); ok {
		s.pick = pick
	} else {
		s.pick = siaBest(s.cost, s.confs, s.types, s.lambdaN, s.cur)
	}
	s.place(c, active)
	for i := range active {
		if k := s.pick[i]; k >= 0 {
			want[i] = int32(s.confs[k].r)
		}
	}
	return nil
}

// cluster groups the nodes by GPU model (in node order) and lists the
// configurations.
func (s *siaAlloc) cluster(c *sim.Cluster) error {
	s.types, s.confs = s.types[:0], s.confs[:0]
	for n := range c.NumNodes() {
		id := sim.NodeID(n)
		f, e := c.NodeGPUs(id)
		if e == f {
			continue
		}
		m := c.Node(id).GPUModel
		k := slices.IndexFunc(s.types, func(t siaType) bool { return t.model == m })
		if k < 0 {
			s.types = append(s.types, siaType{model: m, per: int(e - f)})
			k = len(s.types) - 1
		}
		if s.types[k].per != int(e-f) {
			return fmt.Errorf("sia: GPU type %s has nodes of %d and %d GPUs: Sia's configurations need one node size per type", m, s.types[k].per, e-f)
		}
		s.types[k].nodes = append(s.types[k].nodes, id)
	}
	for t, ty := range s.types {
		for r := 1; r < ty.per; r *= 2 {
			s.confs = append(s.confs, siaConfig{t, 1, r})
		}
		for k := 1; k <= len(ty.nodes) && k*ty.per <= 64; k++ {
			s.confs = append(s.confs, siaConfig{t, k, k * ty.per})
		}
	}
	return nil
}

// row is job j's cost per configuration (NaN where it may not run) and its
// current configuration (−1: none, or a placement no configuration matches).
func (s *siaAlloc) row(v *sim.View, j *sim.Job, g *agent) ([]float64, int, error) {
	jb := g.j
	maxRep := min(max(2*jb.maxProfRep, 1), 64, jb.app.MaxBatchSize/jb.app.MinLocalBsz, int(j.Spec.Elastic.Max))
	if jb.app.Name == "ncf" {
		maxRep = 1
	}
	cur := -1
	if j.State == sim.StateRunning {
		cur = s.configOf(v.Cluster(), j.Nodes)
	}
	row := make([]float64, len(s.confs))
	lo := math.Inf(1)
	for k, cf := range s.confs {
		ty := &s.types[cf.t]
		if cf.r > maxRep || !j.Spec.AllowsModel(ty.model) {
			row[k] = math.NaN()
			continue
		}
		f, _ := v.Cluster().NodeGPUs(ty.nodes[0])
		thr := v.SpeedOn(j, []sim.GPUID{f})
		var gp float64
		switch {
		case jb.perf != nil:
			gp = jb.goodput(max(cf.n, nodesOf(cf.r, pm.ProfiledNodeGPUs)), cf.r) * thr // nodes of at most 4 (pm.Profiled)
		case cf.r == 1:
			gp = 1 // no model yet: 1 GPU of any type, worth 1
		default:
			row[k] = math.NaN()
			continue
		}
		row[k] = gp
		if gp > 1e-4 {
			lo = min(lo, gp)
		}
	}
	if math.IsInf(lo, 1) {
		lo = 1
	}
	delta := s.penalty
	if delta < 0 {
		delta = siaRestartPenalty(jb.app.Name)
	}
	age := sim.Duration(v.Now()).Seconds() - jb.spec.Submit
	factor := math.Max(age-float64(max(jb.restarts, 0))*delta, 0) / (age + delta)
	if age < delta {
		factor = 1
	}
	for k, gp := range row {
		if !math.IsNaN(gp) {
			row[k] = siaCost(gp, lo, factor, s.p, k == cur)
		}
	}
	return row, cur, nil
}

// siaCost is one entry of sia.py's objective matrix: goodput gp normalised
// by the job's smallest lo (at least 1e-4), times the re-allocation factor
// unless it is the job's current configuration, raised to p, rounded to 2
// decimals and clipped at 3000 (__power_up_speedup_matrix).
func siaCost(gp, lo, factor, p float64, current bool) float64 {
	g := math.Max(gp/lo, 1e-4)
	if !current {
		g = math.Max(g*factor, 1e-4)
	}
	return min(math.Round(math.Pow(g, p)*100)/100, 3000)
}

// configOf is the configuration a placement matches: one GPU type, and
// either one node (r < per) or r/per whole nodes; −1 if none.
func (s *siaAlloc) configOf(c *sim.Cluster, nodes []sim.NodeID) int {
	m := c.Node(nodes[0]).GPUModel
	distinct := 0
	for i, n := range nodes {
		if c.Node(n).GPUModel != m {
			return -1
		}
		if !slices.Contains(nodes[:i], n) {
			distinct++
		}
	}
	for k, cf := range s.confs {
		if s.types[cf.t].model == m && cf.r == len(nodes) && cf.n == distinct {
			return k
		}
	}
	return -1
}

// siaSolve is the greedy in place of sia.py's MILP: minimise Σ_j cost[j][pick
// j] + λn·(jobs without a configuration) with at most the type's GPUs used
// per type. From no allocation, it repeatedly applies the move of one job to
// another configuration (or none → some) that fits the free GPUs after the
// job releases its own and lowers the objective most per GPU added (moves
// that add no GPU rank first, by their decrease; ties: lower job index, then
// configuration), until no move lowers it.
//
// With start (the current configurations) it starts from them instead, as
// far as they fit in order; Allocate keeps the better of both (as the
// standalone Pollux keeps the better of its construction and "keep and
// admit").
func siaSolve(cost [][]float64, confs []siaConfig, types []siaType, lambdaN float64, start []int) []int {
	return siaGreedy(cost, confs, types, lambdaN, start, true)
}

// siaGreedy is siaSolve's loop; perGPU false ranks moves by their whole
// decrease instead of the decrease per GPU added.
func siaGreedy(cost [][]float64, confs []siaConfig, types []siaType, lambdaN float64, start []int, perGPU bool) []int {
	pick := make([]int, len(cost))
	free := make([]int, len(types))
	for t, ty := range types {
		free[t] = ty.per * len(ty.nodes)
	}
	for i := range pick {
		pick[i] = -1
		if start != nil && start[i] >= 0 && !math.IsNaN(cost[i][start[i]]) && confs[start[i]].r <= free[confs[start[i]].t] {
			pick[i] = start[i]
			free[confs[start[i]].t] -= confs[start[i]].r
		}
	}
	costOf := func(i, k int) float64 {
		if k < 0 {
			return lambdaN
		}
		return cost[i][k]
	}
	for iter := 0; iter < 4*len(cost)*len(confs)+16; iter++ {
		bi, bk := -1, -1
		bestFree, bestRate := 0.0, 0.0 // best decrease of a move adding no GPU; best decrease per GPU added
		for i, row := range cost {
			cur := pick[i]
			c0 := costOf(i, cur)
			for k, v := range row {
				if k == cur || math.IsNaN(v) {
					continue
				}
				cf := confs[k]
				avail := free[cf.t]
				held := 0
				if cur >= 0 && confs[cur].t == cf.t {
					held = confs[cur].r
				}
				if cf.r > avail+held {
					continue
				}
				dec := c0 - v
				if dec <= 1e-12 {
					continue
				}
				added := cf.r
				if cur >= 0 {
					added -= confs[cur].r
				}
				if added <= 0 {
					if dec > bestFree {
						bi, bk, bestFree = i, k, dec
					}
					continue
				}
				rate := dec / float64(added)
				if !perGPU {
					rate = dec
				}
				if bestFree == 0 && rate > bestRate {
					bi, bk, bestRate = i, k, rate
				}
			}
		}
		if bi < 0 {
			break
		}
		if cur := pick[bi]; cur >= 0 {
			free[confs[cur].t] += confs[cur].r
		}
		pick[bi] = bk
		free[confs[bk].t] -= confs[bk].r
	}
	return pick
}

// siaDPBudget bounds siaDP's work (states × jobs × (configurations + 1)):
// one GPU type of 64 GPUs and 160 jobs is about 0.2 M; Sia's heterogeneous
// cluster (24, 16 and 24 GPUs) is 10.6 k states, over budget from 20 jobs.
const siaDPBudget = 4_000_000

// siaDP solves sia.py's MILP exactly by dynamic programming over the GPUs
// used per type (a multiple-choice knapsack with one capacity per type): jobs
// in order, each taking no configuration (cost lambdaN) or one that fits,
// keeping per state the least objective (ties: the first found, no
// configuration before configurations in order). It reports false, doing
// nothing, when the states × jobs × (configurations + 1) exceed budget.
func siaDP(cost [][]float64, confs []siaConfig, types []siaType, lambdaN float64, budget int) ([]int, bool) {
	nt := len(types)
	caps := make([]int, nt)
	stride := make([]int, nt)
	states := 1
	for t, ty := range types {
		caps[t] = ty.per * len(ty.nodes)
		stride[t] = states
		states *= caps[t] + 1
		if states > budget {
			return nil, false
		}
	}
	if states*len(cost)*(len(confs)+1) > budget {
		return nil, false
	}
	use := make([]int, states*nt) // GPUs used per type of each state
	for st := range states {
		x := st
		for t := range nt {
			use[st*nt+t] = x % (caps[t] + 1)
			x /= caps[t] + 1
		}
	}
	inf := math.Inf(1)
	dp, ndp := make([]float64, states), make([]float64, states)
	for st := range dp {
		dp[st] = inf
	}
	dp[0] = 0
	choice := make([]int32, len(cost)*states)
	for i, row := range cost {
		for st := range ndp {
			ndp[st] = inf
		}
		ch := choice[i*states : (i+1)*states]
		for st, v := range dp {
			if v == inf {
				continue
			}
			if w := v + lambdaN; w < ndp[st] {
				ndp[st], ch[st] = w, -1
			}
			for k, c := range row {
				cf := confs[k]
				if math.IsNaN(c) || use[st*nt+cf.t]+cf.r > caps[cf.t] {
					continue
				}
				s2 := st + cf.r*stride[cf.t]
				if w := v + c; w < ndp[s2] {
					ndp[s2], ch[s2] = w, int32(k)
				}
			}
		}
		dp, ndp = ndp, dp
	}
	best := 0
	for st, v := range dp {
		if v < dp[best] {
			best = st
		}
	}
	pick := make([]int, len(cost))
	for i := len(cost) - 1; i >= 0; i-- {
		k := int(choice[i*states+best])
		pick[i] = k
		if k >= 0 {
			best -= confs[k].r * stride[confs[k].t]
		}
	}
	return pick, true
}

// siaBest is the best of siaGreedy from no allocation (by decrease per GPU
// and by whole decrease) and from the current allocation cur (per GPU).
func siaBest(cost [][]float64, confs []siaConfig, types []siaType, lambdaN float64, cur []int) []int {
	best := siaGreedy(cost, confs, types, lambdaN, nil, true)
	bv := siaObjective(cost, best, lambdaN)
	for _, c := range []struct {
		start  []int
		perGPU bool
	}{{nil, false}, {cur, true}} {
		if p := siaGreedy(cost, confs, types, lambdaN, c.start, c.perGPU); siaObjective(cost, p, lambdaN) < bv {
			best, bv = p, siaObjective(cost, p, lambdaN)
		}
	}
	return best
}

// siaObjective is Σ cost of the picks + lambdaN per job without one.
func siaObjective(cost [][]float64, pick []int, lambdaN float64) float64 {
	sum := 0.0
	for i, k := range pick {
		if k < 0 {
			sum += lambdaN
		} else {
			sum += cost[i][k]
		}
	}
	return sum
}

// place is sia.py's alloc_to_placement_fast on the chosen configurations:
// jobs keeping their configuration keep their nodes; the others, most GPUs
// first (then job order), take a whole free node of their type for each
// full node, then the fullest node of the type that fits the rest, else the
// emptiest ones.
func (s *siaAlloc) place(c *sim.Cluster, active []*sim.Job) {
	free := make([]int, c.NumNodes())
	for n := range free {
		f, e := c.NodeGPUs(sim.NodeID(n))
		free[n] = int(e - f)
	}
	s.out = slices.Grow(s.out[:0], len(active))[:len(active)]
	var order []int
	for i, j := range active {
		s.out[i] = nil
		k := s.pick[i]
		if k >= 0 && k == s.cur[i] {
			s.out[i] = append([]sim.NodeID(nil), j.Nodes...)
			for _, n := range j.Nodes {
				free[n]--
			}
		} else if k >= 0 {
			order = append(order, i)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return s.confs[s.pick[b]].r - s.confs[s.pick[a]].r })
	for _, i := range order {
		cf := s.confs[s.pick[i]]
		ty := &s.types[cf.t]
		left := cf.r
		var nodes []sim.NodeID
		for _, n := range ty.nodes {
			if left >= ty.per && free[n] == ty.per {
				free[n] = 0
				left -= ty.per
				for range ty.per {
					nodes = append(nodes, n)
				}
			}
		}
		for left > 0 {
			best := sim.NodeID(-1)
			for _, n := range ty.nodes {
				if free[n] >= left && (best < 0 || free[n] < free[best]) {
					best = n
				}
			}
			if best < 0 {
				for _, n := range ty.nodes {
					if free[n] > 0 && (best < 0 || free[n] > free[best]) {
						best = n
					}
				}
			}
			if best < 0 {
				break
			}
			k := min(left, free[best])
			free[best] -= k
			left -= k
			for range k {
				nodes = append(nodes, best)
			}
		}
		s.out[i] = nodes
	}
}

// Place implements rounds.Placer.
func (s *siaAlloc) Place(i int) []sim.NodeID { return s.out[i] }

// Rerate implements rounds.Rater.
func (s *siaAlloc) Rerate(v *sim.View, p *sim.Plan, running []*sim.Job) error {
	return s.rerate(v, p, running, s.round.Add(s.every))
}
