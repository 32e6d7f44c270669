package gavel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// allocate computes the allocation x[j][w] (time share of job j on worker type
// w) for the active jobs: Scheduler._compute_allocation with the policy's
// get_allocation.
func (g *Gavel) allocate(now float64) error {
	g.LPs++
	nj, nw := len(g.active), len(g.types)
	if nj == 0 {
		return nil
	}
	tput := make([][]float64, nj)
	sf := make([]float64, nj)
	rem := make([]float64, nj)
	since := make([]float64, nj)
	for i, gj := range g.active {
		tput[i], sf[i], rem[i] = gj.tput, float64(gj.sf), g.remaining(gj)
		since[i] = max(now-gj.j.Spec.Submit.Seconds(), 0)
	}
	workers := make([]float64, nw)
	for w, wt := range g.types {
		workers[w] = float64(len(wt.gpus))
	}
	var x [][]float64
	var err error
	switch g.policy {
	case MaxMinFairness:
		x, err = maxMinFairness(tput, sf, workers)
	case FinishTimeFairness:
		x, err = finishTimeFairness(tput, sf, rem, since, workers)
	case MaxSumThroughput, CostNormalized:
		cost := make([]float64, nw)
		for w, wt := range g.types {
			cost[w] = 1
			if c, ok := g.costs[wt.name]; ok && g.policy == CostNormalized {
				cost[w] = c
			}
		}
		x, err = maxSumThroughput(tput, sf, workers, cost)
	default:
		x, err = minTotalDuration(tput, sf, rem, workers)
	}
	if err != nil {
		return fmt.Errorf("gavel: %s allocation: %w", g.policy, err)
	}
	for i, gj := range g.active {
		gj.alloc = x[i]
	}
	return nil
}

// baseLP builds the shared constraints of Policy.get_base_constraints in
// standard form: variables x[j][w] (j-major), then one slack per row. Rows:
// per type Σ_j sf_j x[j][w] <= workers_w; per job Σ_w x[j][w] <= 1; then the
// extra rows (coefficients over x and any extra variables, with their slack sign
// and right-hand side). It returns A, b and the number of columns.
type lpBuilder struct {
	nj, nw, extra int // x variables, then extra variables (e.g. the max-min t)
	rows          [][]float64
	rhs           []float64
	slack         []float64 // per row: +1 (<=) or -1 (>=)
}

func newLP(sf, workers []float64, extra int) *lpBuilder {
	b := &lpBuilder{nj: len(sf), nw: len(workers), extra: extra}
	for w := range workers {
		r := b.row()
		for j := range sf {
			r[j*b.nw+w] = sf[j]
		}
		b.add(r, +1, workers[w])
	}
	for j := range sf {
		r := b.row()
		for w := 0; w < b.nw; w++ {
			r[j*b.nw+w] = 1
		}
		b.add(r, +1, 1)
	}
	return b
}

func (b *lpBuilder) row() []float64 { return make([]float64, b.nj*b.nw+b.extra) }

func (b *lpBuilder) add(r []float64, slack, rhs float64) {
	b.rows, b.slack, b.rhs = append(b.rows, r), append(b.slack, slack), append(b.rhs, rhs)
}

// solve minimises c·(x, extra) over the rows; ok false when infeasible.
func (b *lpBuilder) solve(c []float64) ([]float64, bool, error) {
	nv := b.nj*b.nw + b.extra
	m := len(b.rows)
	A := mat.NewDense(m, nv+m, nil)
	rhs := make([]float64, m)
	for i, r := range b.rows {
		s := b.slack[i]
		rhs[i] = b.rhs[i]
		if rhs[i] < 0 { // the simplex wants b >= 0 for its phase 1
			rhs[i], s = -rhs[i], -s
			for k, v := range r {
				A.Set(i, k, -v)
			}
		} else {
			for k, v := range r {
				A.Set(i, k, v)
			}
		}
		A.Set(i, nv+i, s)
	}
	cc := make([]float64, nv+m)
	copy(cc, c)
	_, x, err := lp.Simplex(cc, A, rhs, 1e-10, nil)
	if errors.Is(err, lp.ErrInfeasible) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return x[:nv], true, nil
}

