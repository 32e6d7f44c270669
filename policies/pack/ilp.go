package pack

import (
	"fmt"
	"math"
	"time"
)

// maxColumns bounds the ILP's group variables; a larger enumeration counts as
// hitting the budget (greedy decides).
const maxColumns = 500_000

// The ILP (docs/packer.md). Interchangeable GPUs form classes K (same model,
// mode, memory, client limit and multiset of occupants) with n_K members, and
// interchangeable pending jobs form kinds t (same workload, utilisation,
// memory, gpu_milli, QoS bound and eligibility) with n_t members. A group G is
// a multiset of kinds that a GPU of class K can take: room for it (clients,
// memory), every job of the GPU at or above its QoS bound, and a positive gain
// w(K,G) = (sum of the factors of occupants and G) - (sum of the occupants'
// factors now). One integer variable x(K,G) in [0, n_K] counts the GPUs of K
// that take G:
//
//	maximise   sum w(K,G) x(K,G)
//	subject to sum_G x(K,G)               <= n_K   for each class K (a GPU takes at most one group)
//	           sum_{K,G} m_t(G) x(K,G)    <= n_t   for each kind t  (a job is in at most one group)
//
// where m_t(G) is the multiplicity of t in G. With every class and kind a
// singleton this is the binary formulation over (GPU, group of jobs); merging
// interchangeable GPUs and jobs only removes symmetric copies, so the optimum
// is the same.

// mipModel is a maximisation with <= rows and bounded integer columns, column
// major (rows 0-based).
type mipModel struct {
	nrows    int
	obj      []float64
	rhs      []float64
	colStart []int32
	rowIdx   []int32
	vals     []float64
	ub       []float64
}

type mipStatus int

const (
	mipOptimal    mipStatus = iota // proved optimal
	mipSuboptimal                  // budget hit with an incumbent in x
	mipNoSolution                  // budget hit without an incumbent
)

// solveMIP solves m into x (len = columns). It is nil in a build without a
// solver (build tag lpsolve unset or cgo off).
var solveMIP func(m *mipModel, budget time.Duration, x []float64) (mipStatus, error)

// SolverAvailable reports whether this build has the ILP solver (lp_solve).
func SolverAvailable() bool { return solveMIP != nil }

// NoSolverWarning is Result.Warning when the ILP falls back to greedy for want
// of a solver.
const NoSolverWarning = "pack: ILP mode without a solver in this build (build with -tags lpsolve and liblpsolve55); greedy decided"

type column struct {
	class int32
	kinds []int32
	gain  float64
}

func (pk *Packer) solveILP(res *Result) {
	if solveMIP == nil {
		pk.greedy(res)
		res.Fallback, res.Warning = true, NoSolverWarning
		return
	}
	res.Mode = ILP
	p := pk.p
	var pend []int32
	for k := range pk.kinds {
		if !pk.kinds[k].key.occupant && pk.kinds[k].n > 0 {
			pend = append(pend, int32(k))
		}
	}
	nC := len(pk.classes) // eval never adds classes
	var cols []column
	var flat []int32
	var add []int32
	var cur int32
	budget := p.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	t0 := time.Now()
	evals, over := 0, false
	var rec func(from int)
	rec = func(from int) {
		for i := from; i < len(pend) && !over; i++ {
			k := pend[i]
			cnt := 0
			for _, a := range add {
				if a == k {
					cnt++
				}
			}
			if cnt >= pk.kinds[k].n || !pk.eligible(k, cur) {
				continue
			}
			add = append(add, k)
			if evals++; evals&1023 == 0 && (time.Since(t0) > budget || len(cols) > maxColumns) {
				over = true
			}
			if pk.fits(cur, add) {
				if sum, ok := pk.eval(cur, add); ok && sum-pk.classes[cur].base > eps {
					s := len(flat)
					flat = append(flat, add...)
					cols = append(cols, column{class: cur, kinds: flat[s:len(flat):len(flat)], gain: sum - pk.classes[cur].base})
				}
				rec(i)
			}
			add = add[:len(add)-1]
		}
	}
	for c := 0; c < nC; c++ {
		if len(pk.classes[c].gpus) > 0 {
			cur = int32(c)
			rec(0)
		}
	}
	if over {
		pk.greedy(res)
		res.TimedOut = true
		res.Warning = fmt.Sprintf("pack: ILP enumeration of groups hit its time budget of %v or %d columns; greedy decided", budget, maxColumns)
		return
	}
	cols = pk.dropDominated(cols)
	res.Kinds, res.Classes, res.Columns = len(pend), nC, len(cols)
	res.Objective = res.Baseline
	if len(cols) == 0 {
		res.Optimal = true
		return
	}
	// rows: classes 0..nC-1, then kinds (row nC + position in pend)
	kindRow := make([]int32, len(pk.kinds))
	for i, k := range pend {
		kindRow[k] = int32(nC + i)
	}
	m := &mipModel{nrows: nC + len(pend)}
	for c := 0; c < nC; c++ {
		m.rhs = append(m.rhs, float64(len(pk.classes[c].gpus)))
	}
	for _, k := range pend {
		m.rhs = append(m.rhs, float64(pk.kinds[k].n))
	}
	for _, col := range cols {
		m.colStart = append(m.colStart, int32(len(m.rowIdx)))
		m.obj = append(m.obj, col.gain)
		m.rowIdx = append(m.rowIdx, col.class)
		m.vals = append(m.vals, 1)
		ub := len(pk.classes[col.class].gpus)
		for i := 0; i < len(col.kinds); {
			j := i
			for j < len(col.kinds) && col.kinds[j] == col.kinds[i] {
				j++
			}
			m.rowIdx = append(m.rowIdx, kindRow[col.kinds[i]])
			m.vals = append(m.vals, float64(j-i))
			ub = min(ub, pk.kinds[col.kinds[i]].n/(j-i))
			i = j
		}
		m.ub = append(m.ub, float64(ub))
	}
	m.colStart = append(m.colStart, int32(len(m.rowIdx)))
	budget -= time.Since(t0)
	if budget <= 0 {
		budget = time.Microsecond
	}
	x := make([]float64, len(cols))
	st, err := solveMIP(m, budget, x)
	if err != nil {
		pk.greedy(res)
		res.Fallback, res.Warning = true, "pack: ILP solver failed ("+err.Error()+"); greedy decided"
		return
	}
	res.TimedOut = st != mipOptimal
	res.Optimal = st == mipOptimal
	ok := st != mipNoSolution && pk.decode(cols, x, res)
	if res.TimedOut {
		// the better of the incumbent and greedy
		ilpObj, ilpOf, placed := res.Objective, append([]int(nil), res.GPUOf...), res.Placed
		pk.greedy(res)
		if ok && ilpObj > res.Objective+eps {
			copy(res.GPUOf, ilpOf)
			res.Objective, res.Placed, res.Mode = ilpObj, placed, ILP
		}
		res.Warning = "pack: ILP hit its time budget of " + budget.String() + "; decision is the better of its incumbent and greedy"
		return
	}
	if !ok {
		pk.greedy(res)
		res.Fallback, res.Optimal, res.Warning = true, false, "pack: ILP solution inconsistent; greedy decided"
	}
}

