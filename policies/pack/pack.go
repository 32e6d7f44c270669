// Package pack is an interference-aware packer: a pure decision library that
// chooses which pending shareable 1-GPU jobs go on which time-slicing or MPS GPU
// (an empty one, or joining the jobs already there) so as to maximise the total
// normalised throughput, subject to GPU memory, the client limit and QoS (each
// job's maximum slowdown and a serving job's minimum speed), for new jobs and for
// the co-runners they join alike. It has two modes: a greedy rule and an exact
// integer linear program solved by lp_solve (build tag lpsolve; without it the
// ILP falls back to greedy with a warning). docs/packer.md describes the model.
//
// The speed factors come from a Speeds, which *sim.SharingConfig implements with
// the very function the engine applies at every co-location change, so the
// packer's predictions are the engine's speeds.
package pack

import (
	"fmt"
	"math"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// Mode is how the packer decides.
type Mode uint8

// Modes.
const (
	// Greedy: jobs in the given order, each to the GPU whose total throughput
	// rises most (see docs/packer.md).
	Greedy Mode = iota
	// ILP: the exact optimum of the integer program over feasible groups,
	// solved by lp_solve within a time budget.
	ILP
)

func (m Mode) String() string {
	if m == ILP {
		return "ilp"
	}
	return "greedy"
}

// ParseMode maps "greedy" or "ilp" to a Mode.
func ParseMode(s string) (Mode, error) {
	switch s {
	case "greedy":
		return Greedy, nil
	case "ilp":
		return ILP, nil
	}
	return 0, fmt.Errorf("unknown packer mode %q (want greedy or ilp)", s)
}

// Speeds gives the speed factors (1 = alone on the GPU) of jobs co-located on
// one GPU; *sim.SharingConfig implements it (its Factors is the engine's). It
// must be deterministic and independent of the order of the jobs.
type Speeds interface {
	Factors(gpuModel string, mode sim.SharingMode, ws []int32, solo []float64, milli []sim.MilliGPU, out []float64) (measured bool)
}

// Job is a job as the packer sees it: a pending job to place, or an occupant
// already running on a GPU.
type Job struct {
	// ID is the caller's identifier (not used by the packer).
	ID int
	// Workload is the interference workload ID (sim.Interference.WorkloadID;
	// -1 = unknown).
	Workload int32
	// SMUtil is the solo SM utilisation in [0, 1] (0 = unknown).
	SMUtil float64
	// MemMiB is its GPU memory (0 = unknown, counts 0).
	MemMiB int64
	// Milli is its gpu_milli (MPS active-thread percentage x 10; 0 or 1000 =
	// uncapped).
	Milli sim.MilliGPU
	// MaxSlowdown bounds its slowdown: its speed factor must stay >=
	// 1/MaxSlowdown (0 = no bound; otherwise >= 1).
	MaxSlowdown float64
	// MinSpeed is a serving job's latency bound expressed as the lowest speed
	// factor at which its predicted P99 stays within its SLA (0 = none).
	MinSpeed float64
	// Accepts is the sharing a pending job accepts (ignored for occupants);
	// the zero value, AcceptExclusive, is read as "any" (the caller has already
	// decided the job shares).
	Accepts sim.JobSharing
	// Models restricts a pending job to these GPU models (nil = any).
	Models []string
}

// bound is the lowest speed factor the job tolerates.
func (j *Job) bound() float64 {
	b := j.MinSpeed
	if j.MaxSlowdown > 0 {
		b = max(b, 1/j.MaxSlowdown)
	}
	return b
}

// GPU is a time-slicing or MPS GPU that may take jobs, or a free
// exclusive-mode GPU (one job, alone at factor 1; no memory check).
type GPU struct {
	// ID is the caller's identifier; ties between equally good GPUs go to the
	// lower index in Problem.GPUs.
	ID int
	// Model is the GPU model (for Speeds and Job.Models).
	Model string
	// Mode is sim.ShareTimeSlice, sim.ShareMPS or sim.ShareExclusive (a free
	// GPU that takes one job).
	Mode sim.SharingMode
	// MemMiB is its memory (0 = not checked).
	MemMiB int64
	// MaxClients is the most jobs it holds (0 = sim.DefaultSharingClients; 1
	// in exclusive mode).
	MaxClients int
	// Occupants are the jobs already on it.
	Occupants []Job
}

// Problem is one packing decision.
type Problem struct {
	GPUs []GPU
	// Jobs are the pending jobs, in priority order (greedy takes them in this
	// order; the ILP gives interchangeable jobs out in this order).
	Jobs   []Job
	Speeds Speeds
	Mode   Mode
	// Budget is the ILP's time budget (0 = DefaultBudget).
	Budget time.Duration
}

// DefaultBudget is the ILP's time budget when Problem.Budget is 0.
const DefaultBudget = time.Second

// Result is a packing decision.
type Result struct {
	// GPUOf[i] is the index in Problem.GPUs of the GPU job i goes to, or -1
	// (it stays pending).
	GPUOf []int
	// Objective is the total normalised throughput after the decision: the sum
	// of the speed factors of every job on the problem's GPUs (occupants and
	// placed jobs; a pending job counts 0). Baseline is the same sum before.
	Objective, Baseline float64
	// Placed is the number of jobs placed.
	Placed int
	// Mode is the mode that produced the decision (Greedy after a fallback).
	Mode Mode
	// Optimal is true when the ILP proved the decision optimal.
	Optimal bool
	// TimedOut is true when the ILP hit its budget (the decision is then the
	// better of its incumbent and greedy's).
	TimedOut bool
	// Fallback is true when ILP was asked for but greedy decided (no solver in
	// this build, or a solver failure); Warning says why.
	Fallback bool
	Warning  string
	// Kinds, Classes and Columns size the ILP (interchangeable jobs, GPU
	// classes, group variables).
	Kinds, Classes, Columns int
	// Elapsed is the decision's wall time.
	Elapsed time.Duration
}

// eps is the smallest throughput gain worth a placement, and the tolerance of
// the QoS checks.
const eps = 1e-9

// Packer solves packing problems, reusing its buffers between calls (not safe
// for concurrent use).
type Packer struct {
	p *Problem

	kindIdx map[kindKey]int32
	kinds   []kind
	jobKind []int32

	classIdx map[classKey]int32
	classes  []class
	gpuClass []int32

	skIdx  map[skKey]int32
	spdIdx map[classKey]int32 // speed classes: classKey with mem 0, clients 0, occ = speed kinds
	spds   []spdClass

	// scratch for group evaluation
	ws     []int32
	solo   []float64
	milli  []sim.MilliGPU
	out    []float64
	bnd    []float64
	occ    []int32
	keyB   []byte
	skList []skKey
	active []int32
	first  []int
	gk     [][]float64
}

// kindKey identifies interchangeable jobs: the same attributes give the same
// speeds, memory, QoS and eligibility.
type kindKey struct {
	w        int32
	u        float64
	mem      int64
	milli    sim.MilliGPU
	bound    float64
	accepts  sim.JobSharing
	models   string
	occupant bool
}

type kind struct {
	key kindKey
	n   int   // pending jobs of this kind
	sk  int32 // speed kind
	job *Job
}

// skKey identifies jobs that the speed function cannot tell apart. By its
// contract (independent of member order) such jobs in one group get the same
// factor.
type skKey struct {
	w     int32
	u     float64
	milli sim.MilliGPU
}

// spdClass is a GPU model, mode and multiset of speed kinds: what the speed
// function sees. Its factors, alone and with one more job of each speed kind,
// are computed once.
type spdClass struct {
	members []int32 // sorted speed kinds
	base    float64 // sum of the members' factors
	fac     []float64
	addSum  []float64   // per added speed kind (NaN = not yet computed)
	addFac  [][]float64 // factors of sorted(members + added)
	addMemb [][]int32
}

// classKey identifies interchangeable GPUs: same model, mode, memory, client
// limit and multiset of occupant kinds.
type classKey struct {
	model   string
	mode    sim.SharingMode
	mem     int64
	clients int
	occ     string // sorted occupant kind IDs, 4 bytes each
}

type class struct {
	key     classKey
	occ     []int32 // sorted occupant kinds
	memUsed int64
	base    float64 // sum of the occupants' factors now
	spd     int32   // speed class
	gpus    []int   // GPU indexes in this class, ascending
	next    []int32 // class after adding one job of kind k (-1 unknown), grown on demand
}

// Solve decides p into res (reusing res.GPUOf). It returns an error only for an
// invalid problem.
func (pk *Packer) Solve(p *Problem, res *Result) error {
	t0 := time.Now()
	if p.Speeds == nil {
		return fmt.Errorf("pack: Problem.Speeds is nil")
	}
	for i := range p.GPUs {
		g := &p.GPUs[i]
		switch g.Mode {
		case sim.ShareTimeSlice, sim.ShareMPS:
		case sim.ShareExclusive:
			if len(g.Occupants) > 0 {
				return fmt.Errorf("pack: GPU %d: an exclusive-mode GPU with occupants", g.ID)
			}
		default:
			return fmt.Errorf("pack: GPU %d: mode %s (want timeslice, mps or exclusive)", g.ID, g.Mode)
		}
	}
	check := func(j *Job) error {
		if s := j.MaxSlowdown; s != 0 && !(s >= 1) || math.IsInf(s, 0) {
			return fmt.Errorf("pack: job %d: max slowdown %v (want 0 or a finite number >= 1)", j.ID, s)
		}
		if m := j.MinSpeed; !(m >= 0) || math.IsInf(m, 0) {
			return fmt.Errorf("pack: job %d: min speed %v (want a finite number >= 0)", j.ID, m)
		}
		return nil
	}
	for i := range p.Jobs {
		if err := check(&p.Jobs[i]); err != nil {
			return err
		}
	}
	for i := range p.GPUs {
		for o := range p.GPUs[i].Occupants {
			if err := check(&p.GPUs[i].Occupants[o]); err != nil {
				return err
			}
		}
	}
	pk.setup(p)
	*res = Result{GPUOf: res.GPUOf[:0], Mode: p.Mode}
	for range p.Jobs {
		res.GPUOf = append(res.GPUOf, -1)
	}
	for _, c := range pk.classes {
		res.Baseline += c.base * float64(len(c.gpus))
	}
	switch p.Mode {
	case ILP:
		pk.solveILP(res)
	default:
		pk.greedy(res)
	}
	res.Elapsed = time.Since(t0)
	return nil
}

// setup interns the kinds and the initial GPU classes.
func (pk *Packer) setup(p *Problem) {
	pk.p = p
	if pk.kindIdx == nil {
		pk.kindIdx = map[kindKey]int32{}
		pk.classIdx = map[classKey]int32{}
		pk.skIdx = map[skKey]int32{}
		pk.spdIdx = map[classKey]int32{}
	}
	clear(pk.kindIdx)
	clear(pk.classIdx)
	clear(pk.skIdx)
	clear(pk.spdIdx)
	pk.skList = pk.skList[:0]
	pk.spds = pk.spds[:0]
	pk.kinds = pk.kinds[:0]
	pk.classes = pk.classes[:0]
	pk.jobKind = pk.jobKind[:0]
	for i := range p.Jobs {
		k := pk.kindOf(&p.Jobs[i], false)
		pk.kinds[k].n++
		pk.jobKind = append(pk.jobKind, k)
	}
	pk.gpuClass = pk.gpuClass[:0]
	for i := range p.GPUs {
		g := &p.GPUs[i]
		pk.occ = pk.occ[:0]
		for o := range g.Occupants {
			pk.occ = append(pk.occ, pk.kindOf(&g.Occupants[o], true))
		}
		sortKinds(pk.occ)
		c := pk.classOf(g.Model, g.Mode, g.MemMiB, clientsOf(g), pk.occ)
		pk.classes[c].gpus = append(pk.classes[c].gpus, i)
		pk.gpuClass = append(pk.gpuClass, c)
	}
}

func clientsOf(g *GPU) int {
	if g.Mode == sim.ShareExclusive {
		return 1
	}
	if g.MaxClients > 0 {
		return g.MaxClients
	}
	return sim.DefaultSharingClients
}

func sortKinds(a []int32) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

func (pk *Packer) kindOf(j *Job, occupant bool) int32 {
	key := kindKey{w: j.Workload, u: j.SMUtil, mem: j.MemMiB, milli: j.Milli, bound: j.bound(), occupant: occupant}
	if !occupant {
		key.accepts = j.Accepts
		if len(j.Models) > 0 {
			key.models = joinModels(j.Models)
		}
	}
	if k, ok := pk.kindIdx[key]; ok {
		return k
	}
	k := int32(len(pk.kinds))
	sk, ok := pk.skIdx[skKey{j.Workload, j.SMUtil, j.Milli}]
	if !ok {
		sk = int32(len(pk.skList))
		pk.skIdx[skKey{j.Workload, j.SMUtil, j.Milli}] = sk
		pk.skList = append(pk.skList, skKey{j.Workload, j.SMUtil, j.Milli})
	}
	pk.kinds = append(pk.kinds, kind{key: key, job: j, sk: sk})
	pk.kindIdx[key] = k
	return k
}

func joinModels(ms []string) string {
	n := 0
	for _, m := range ms {
		n += len(m) + 1
	}
	b := make([]byte, 0, n)
	for _, m := range ms {
		b = append(b, m...)
		b = append(b, 0)
	}
	return string(b)
}

// classOf interns the class of a GPU with the given occupant kinds (sorted).
func (pk *Packer) classOf(model string, mode sim.SharingMode, mem int64, clients int, occ []int32) int32 {
	pk.keyB = pk.keyB[:0]
	for _, k := range occ {
		pk.keyB = append(pk.keyB, byte(k), byte(k>>8), byte(k>>16), byte(k>>24))
	}
	key := classKey{model: model, mode: mode, mem: mem, clients: clients}
	if c, ok := pk.classIdx[classKey{model: model, mode: mode, mem: mem, clients: clients, occ: string(pk.keyB)}]; ok {
		return c
	}
	key.occ = string(pk.keyB)
	c := int32(len(pk.classes))
	cl := class{key: key, occ: append([]int32(nil), occ...)}
	for _, k := range occ {
		cl.memUsed += pk.kinds[k].key.mem
	}
	// speed class
	sks := make([]int32, len(occ))
	for i, k := range occ {
		sks[i] = pk.kinds[k].sk
	}
	sortKinds(sks)
	cl.spd = pk.spdClassOf(model, mode, sks)
	sp := &pk.spds[cl.spd]
	cl.base = sp.base
	pk.classes = append(pk.classes, cl)
	pk.classIdx[key] = c
	return c
}

// factorOf is the factor of speed kind sk in a group (members sorted).
func factorOf(members []int32, fac []float64, sk int32) float64 {
	for i, m := range members {
		if m == sk {
			return fac[i]
		}
	}
	panic("pack: speed kind not in group")
}

// spdClassOf interns a speed class (sks sorted; kept) and computes its factors.
func (pk *Packer) spdClassOf(model string, mode sim.SharingMode, sks []int32) int32 {
	pk.keyB = pk.keyB[:0]
	for _, k := range sks {
		pk.keyB = append(pk.keyB, byte(k), byte(k>>8), byte(k>>16), byte(k>>24))
	}
	key := classKey{model: model, mode: mode, occ: string(pk.keyB)}
	if s, ok := pk.spdIdx[key]; ok {
		return s
	}
	s := int32(len(pk.spds))
	pk.spdIdx[key] = s
	sp := spdClass{members: sks, fac: make([]float64, len(sks))}
	sp.base = pk.factors(model, mode, sks, sp.fac)
	pk.spds = append(pk.spds, sp)
	return s
}

// factors evaluates the speed function on a group of speed kinds into out and
// returns the sum.
func (pk *Packer) factors(model string, mode sim.SharingMode, sks []int32, out []float64) float64 {
	if len(sks) == 0 {
		return 0
	}
	pk.ws, pk.solo, pk.milli = pk.ws[:0], pk.solo[:0], pk.milli[:0]
	for _, k := range sks {
		key := pk.skList[k]
		pk.ws = append(pk.ws, key.w)
		pk.solo = append(pk.solo, key.u)
		pk.milli = append(pk.milli, key.milli)
	}
	pk.p.Speeds.Factors(model, mode, pk.ws, pk.solo, pk.milli, out)
	sum := 0.0
	for _, f := range out {
		sum += f
	}
	return sum
}

// gainAdd is the throughput gain of one job of kind k joining a GPU of class
// c, or -Inf when a member of the GPU would fall below its QoS bound; the
// speed function is called once per (speed class, speed kind).
func (pk *Packer) gainAdd(c, k int32) float64 {
	cl := &pk.classes[c]
	sp := &pk.spds[cl.spd]
	sk := pk.kinds[k].sk
	for int(sk) >= len(sp.addSum) {
		sp.addSum = append(sp.addSum, math.NaN())
		sp.addFac = append(sp.addFac, nil)
		sp.addMemb = append(sp.addMemb, nil)
	}
	if math.IsNaN(sp.addSum[sk]) {
		m := make([]int32, 0, len(sp.members)+1)
		m = append(append(m, sp.members...), sk)
		sortKinds(m)
		f := make([]float64, len(m))
		sp.addSum[sk] = pk.factors(cl.key.model, cl.key.mode, m, f)
		sp.addFac[sk], sp.addMemb[sk] = f, m
	}
	m, f := sp.addMemb[sk], sp.addFac[sk]
	if factorOf(m, f, sk) < pk.kinds[k].key.bound-eps {
		return math.Inf(-1)
	}
	for _, o := range cl.occ {
		if factorOf(m, f, pk.kinds[o].sk) < pk.kinds[o].key.bound-eps {
			return math.Inf(-1)
		}
	}
	return sp.addSum[sk] - cl.base
}

// eval returns the sum of the speed factors of class c's occupants plus the
// added kinds, and whether every one of them meets its QoS bound.
func (pk *Packer) eval(c int32, add []int32) (sum float64, ok bool) {
	cl := &pk.classes[c]
	n := len(cl.occ) + len(add)
	if n == 0 {
		return 0, true
	}
	pk.ws, pk.solo, pk.milli, pk.out, pk.bnd = pk.ws[:0], pk.solo[:0], pk.milli[:0], pk.out[:0], pk.bnd[:0]
	for _, list := range [2][]int32{cl.occ, add} {
		for _, k := range list {
			kd := &pk.kinds[k]
			pk.ws = append(pk.ws, kd.key.w)
			pk.solo = append(pk.solo, kd.key.u)
			pk.milli = append(pk.milli, kd.key.milli)
			pk.bnd = append(pk.bnd, kd.key.bound)
			pk.out = append(pk.out, 0)
		}
	}
	pk.p.Speeds.Factors(cl.key.model, cl.key.mode, pk.ws, pk.solo, pk.milli, pk.out)
	ok = true
	for i, f := range pk.out {
		sum += f
		if f < pk.bnd[i]-eps {
			ok = false
		}
	}
	return sum, ok
}

// eligible reports whether a job of kind k may join a GPU of class c at all
// (mode accepted, model allowed); capacity and QoS are checked separately.
func (pk *Packer) eligible(k, c int32) bool {
	kd := &pk.kinds[k]
	cl := &pk.classes[c]
	if a := kd.key.accepts; a != sim.AcceptExclusive && cl.key.mode != sim.ShareExclusive && !a.Accepts(cl.key.mode) {
		return false
	}
	if kd.key.models != "" {
		found := false
		for _, m := range kd.job.Models {
			if m == cl.key.model {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// fits reports whether class c has room (clients, memory) for the added kinds.
func (pk *Packer) fits(c int32, add []int32) bool {
	cl := &pk.classes[c]
	if len(cl.occ)+len(add) > cl.key.clients {
		return false
	}
	if cl.key.mem > 0 {
		m := cl.memUsed
		for _, k := range add {
			m += pk.kinds[k].key.mem
		}
		if m > cl.key.mem {
			return false
		}
	}
	return true
}

// Verify checks a decision against the problem from scratch: every placed job
// on an existing GPU it may use, within the client limit and memory, and every
// job on a touched GPU (occupant or new) at or above its QoS bound. It returns
// the decision's objective. Tests and callers that distrust a solver use it.
func Verify(p *Problem, gpuOf []int) (objective float64, err error) {
	if len(gpuOf) != len(p.Jobs) {
		return 0, fmt.Errorf("decision has %d entries for %d jobs", len(gpuOf), len(p.Jobs))
	}
	added := make([][]int, len(p.GPUs))
	for j, g := range gpuOf {
		if g < -1 || g >= len(p.GPUs) {
			return 0, fmt.Errorf("job %d: GPU index %d out of range", j, g)
		}
		if g >= 0 {
			added[g] = append(added[g], j)
		}
	}
	for gi := range p.GPUs {
		g := &p.GPUs[gi]
		all := make([]*Job, 0, len(g.Occupants)+len(added[gi]))
		for o := range g.Occupants {
			all = append(all, &g.Occupants[o])
		}
		for _, j := range added[gi] {
			jb := &p.Jobs[j]
			if a := jb.Accepts; a != sim.AcceptExclusive && g.Mode != sim.ShareExclusive && !a.Accepts(g.Mode) {
				return 0, fmt.Errorf("job %d: does not accept mode %s of GPU %d", j, g.Mode, gi)
			}
			if len(jb.Models) > 0 {
				found := false
				for _, m := range jb.Models {
					found = found || m == g.Model
				}
				if !found {
					return 0, fmt.Errorf("job %d: model %s of GPU %d not allowed", j, g.Model, gi)
				}
			}
			all = append(all, jb)
		}
		if len(all) == 0 {
			continue
		}
		if len(added[gi]) > 0 && len(all) > clientsOf(g) {
			return 0, fmt.Errorf("GPU %d: %d jobs over its client limit %d", gi, len(all), clientsOf(g))
		}
		var mem int64
		ws, solo, milli, out := make([]int32, len(all)), make([]float64, len(all)), make([]sim.MilliGPU, len(all)), make([]float64, len(all))
		for i, jb := range all {
			mem += jb.MemMiB
			ws[i], solo[i], milli[i] = jb.Workload, jb.SMUtil, jb.Milli
		}
		if len(added[gi]) > 0 && g.MemMiB > 0 && mem > g.MemMiB {
			return 0, fmt.Errorf("GPU %d: %d MiB over its memory %d MiB", gi, mem, g.MemMiB)
		}
		p.Speeds.Factors(g.Model, g.Mode, ws, solo, milli, out)
		for i, f := range out {
			objective += f
			if len(added[gi]) > 0 && f < all[i].bound()-eps {
				return 0, fmt.Errorf("GPU %d: member %d at speed %.4f below its bound %.4f", gi, i, f, all[i].bound())
			}
		}
	}
	return objective, nil
}