func unflatten(x []float64, nj, nw int) [][]float64 {
	out := make([][]float64, nj)
	for j := range out {
		out[j] = make([]float64, nw)
		for w := range out[j] {
			out[j][w] = min(max(x[j*nw+w], 0), 1) // clip(0, 1), as Gavel
		}
	}
	return out
}

// minTotalDuration is MinTotalDurationPolicy.get_allocation: binary search for
// the smallest makespan T (from [100 s, 1e6 s], stopping when max < 1.05 min,
// then widening tenfold while nothing is feasible) for which
// Σ_w T[j][w] x[j][w] >= remaining_steps_j / T for every job; the allocation of
// the smallest feasible T found.
func minTotalDuration(tput [][]float64, sf, rem, workers []float64) ([][]float64, error) {
	nj, nw := len(sf), len(workers)
	feasible := func(T float64) ([]float64, bool, error) {
		b := newLP(sf, workers, 1)
		for j := range sf {
			r := b.row()
			for w := 0; w < nw; w++ {
				r[j*nw+w] = tput[j][w]
			}
			r[nj*nw] = -rem[j] / T
			b.add(r, -1, rem[j]/T)
		}
		r := b.row()
		r[nj*nw] = 1
		b.add(r, +1, 1)
		c := make([]float64, nj*nw+1)
		c[nj*nw] = -1
		x, ok, err := b.solve(c)
		if ok {
			x = x[:nj*nw]
		}
		return x, ok, err
	}
	maxT, minT := 1e6, 100.0
	lastMax := maxT
	var best []float64
	bestT := 0.0
	for best == nil {
		for 1.05*minT < maxT {
			T := (minT + maxT) / 2
			x, ok, err := feasible(T)
			if err != nil {
				return nil, err
			}
			if ok {
				best, maxT, bestT = x, T, T
			} else {
				minT = T
			}
		}
		if lastMax > 1e15 {
			return nil, errors.New("no feasible makespan below 1e15 s (a job cannot run on any GPU type)")
		}
		maxT, minT = lastMax*10, lastMax
		lastMax *= 10
	}
	return unflatten(centerMTD(best, bestT, tput, sf, rem, workers), nj, nw), nil
}

// centerMTD moves the feasible allocation x of minTotalDuration at makespan T
// to the analytic center of its constraints (see center).
func centerMTD(x []float64, T float64, tput [][]float64, sf, rem, workers []float64) []float64 {
	need := make([]float64, len(rem))
	for j := range rem {
		need[j] = rem[j] / T
	}
	return centerNeed(x, need, tput, sf, workers)
}

// centerNeed moves the feasible allocation x of the constraints "job j's
// throughput is at least need[j]" (and the base constraints) to their
// analytic center (see center).
func centerNeed(x []float64, need []float64, tput [][]float64, sf, workers []float64) []float64 {
	nj, nw := len(sf), len(workers)
	var G [][]float64
	var h []float64
	row := func() []float64 { return make([]float64, nj*nw) }
	for w := range workers {
		r := row()
		for j := range sf {
			r[j*nw+w] = sf[j]
		}
		G, h = append(G, r), append(h, workers[w])
	}
	for j := range sf {
		r := row()
		for w := 0; w < nw; w++ {
			r[j*nw+w] = 1
		}
		G, h = append(G, r), append(h, 1)
	}
	for j := range sf {
		r := row()
		for w := 0; w < nw; w++ {
			r[j*nw+w] = -tput[j][w]
		}
		G, h = append(G, r), append(h, -need[j])
	}
	for k := 0; k < nj*nw; k++ {
		r := row()
		r[k] = -1
		G, h = append(G, r), append(h, 0)
	}
	// a strictly feasible start: x's rate margin, mixed with a small uniform share
	delta := math.Inf(1)
	for j := range sf {
		var rate float64
		for w := 0; w < nw; w++ {
			rate += tput[j][w] * x[j*nw+w]
		}
		if need[j] > 0 {
			delta = min(delta, rate/need[j]-1)
		}
	}
	if !(delta > 1e-9) {
		return x
	}
	theta := delta / (2 * (1 + delta))
	var load float64
	for j := range sf {
		load += sf[j]
	}
	x0 := make([]float64, len(x))
	for j := range sf {
		for w := 0; w < nw; w++ {
			u := min(1/(2*float64(nw)), workers[w]/(2*load))
			if tput[j][w] == 0 {
				u = 1e-9
			}
			x0[j*nw+w] = (1-theta)*x[j*nw+w] + theta*u
		}
	}
	return center(G, h, x0)
}

