package placement

import (
	"fmt"
	"log"
	"math"
	"strconv"
	"time"

	"github.com/gpusim/gpusim/policies/pack"
	"github.com/gpusim/gpusim/sim"
)

// packPlacer is the interference-aware packer (package policies/pack,
// docs/packer.md) as a placement:
// "pack:mode=greedy|ilp,maxSlowdown=2,budget=1s,window=32".
//
// On a cluster with shared-mode pools, a 1-GPU, 1-replica job that accepts time
// slicing or MPS goes where the packer puts it. At each scheduling point (a new
// virtual time, or a change of the number of pending plus running jobs) the
// packer decides once for all such pending jobs (mode ilp: the first window of
// them), in the engine's pending order,
// over the time-slicing and MPS GPUs (free, or with room beside their sharers)
// and the free exclusive-mode GPUs, with the engine's own speed factors
// (sim.SharingConfig.Factors) and every job's maximum slowdown (maxSlowdown,
// for new jobs and the sharers they join). Place then returns the planned GPU
// after checking it against the live cluster (Cluster.CanShare or a free GPU,
// the node's CPU and memory, Placement.Allow, and the QoS of the GPU's current
// sharers). A job the plan leaves pending, or whose planned GPU no longer
// works, is decided alone on the live state (same rule, one job): it runs
// where it adds throughput within every bound, else it waits. So the queue
// policy's order decides which jobs run first, and the packer where they run
// (and which later jobs it keeps room for). Every other job (gangs, multi-GPU, exclusive, MIG-only, or any job on
// a cluster without sharing) is placed by best-fit.
type packPlacer struct {
	mode        pack.Mode
	maxSlowdown float64
	budget      time.Duration
	window      int
	best        bucketPlacer

	v     *sim.View
	pk    pack.Packer
	prob  pack.Problem
	res   pack.Result
	gpus  []sim.GPUID // problem GPU index -> GPU id
	occ   [][]pack.Job
	plan  map[sim.JobRef]sim.GPUID // this point's decision (-1: left pending)
	now   sim.Time
	count int
	fresh bool

	// Decisions counts packer decisions; TimedOut those where the ILP hit its
	// budget; Fallbacks those where ILP was asked for and greedy decided.
	Decisions, TimedOut, Fallbacks int64
	warned                         bool
}

func newPack(a *placerArgs) (Placer, error) {
	p := &packPlacer{best: bucketPlacer{mode: bestFit}, maxSlowdown: 2, budget: pack.DefaultBudget, window: 32}
	if v, ok := a.str("mode"); ok {
		m, err := pack.ParseMode(v)
		if err != nil {
			return nil, fmt.Errorf("mode: %w", err)
		}
		p.mode = m
	}
	if v, ok := a.str("maxSlowdown"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || f != 0 && f < 1 || math.IsInf(f, 0) {
			return nil, fmt.Errorf("maxSlowdown: must be 0 (no bound) or a number >= 1, got %q", v)
		}
		p.maxSlowdown = f
	}
	if v, ok := a.str("budget"); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("budget: must be a positive duration (e.g. 500ms), got %q", v)
		}
		p.budget = d
	}
	if v, ok := a.str("window"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("window: must be a whole number >= 1, got %q", v)
		}
		p.window = n
	}
	if err := a.done(); err != nil {
		return nil, err
	}
	if p.mode == pack.ILP && !pack.SolverAvailable() {
		log.Printf("placement pack:mode=ilp: %s", pack.NoSolverWarning)
		p.warned = true
	}
	return p, nil
}

func (p *packPlacer) Name() string { return "pack:mode=" + p.mode.String() }

// Prepare keeps the view: the packer decides over all pending jobs.
func (p *packPlacer) Prepare(v *sim.View) error {
	p.v = v
	p.fresh = false
	return nil
}

// packs reports whether the packer decides for job spec s.
func packs(c *sim.Cluster, s *sim.JobSpec) bool {
	if !c.SharingOn() || s.Replicas != 1 || s.GPUsPerReplica != 1 {
		return false
	}
	a := s.Accepts()
	return a.Accepts(sim.ShareTimeSlice) || a.Accepts(sim.ShareMPS)
}