// decode turns the column values x into res.GPUOf and res.Objective: each
// class's GPUs take its chosen groups in column order (ascending GPU index) and
// each kind's jobs are handed out in the problem's order. It reports false when
// x breaks a constraint.
func (pk *Packer) decode(cols []column, x []float64, res *Result) bool {
	for j := range res.GPUOf {
		res.GPUOf[j] = -1
	}
	res.Objective, res.Placed = res.Baseline, 0
	usedGPU := make([]int, len(pk.classes))
	next := make([]int, len(pk.kinds)) // next job position per kind
	jobsOf := make([][]int, len(pk.kinds))
	for j, k := range pk.jobKind {
		jobsOf[k] = append(jobsOf[k], j)
	}
	for ci, col := range cols {
		n := int(math.Round(x[ci]))
		if n < 0 || math.Abs(x[ci]-float64(n)) > 1e-6 {
			return false
		}
		for ; n > 0; n-- {
			cl := &pk.classes[col.class]
			if usedGPU[col.class] >= len(cl.gpus) {
				return false
			}
			g := cl.gpus[usedGPU[col.class]]
			usedGPU[col.class]++
			for _, k := range col.kinds {
				if next[k] >= len(jobsOf[k]) {
					return false
				}
				res.GPUOf[jobsOf[k][next[k]]] = g
				next[k]++
				res.Placed++
			}
			res.Objective += col.gain
		}
	}
	return true
}

// dropDominated removes the columns that another column of the same class
// dominates: G minus one job has at least G's gain (a smaller group that is at
// least as good uses fewer jobs, so replacing G by it in any solution keeps it
// feasible and no worse; the optimum is unchanged). Chains of dominance end at a
// kept column, so comparing with immediate sub-groups that are themselves
// columns, kept or not, suffices.
func (pk *Packer) dropDominated(cols []column) []column {
	gain := make(map[string]float64, len(cols))
	key := func(c int32, ks []int32, skip int) string {
		b := make([]byte, 0, 4*(len(ks)+1))
		b = append(b, byte(c), byte(c>>8), byte(c>>16), byte(c>>24))
		for i, k := range ks {
			if i != skip {
				b = append(b, byte(k), byte(k>>8), byte(k>>16), byte(k>>24))
			}
		}
		return string(b)
	}
	for _, col := range cols {
		gain[key(col.class, col.kinds, -1)] = col.gain
	}
	kept := cols[:0]
	for _, col := range cols {
		dominated := false
		for i := range col.kinds {
			if i > 0 && col.kinds[i] == col.kinds[i-1] {
				continue
			}
			if g, ok := gain[key(col.class, col.kinds, i)]; ok && g >= col.gain {
				dominated = true
				break
			}
		}
		if !dominated {
			kept = append(kept, col)
		}
	}
	return kept
}