// maxMinFairness is MaxMinFairnessPolicyWithPerf.get_allocation (all priority
// weights 1): maximise min_j Σ_w T[j][w] x[j][w] sf_j / iso_j, where iso_j =
// Σ_w T[j][w] x_iso[j][w] is the job's throughput under the
// heterogeneity-agnostic allocation x_iso (MaxMinFairnessPolicy: the same
// problem with every throughput 1).
func maxMinFairness(tput [][]float64, sf, workers []float64) ([][]float64, error) {
	nj, nw := len(sf), len(workers)
	norm, err := isolatedThroughputs(tput, sf, workers)
	if err != nil {
		return nil, err
	}
	x, err := maxMin(tput, sf, workers, norm)
	if err != nil {
		return nil, err
	}
	return unflatten(x, nj, nw), nil
}

// isolatedThroughputs returns each job's throughput under Gavel's
// heterogeneity-agnostic max-min allocation (MaxMinFairnessPolicy: every
// usable type counts as throughput 1), the isolated_throughputs of
// FinishTimeFairnessPolicyWithPerf and the normaliser of maxMinFairness.
func isolatedThroughputs(tput [][]float64, sf, workers []float64) ([]float64, error) {
	nj, nw := len(sf), len(workers)
	ones := make([][]float64, nj)
	for j := range ones {
		ones[j] = make([]float64, nw)
		for w := range ones[j] {
			if tput[j][w] > 0 {
				ones[j][w] = 1
			}
		}
	}
	unit := make([]float64, nj)
	for j := range unit {
		unit[j] = 1
	}
	iso, err := maxMin(ones, sf, workers, unit)
	if err != nil {
		return nil, err
	}
	thr := make([]float64, nj)
	for j := range thr {
		for w := 0; w < nw; w++ {
			thr[j] += tput[j][w] * iso[j*nw+w]
		}
		if thr[j] <= 0 {
			return nil, fmt.Errorf("job %d gets no isolated throughput", j)
		}
	}
	return thr, nil
}

// finishTimeFairness is FinishTimeFairnessPolicyWithPerf.get_allocation
// (scheduler/policies/finish_time_fairness.py): minimise max_j ρ_j(x), the
// Themis finish-time fairness ratio
//
//	ρ_j(x) = (since_j + rem_j / thr_j(x)) / (since_j + rem_j / iso_j)
//
// where since_j is the time since the job arrived, rem_j its remaining steps,
// thr_j(x) = Σ_w T[j][w] x[j][w] and iso_j its throughput under the
// heterogeneity-agnostic max-min allocation (isolatedThroughputs). Gavel hands
// the convex program to cvxpy; here ρ_j(x) <= R is the linear constraint
// thr_j(x) >= rem_j / (R·E_j - since_j) (E_j the denominator), so the optimum
// is found by bisection on R over LP feasibility problems. R = 1 is always
// feasible (the isolated allocation), so R* is in (max_j since_j/E_j, 1]; the
// search stops at a relative gap of 1e-4, and the allocation is the analytic
// center of the constraints at the smallest feasible R found, as for
// minTotalDuration.
func finishTimeFairness(tput [][]float64, sf, rem, since, workers []float64) ([][]float64, error) {
	iso, err := isolatedThroughputs(tput, sf, workers)
	if err != nil {
		return nil, err
	}
	return finishTimeFairnessIso(tput, sf, rem, since, workers, iso)
}

