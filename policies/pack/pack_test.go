package pack

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"pgregory.net/rapid"
)

// matrixInterf is a test interference model: m[a][b] is workload a's speed
// factor next to b alone; groups of 3+ add slowdowns as calibrate.Table does
// (1 / (1 + sum_j (1/f(i|j) - 1))). Unknown workloads (-1) pair at 0.5.
type matrixInterf struct{ m [][]float64 }

func (f *matrixInterf) WorkloadID(string) (int32, bool) { return -1, false }

func (f *matrixInterf) pair(a, b int32) float64 {
	if a < 0 || b < 0 {
		return 0.5
	}
	return f.m[a][b]
}

func (f *matrixInterf) Factors(_ string, _ sim.SharingMode, ws []int32, _ []float64, out []float64) bool {
	for i := range ws {
		slow := 0.0
		for j := range ws {
			if j != i {
				slow += 1/f.pair(ws[i], ws[j]) - 1
			}
		}
		out[i] = 1 / (1 + slow)
	}
	return true
}

func randomMatrix(r *rand.Rand, n int) *matrixInterf {
	m := make([][]float64, n)
	for a := range m {
		m[a] = make([]float64, n)
		for b := range m[a] {
			m[a][b] = 0.3 + 0.7*r.Float64()
		}
	}
	return &matrixInterf{m}
}

// randomProblem draws an instance of at most maxGPUs GPUs and maxJobs jobs:
// two GPU models, time slicing and MPS, occupants, memory, client limits,
// max-slowdown and serving bounds, model restrictions and MPS caps.
func randomProblem(r *rand.Rand, maxGPUs, maxJobs int, mode Mode) *Problem {
	const nw = 4
	in := randomMatrix(r, nw)
	models := []string{"A100", "H100"}
	job := func(id int) Job {
		j := Job{ID: id, Workload: int32(r.IntN(nw)), SMUtil: float64(r.IntN(10)) / 10, MemMiB: int64(5000 * (1 + r.IntN(6)))}
		switch r.IntN(4) {
		case 0:
			j.MaxSlowdown = 1.2 + 2*r.Float64()
		case 1:
			j.MinSpeed = 0.4 + 0.3*r.Float64()
		}
		if r.IntN(6) == 0 {
			j.Milli = 500
		}
		return j
	}
	p := &Problem{Speeds: &sim.SharingConfig{Interference: in}, Mode: mode}
	for g := range 1 + r.IntN(maxGPUs) {
		gp := GPU{ID: g, Model: models[r.IntN(2)], Mode: sim.ShareTimeSlice, MemMiB: int64(40000 * (1 + r.IntN(2))), MaxClients: 2 + r.IntN(3)}
		switch r.IntN(6) {
		case 0, 1:
			gp.Mode = sim.ShareMPS
		case 2:
			gp.Mode, gp.MemMiB = sim.ShareExclusive, 0
			p.GPUs = append(p.GPUs, gp)
			continue
		}
		for o := range r.IntN(3) {
			if o < gp.MaxClients-1 {
				gp.Occupants = append(gp.Occupants, job(100+o))
			}
		}
		p.GPUs = append(p.GPUs, gp)
	}
	for i := range 1 + r.IntN(maxJobs) {
		j := job(i)
		switch r.IntN(8) {
		case 0:
			j.Models = []string{models[r.IntN(2)]}
		case 1:
			j.Accepts = sim.AcceptTimeSlice
		}
		p.Jobs = append(p.Jobs, j)
	}
	return p
}

// bruteForce is the optimum over every assignment of jobs to GPUs (or none),
// by dynamic programming over (GPU, set of jobs still unassigned): for each GPU
// every subset of the remaining jobs is tried, each checked and scored from
// scratch by Verify. It returns the optimal objective.
func bruteForce(t tb, p *Problem) float64 {
	n := len(p.Jobs)
	full := 1<<n - 1
	base, err := Verify(p, none(n))
	if err != nil {
		t.Fatal(err)
	}
	// gain[g][S] for every subset S of jobs that fits GPU g (NaN = infeasible)
	gain := make([][]float64, len(p.GPUs))
	dec := make([]int, n)
	for g := range p.GPUs {
		gain[g] = make([]float64, full+1)
		for s := 1; s <= full; s++ {
			gain[g][s] = math.NaN()
			if bits.OnesCount(uint(s)) > clientsOf(&p.GPUs[g]) {
				continue
			}
			for j := range dec {
				dec[j] = -1
				if s>>j&1 == 1 {
					dec[j] = g
				}
			}
			if obj, err := Verify(p, dec); err == nil {
				gain[g][s] = obj - base
			}
		}
	}
	// best[mask] for GPUs g.. with jobs mask available
	best := make([]float64, full+1)
	nb := make([]float64, full+1)
	for g := len(p.GPUs) - 1; g >= 0; g-- {
		for mask := 0; mask <= full; mask++ {
			v := best[mask] // GPU g takes nothing
			for s := mask; s > 0; s = (s - 1) & mask {
				if w := gain[g][s]; !math.IsNaN(w) {
					v = max(v, w+best[mask&^s])
				}
			}
			nb[mask] = v
		}
		best, nb = nb, best
	}
	return base + best[full]
}

func none(n int) []int {
	d := make([]int, n)
	for i := range d {
		d[i] = -1
	}
	return d
}

// tb is what solve needs of a *testing.T or *rapid.T.
type tb interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// testPacker is reused across instances, as a placement reuses its Packer.
var testPacker Packer