func (p *packPlacer) Place(c *sim.Cluster, j *sim.Job, out *Placement) bool {
	s := &j.Spec
	if !packs(c, s) || p.v == nil || p.v.Cluster() != c {
		// the packer needs the running jobs: without Prepare it is best-fit
		return p.best.Place(c, j, out)
	}
	out.reset()
	if !QuickFit(c, s) {
		return false
	}
	p.refresh(c)
	if g, ok := p.plan[j.Ref]; ok && g >= 0 && p.usable(c, j, g, out) {
		return p.put(c, j, g, out)
	}
	// left pending by the plan, not in it, or its GPU no longer works: this
	// job alone on the live state (the queue's order comes first: a job the
	// plan passes over still runs where it adds throughput)
	if g := p.decide(c, j); g >= 0 && p.usable(c, j, g, out) {
		return p.put(c, j, g, out)
	}
	return false
}

// put returns GPU g and counts j among its sharers for the QoS checks of later
// placements at this point (the caller starts the placement it is given).
func (p *packPlacer) put(c *sim.Cluster, j *sim.Job, g sim.GPUID, out *Placement) bool {
	out.Nodes = append(out.Nodes, c.GPUNode(g))
	out.GPUs = append(out.GPUs, g)
	if c.GPUMode(g) != sim.ShareExclusive {
		p.occ[g] = append(p.occ[g], p.occupant(j))
	}
	return true
}

// refresh re-plans when the scheduling point changed.
func (p *packPlacer) refresh(c *sim.Cluster) {
	n := p.v.PendingCount() + len(p.v.Running())
	if p.fresh && p.v.Now() == p.now && n == p.count {
		return
	}
	p.fresh, p.now, p.count = true, p.v.Now(), n
	if p.plan == nil {
		p.plan = map[sim.JobRef]sim.GPUID{}
	}
	clear(p.plan)
	p.build(c, nil)
	for j := range p.v.Pending() {
		if p.mode == pack.ILP && len(p.prob.Jobs) == p.window {
			break // later jobs are decided one by one at their turn
		}
		if packs(c, &j.Spec) {
			p.prob.Jobs = append(p.prob.Jobs, p.job(j))
		}
	}
	p.solveMode(p.mode)
	for i := range p.prob.Jobs {
		g := sim.GPUID(-1)
		if x := p.res.GPUOf[i]; x >= 0 {
			g = p.gpus[x]
		}
		p.plan[sim.JobRef(p.prob.Jobs[i].ID)] = g
	}
}

// decide plans job j alone on the live state, over the GPUs whose node can
// host it, and returns its GPU or -1.
func (p *packPlacer) decide(c *sim.Cluster, j *sim.Job) sim.GPUID {
	p.build(c, func(n sim.NodeID) bool { return hostable(c, n, &j.Spec, 1, 0) > 0 })
	p.prob.Jobs = append(p.prob.Jobs, p.job(j))
	p.solveMode(pack.Greedy) // for one job greedy is the optimum
	if x := p.res.GPUOf[0]; x >= 0 {
		return p.gpus[x]
	}
	return -1
}

func (p *packPlacer) solveMode(m pack.Mode) {
	p.prob.Mode, p.prob.Budget = m, p.budget
	if err := p.pk.Solve(&p.prob, &p.res); err != nil {
		panic(err) // the problem is built here: a bug
	}
	p.Decisions++
	if p.res.TimedOut {
		p.TimedOut++
	}
	if p.res.Fallback {
		p.Fallbacks++
		if !p.warned {
			log.Printf("placement %s: %s", p.Name(), p.res.Warning)
			p.warned = true
		}
	}
}

// job is j as the packer sees it.
func (p *packPlacer) job(j *sim.Job) pack.Job {
	s := &j.Spec
	return pack.Job{ID: int(j.Ref), Workload: j.WorkloadID(), SMUtil: s.SMUtil, MemMiB: s.GPUMemMiB,
		Milli: s.GPUMilli, MaxSlowdown: p.maxSlowdown, MinSpeed: servingMinSpeed(s), Accepts: s.Accepts(), Models: s.GPUModels}
}

// servingMinSpeed is a serving job's QoS bound for the packer (the lowest speed
// at which its predicted P99 meets its SLA, sim.ServingMinSpeed), 0 for other
// jobs (docs/serving.md).
func servingMinSpeed(s *sim.JobSpec) float64 {
	if s.Serving == nil {
		return 0
	}
	return s.Serving.MinSpeed()
}