// finishTimeFairnessIso is finishTimeFairness with the isolated throughputs
// given.
func finishTimeFairnessIso(tput [][]float64, sf, rem, since, workers, iso []float64) ([][]float64, error) {
	nj, nw := len(sf), len(workers)
	E := make([]float64, nj)
	lo := 0.0
	for j := range E {
		E[j] = since[j] + rem[j]/iso[j]
		if E[j] > 0 {
			lo = max(lo, since[j]/E[j])
		}
	}
	need := func(R float64) ([]float64, bool) {
		n := make([]float64, nj)
		for j := range n {
			if rem[j] <= 0 {
				continue
			}
			d := R*E[j] - since[j]
			if d <= 0 {
				return nil, false
			}
			n[j] = rem[j] / d
		}
		return n, true
	}
	feasible := func(R float64) ([]float64, []float64, bool, error) {
		n, ok := need(R)
		if !ok {
			return nil, nil, false, nil
		}
		b := newLP(sf, workers, 1)
		for j := range sf {
			r := b.row()
			for w := 0; w < nw; w++ {
				r[j*nw+w] = tput[j][w]
			}
			r[nj*nw] = -n[j]
			b.add(r, -1, n[j])
		}
		r := b.row()
		r[nj*nw] = 1
		b.add(r, +1, 1)
		c := make([]float64, nj*nw+1)
		c[nj*nw] = -1
		x, ok, err := b.solve(c)
		if ok {
			x = x[:nj*nw]
		}
		return x, n, ok, err
	}
	hi := 1.0
	best, bestNeed, ok, err := feasible(hi)
	for err == nil && !ok && hi < 1e6 { // numerically, R = 1 may miss by a hair
		hi *= 1.01
		best, bestNeed, ok, err = feasible(hi)
	}
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("no feasible finish-time fairness allocation")
	}
	for hi-lo > 1e-4*hi {
		R := (lo + hi) / 2
		x, n, ok, err := feasible(R)
		if err != nil {
			return nil, err
		}
		if ok {
			best, bestNeed, hi = x, n, R
		} else {
			lo = R
		}
	}
	return unflatten(centerNeed(best, bestNeed, tput, sf, workers), nj, nw), nil
}

// maxSumThroughput is ThroughputNormalizedByCostSumWithPerfSLOs.get_allocation
// without SLOs (scheduler/policies/max_sum_throughput.py): maximise
// Σ_j Σ_w T[j][w] / cost_w · x[j][w] under the base constraints (cost 1 for
// every type: ThroughputSumWithPerf). A linear program; the simplex returns a
// vertex of the optimal face where ECOS would return an interior point of it
// when the optimum is not unique.
func maxSumThroughput(tput [][]float64, sf, workers, cost []float64) ([][]float64, error) {
	nj, nw := len(sf), len(workers)
	b := newLP(sf, workers, 0)
	c := make([]float64, nj*nw)
	for j := range sf {
		for w := 0; w < nw; w++ {
			c[j*nw+w] = -tput[j][w] / cost[w]
		}
	}
	x, ok, err := b.solve(c)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("infeasible")
	}
	return unflatten(x, nj, nw), nil
}

// maxMin maximises t subject to Σ_w tput[j][w] sf_j x[j][w] / norm_j >= t for
// every job and the base constraints, and returns x (j-major).
//
// Jobs with identical rows (throughputs, scale factor and norm) are solved as
// one job type (see jobClasses): the problem is symmetric in such jobs, so
// giving each of them the same share loses nothing (the average of an optimal
// x over the permutations of identical jobs is feasible and has the same t),
// and the LP shrinks from one row per job to one per job type (Gavel's
// simulations draw jobs from 26 job types). Without duplicates the LP is the
// per-job one, row for row.
func maxMin(tput [][]float64, sf, workers, norm []float64) ([]float64, error) {
	nj, nw := len(sf), len(workers)
	class, rep, count := jobClasses(tput, sf, norm)
	ct := make([][]float64, len(rep))
	csf := make([]float64, len(rep))
	cnorm := make([]float64, len(rep))
	for c, j := range rep {
		ct[c], csf[c], cnorm[c] = tput[j], sf[j], norm[j]
	}
	y, _, err := maxMinLP(ct, csf, workers, cnorm, count)
	if err != nil {
		return nil, err
	}
	x := make([]float64, nj*nw)
	for j, c := range class {
		copy(x[j*nw:(j+1)*nw], y[c*nw:(c+1)*nw])
	}
	return x, nil
}