func solve(t tb, p *Problem) *Result {
	var res Result
	if err := testPacker.Solve(p, &res); err != nil {
		t.Fatal(err)
	}
	obj, err := Verify(p, res.GPUOf)
	if err != nil {
		t.Fatalf("mode %s: decision breaks a constraint: %v", p.Mode, err)
	}
	if math.Abs(obj-res.Objective) > 1e-6 {
		t.Fatalf("mode %s: reported objective %.9f, decision's %.9f", p.Mode, res.Objective, obj)
	}
	return &res
}

// TestGreedyNeverAboveBruteForce: on random instances (<= 8 GPUs, <= 12 jobs)
// greedy's decision is valid and its objective never above the optimum.
func TestGreedyNeverAboveBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	n := 300
	if testing.Short() {
		n = 60
	}
	for i := range n {
		p := randomProblem(r, 8, 12, Greedy)
		res := solve(t, p)
		opt := bruteForce(t, p)
		if res.Objective > opt+1e-6 {
			t.Fatalf("instance %d: greedy %.6f above the optimum %.6f", i, res.Objective, opt)
		}
	}
}

// TestQoSProperty: no decision, in either mode, puts a job (new or an occupant
// it joins) below its max-slowdown or serving bound, over memory or over the
// client limit, or on a GPU it may not use (Verify checks each from scratch),
// and the reported objective is the decision's.
func TestQoSProperty(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		seed := rapid.Uint64().Draw(rt, "seed")
		mode := rapid.SampledFrom([]Mode{Greedy, ILP}).Draw(rt, "mode")
		p := randomProblem(rand.New(rand.NewPCG(seed, 7)), 8, 12, mode)
		solve(rt, p)
	})
}

// TestHandWorked: one empty GPU and one running job X; pending J1 then J2.
// J1 next to X: 0.9 each (GPU gain 0.8); J2 next to X: 0.35 each (gain -0.3);
// J1 with J2: 0.5 each (gain 0). Greedy gives J1 the empty GPU (gain 1 > 0.8)
// and then J2 has no positive gain: objective 1 + 1 = 2. The optimum puts J1
// with X and J2 on the empty GPU: 1.8 + 1 = 2.8.
func TestHandWorked(t *testing.T) {
	in := &matrixInterf{[][]float64{
		// X    J1   J2
		{0.5, 0.9, 0.35}, // X
		{0.9, 0.5, 0.5},  // J1
		{0.35, 0.5, 0.5}, // J2
	}}
	p := &Problem{
		Speeds: &sim.SharingConfig{Interference: in},
		GPUs: []GPU{
			{ID: 0, Model: "V100", Mode: sim.ShareTimeSlice, Occupants: []Job{{Workload: 0}}},
			{ID: 1, Model: "V100", Mode: sim.ShareTimeSlice},
		},
		Jobs: []Job{{ID: 1, Workload: 1}, {ID: 2, Workload: 2}},
	}
	res := solve(t, p)
	if res.GPUOf[0] != 1 || res.GPUOf[1] != -1 || math.Abs(res.Objective-2) > 1e-9 || res.Baseline != 1 {
		t.Fatalf("greedy: %+v", res)
	}
	if got := bruteForce(t, p); math.Abs(got-2.8) > 1e-9 {
		t.Fatalf("optimum %.6f, want 2.8", got)
	}
	// a max slowdown of 1.05 on X forbids J1 next to it
	p.GPUs[0].Occupants[0].MaxSlowdown = 1.05
	if got := bruteForce(t, p); math.Abs(got-2) > 1e-9 {
		t.Fatalf("optimum with X's bound %.6f, want 2", got)
	}
	p.Mode = ILP
	res = solve(t, p)
	if math.Abs(res.Objective-2) > 1e-9 {
		t.Fatalf("ilp with X's bound: %+v", res)
	}
	if SolverAvailable() {
		p.GPUs[0].Occupants[0].MaxSlowdown = 0
		res = solve(t, p)
		if res.GPUOf[0] != 0 || res.GPUOf[1] != 1 || math.Abs(res.Objective-2.8) > 1e-9 || !res.Optimal {
			t.Fatalf("ilp: %+v", res)
		}
	}
}

// TestILPFallsBackWithoutSolver: in a build without lp_solve, mode ILP decides
// exactly as greedy and says so.
func TestILPFallsBackWithoutSolver(t *testing.T) {
	if SolverAvailable() {
		t.Skip("built with the solver (-tags lpsolve)")
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 50 {
		p := randomProblem(r, 8, 12, Greedy)
		g := solve(t, p)
		p.Mode = ILP
		res := solve(t, p)
		if !res.Fallback || res.Warning != NoSolverWarning || res.Mode != Greedy || res.Optimal {
			t.Fatalf("fallback not reported: %+v", res)
		}
		for i := range g.GPUOf {
			if g.GPUOf[i] != res.GPUOf[i] {
				t.Fatalf("fallback differs from greedy: %v vs %v", res.GPUOf, g.GPUOf)
			}
		}
	}
}

func TestSolveRejectsBadInput(t *testing.T) {
	var pk Packer
	var res Result
	p := &Problem{GPUs: []GPU{{Mode: sim.ShareMIG}}, Speeds: &sim.SharingConfig{}}
	if err := pk.Solve(p, &res); err == nil {
		t.Fatal("MIG GPU accepted")
	}
	p = &Problem{Jobs: []Job{{MaxSlowdown: 0.5}}, Speeds: &sim.SharingConfig{}}
	if err := pk.Solve(p, &res); err == nil {
		t.Fatal("max slowdown 0.5 accepted")
	}
	if _, err := ParseMode("exact"); err == nil {
		t.Fatal("mode exact accepted")
	}
}