// build fills p.prob.GPUs (and p.gpus) from the live cluster: time-slicing and
// MPS GPUs that are free or shared with room, with their sharers as occupants,
// and free exclusive-mode GPUs; node filters them (nil = all). Jobs are reset.
func (p *packPlacer) build(c *sim.Cluster, node func(sim.NodeID) bool) {
	sc := p.v.Sharing()
	if sc == nil {
		sc = &sim.SharingConfig{}
	}
	p.prob.Speeds = sc
	p.prob.GPUs, p.prob.Jobs, p.gpus = p.prob.GPUs[:0], p.prob.Jobs[:0], p.gpus[:0]
	p.occupants(c)
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		spec := c.Node(n)
		if spec.GPUs == 0 || node != nil && !node(n) {
			continue
		}
		clients := int(spec.SharingClients)
		if clients <= 0 {
			clients = sim.DefaultSharingClients
		}
		first, end := c.NodeGPUs(n)
		for g := first; g < end; g++ {
			mode := c.GPUMode(g)
			k := c.Sharers(g)
			switch {
			case mode == sim.ShareExclusive && c.GPUUsed(g) == 0:
				p.prob.GPUs = append(p.prob.GPUs, pack.GPU{ID: int(g), Model: spec.GPUModel, Mode: mode})
			case (mode == sim.ShareTimeSlice || mode == sim.ShareMPS) && (k > 0 && k < clients || k == 0 && c.GPUUsed(g) == 0):
				p.prob.GPUs = append(p.prob.GPUs, pack.GPU{ID: int(g), Model: spec.GPUModel, Mode: mode,
					MemMiB: spec.GPUMemMiB, MaxClients: clients, Occupants: p.occ[g]})
			default:
				continue
			}
			p.gpus = append(p.gpus, g)
		}
	}
}

// occupants rebuilds p.occ, the sharers of each GPU, from the running jobs.
func (p *packPlacer) occupants(c *sim.Cluster) {
	if len(p.occ) != int(c.NumGPUs()) {
		p.occ = make([][]pack.Job, c.NumGPUs())
	}
	for g := range p.occ {
		p.occ[g] = p.occ[g][:0]
	}
	for _, j := range p.v.Running() {
		if len(j.GPUs) == 1 && c.Sharers(j.GPUs[0]) > 0 {
			p.occ[j.GPUs[0]] = append(p.occ[j.GPUs[0]], p.occupant(j))
		}
	}
}

func (p *packPlacer) occupant(j *sim.Job) pack.Job {
	s := &j.Spec
	return pack.Job{ID: int(j.Ref), Workload: j.WorkloadID(), SMUtil: s.SMUtil, MemMiB: s.GPUMemMiB,
		Milli: s.GPUMilli, MaxSlowdown: p.maxSlowdown, MinSpeed: servingMinSpeed(s)}
}

// usable checks a planned GPU against the live cluster: the engine accepts the
// job there (Cluster.CanShare, which includes serving jobs' SLA bounds), the node hosts it, Allow admits it, and every job then on the GPU
// keeps its bound.
func (p *packPlacer) usable(c *sim.Cluster, j *sim.Job, g sim.GPUID, out *Placement) bool {
	s := &j.Spec
	n := c.GPUNode(g)
	if !s.AllowsModel(c.Node(n).GPUModel) || hostable(c, n, s, 1, 0) == 0 || !out.allowed(n) {
		return false
	}
	switch c.GPUMode(g) {
	case sim.ShareExclusive:
		return c.GPUUsed(g) == 0
	case sim.ShareTimeSlice, sim.ShareMPS:
		if !c.CanShare(s, g) {
			return false
		}
	default:
		return false
	}
	if c.Sharers(g) == 0 {
		return true
	}
	// QoS with the live sharers (the plan may predate other starts)
	if len(p.occ[g]) != c.Sharers(g) {
		p.occupants(c)
	}
	occ := p.occ[g]
	k := len(occ) + 1
	ws, solo, milli, f := make([]int32, k), make([]float64, k), make([]sim.MilliGPU, k), make([]float64, k)
	for i := range occ {
		ws[i], solo[i], milli[i] = occ[i].Workload, occ[i].SMUtil, occ[i].Milli
	}
	ws[k-1], solo[k-1], milli[k-1] = j.WorkloadID(), s.SMUtil, s.GPUMilli
	p.prob.Speeds.Factors(c.Node(n).GPUModel, c.GPUMode(g), ws, solo, milli, f)
	b := 0.0
	if p.maxSlowdown > 0 {
		b = 1 / p.maxSlowdown
	}
	for i := range f {
		if f[i] < b-1e-9 {
			return false
		}
	}
	return true
}