// maxMinLP is maxMin over job types: count[c] jobs of type c, each with
// throughputs tput[c], scale factor sf[c] and norm norm[c], all given the
// same shares y[c][w]. The per-type capacity rows weigh each type by its
// count. It returns y (type-major) and the optimal t.
func maxMinLP(tput [][]float64, sf, workers, norm []float64, count []int) ([]float64, float64, error) {
	nc, nw := len(sf), len(workers)
	csf := make([]float64, nc)
	for c := range csf {
		csf[c] = sf[c] * float64(count[c])
	}
	b := newLP(csf, workers, 1)
	for c := range sf {
		r := b.row()
		for w := 0; w < nw; w++ {
			r[c*nw+w] = tput[c][w] * sf[c] / norm[c]
		}
		r[nc*nw] = -1 // ... - t >= 0
		b.add(r, -1, 0)
	}
	cost := make([]float64, nc*nw+1)
	cost[nc*nw] = -1 // maximise t
	y, ok, err := b.solve(cost)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, errors.New("infeasible")
	}
	return y[:nc*nw], y[nc*nw], nil
}

// jobClasses groups the jobs whose throughput row, scale factor and norm are
// bit-for-bit equal: class[j] is job j's class, numbered by first appearance;
// rep[c] the first job of class c and count[c] its size.
func jobClasses(tput [][]float64, sf, norm []float64) (class, rep, count []int) {
	class = make([]int, len(sf))
	ids := map[string]int{}
	key := make([]byte, 0, 8*(len(workersOf(tput))+2))
	for j := range sf {
		key = key[:0]
		for _, v := range tput[j] {
			key = binary.LittleEndian.AppendUint64(key, math.Float64bits(v))
		}
		key = binary.LittleEndian.AppendUint64(key, math.Float64bits(sf[j]))
		key = binary.LittleEndian.AppendUint64(key, math.Float64bits(norm[j]))
		c, ok := ids[string(key)]
		if !ok {
			c = len(rep)
			ids[string(key)] = c
			rep = append(rep, j)
			count = append(count, 0)
		}
		class[j] = c
		count[c]++
	}
	return class, rep, count
}

// workersOf returns the first throughput row (its length is the number of
// worker types), or nil without jobs.
func workersOf(tput [][]float64) []float64 {
	if len(tput) == 0 {
		return nil
	}
	return tput[0]
}

// center moves a feasible allocation of the constraints G x <= h (x >= 0
// included as rows) to their analytic center, the point maximising Σ log of
// the slacks, by damped Newton steps. Gavel's policies solve their feasibility
// problems with ECOS, an interior-point solver, whose answer to "maximise 1"
// lies near that center rather than at a vertex as the simplex's does; the
// allocation then spreads every job over the types it can use, which is what
// Gavel's priorities act on. x0 must be strictly feasible; on any numerical
// trouble the last strictly feasible point is returned.
func center(G [][]float64, h, x0 []float64) []float64 {
	n := len(x0)
	x := slices.Clone(x0)
	slack := func(x []float64, s []float64) bool {
		for i, r := range G {
			v := h[i]
			for k, a := range r {
				v -= a * x[k]
			}
			if !(v > 0) {
				return false
			}
			s[i] = v
		}
		return true
	}
	phi := func(s []float64) float64 {
		var f float64
		for _, v := range s {
			f -= math.Log(v)
		}
		return f
	}
	s := make([]float64, len(G))
	if !slack(x, s) {
		return x0
	}
	grad := make([]float64, n)
	H := mat.NewSymDense(n, nil)
	xn := make([]float64, n)
	sn := make([]float64, len(G))
	for iter := 0; iter < 100; iter++ {
		clear(grad)
		H.Zero()
		for i, r := range G {
			inv := 1 / s[i]
			for a, ga := range r {
				if ga == 0 {
					continue
				}
				grad[a] += ga * inv
				for b := a; b < n; b++ {
					if gb := r[b]; gb != 0 {
						H.SetSym(a, b, H.At(a, b)+ga*gb*inv*inv)
					}
				}
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(H) {
			return x
		}
		d := mat.NewVecDense(n, nil)
		if err := ch.SolveVecTo(d, mat.NewVecDense(n, grad)); err != nil {
			return x
		}
		lambda2 := 0.0
		for k := range n {
			lambda2 += grad[k] * d.AtVec(k)
		}
		if lambda2 < 1e-12 {
			return x
		}
		f0, t := phi(s), 1.0
		for ; t > 1e-12; t /= 2 {
			for k := range n {
				xn[k] = x[k] - t*d.AtVec(k)
			}
			if slack(xn, sn) && phi(sn) <= f0-0.25*t*lambda2 {
				break
			}
		}
		if t <= 1e-12 {
			return x
		}
		copy(x, xn)
		copy(s, sn)
	}
	return x
}
