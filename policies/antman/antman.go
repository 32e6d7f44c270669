// Package antman simulates AntMan (Xiao et al., OSDI 2020) as the policy
// "antman": resource-guarantee jobs run as if on dedicated GPUs, opportunistic
// jobs use GPUs' leftover compute and memory (device-level sharing) or idle
// GPUs, and yield at once, at the scheduling point where a guarantee job needs
// their GPU. docs/colocation.md lists the rules, the parameters and every
// difference from the paper.
package antman

import (
	"errors"
	"fmt"
	"slices"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/internal/coloc"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are antman's parameters. A job is opportunistic when its priority is
// below OpportunisticPriorityBelow, or its queue is in OpportunisticQueues, or
// its class in OpportunisticClasses; every other job is a resource-guarantee
// job.
type Params struct {
	// OpportunisticPriorityBelow: jobs with a priority below it are
	// opportunistic (default 0: negative priorities).
	OpportunisticPriorityBelow *int32 `yaml:"opportunisticPriorityBelow"`
	// OpportunisticQueues: trace queues whose jobs are opportunistic.
	OpportunisticQueues []string `yaml:"opportunisticQueues"`
	// OpportunisticClasses: job classes (training, experiment, ...) whose jobs
	// are opportunistic.
	OpportunisticClasses []string `yaml:"opportunisticClasses"`
	// Yield is how an opportunistic job gives its GPU back: suspend (default;
	// keeps its work and host memory and resumes on the same node, AntMan's
	// memory spill to the host), requeue (loses work since its last
	// checkpoint), or migrate (keeps its work, restarts anywhere after
	// resumeDelay).
	Yield string `yaml:"yield"`
	// ResumeDelay is the restore time after a migrate yield (default 0).
	ResumeDelay policies.Dur `yaml:"resumeDelay"`
	// UtilisationLimit: an opportunistic job joins a GPU only when the solo
	// sm_util of the GPU's jobs plus its own stays at or below it (default 1.0).
	UtilisationLimit float64 `yaml:"utilisationLimit"`
	// UnknownUtilisation is the sm_util assumed when the trace gives none
	// (default 1.0: such a job leaves no leftover and never joins one).
	UnknownUtilisation *float64 `yaml:"unknownUtilisation"`
	// Strict: a guarantee job that cannot start blocks later guarantee jobs
	// (default false: they are tried in FIFO order).
	Strict bool `yaml:"strict"`
}

func init() {
	policies.RegisterDecoded[Params](policies.Info{Name: "antman",
		Summary: "AntMan (OSDI'20): resource-guarantee jobs on dedicated GPUs; opportunistic jobs on leftover GPU compute/memory or idle GPUs, yielding at once to guarantee jobs.",
		Params:  "opportunisticPriorityBelow (0); opportunisticQueues; opportunisticClasses; yield: suspend|requeue|migrate; resumeDelay; utilisationLimit (1.0); unknownUtilisation (1.0); strict"}, New)
}

// Policy is the antman policy.
type Policy struct {
	below    int32
	queues   []string
	classes  []sim.JobClass
	yield    sim.PreemptMode
	delay    sim.Duration
	limit    float64
	unknownU float64
	strict   bool

	occ     [][]*sim.Job // per GPU: running jobs on it (any kind), oldest start first
	occT    []sim.GPUID
	dirty   bool  // occ is stale: a start or a preemption since it was built
	oppGPUs int64 // GPUs held by running opportunistic jobs (counted once per job)
	tab     coloc.Table
	pl      placement.Placement
	first   placement.Placer
	nodes   []sim.NodeID
	gpus    []sim.GPUID
	victims []*sim.Job
	cand    []sim.GPUID
	memo    coloc.Memo
	whole   coloc.WholeMemo
	kind    []uint8 // per JobRef: 0 not yet known, 1 guarantee, 2 opportunistic
	ylds    []bool  // per GPU (valid for occT): every job on it is opportunistic and preemptible now
	evFail  struct {
		gpr, reps, cpu, mem int64
		valid               bool
	} // this scheduling point: smallest demand whose eviction placement failed
	// Yields counts opportunistic jobs stopped for guarantee jobs.
	Yields int64
}

// New builds the policy from its parameters; errors name the field.
func New(p Params) (*Policy, error) {
	var errs []error
	a := &Policy{below: 0, limit: 1, unknownU: 1, yield: sim.PreemptSuspend, strict: p.Strict, queues: p.OpportunisticQueues}
	if p.OpportunisticPriorityBelow != nil {
		a.below = *p.OpportunisticPriorityBelow
	}
	for i, c := range p.OpportunisticClasses {
		cl, err := sim.ParseClass(c)
		if err != nil || c == "" {
			errs = append(errs, fmt.Errorf("opportunisticClasses[%d]: unknown job class %q", i, c))
			continue
		}
		a.classes = append(a.classes, cl)
	}
	switch p.Yield {
	case "", "suspend":
	case "requeue":
		a.yield = sim.PreemptRequeue
	case "migrate":
		a.yield = sim.PreemptMigrate
	default:
		errs = append(errs, fmt.Errorf("yield: want suspend, requeue or migrate, got %q", p.Yield))
	}
	a.delay = sim.Duration(p.ResumeDelay)
	if p.ResumeDelay != 0 && a.yield != sim.PreemptMigrate {
		errs = append(errs, fmt.Errorf("resumeDelay: only with yield: migrate"))
	}
	if p.UtilisationLimit < 0 || p.UtilisationLimit > 4 {
		errs = append(errs, fmt.Errorf("utilisationLimit: must be in [0, 4], got %v", p.UtilisationLimit))
	} else if p.UtilisationLimit > 0 {
		a.limit = p.UtilisationLimit
	}
	if u := p.UnknownUtilisation; u != nil {
		if !(*u >= 0 && *u <= 1) {
			errs = append(errs, fmt.Errorf("unknownUtilisation: must be in [0, 1], got %v", *u))
		}
		a.unknownU = *u
	}
	a.first, _ = placement.New("best-fit")
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return a, nil
}

// Name implements sim.Policy.
func (a *Policy) Name() string { return "antman" }

// Opportunistic reports whether s is an opportunistic job.
func (a *Policy) Opportunistic(s *sim.JobSpec) bool {
	return s.Priority < a.below || slices.Contains(a.queues, s.Queue) || slices.Contains(a.classes, s.Class)
}

// opp is Opportunistic for a job of the run, cached per job.
func (a *Policy) opp(j *sim.Job) bool {
	k := a.kind[j.Ref]
	if k == 0 {
		k = 1
		if a.Opportunistic(&j.Spec) {
			k = 2
		}
		a.kind[j.Ref] = k
	}
	return k == 2
}

func (a *Policy) buildOcc(v *sim.View) {
	c := v.Cluster()
	if a.occ == nil {
		a.occ = make([][]*sim.Job, c.NumGPUs())
		a.ylds = make([]bool, c.NumGPUs())
	}
	for _, g := range a.occT {
		a.occ[g] = a.occ[g][:0]
	}
	a.occT = a.occT[:0]
	a.dirty = false
	for _, j := range v.Running() {
		for _, g := range j.GPUs {
			if len(a.occ[g]) == 0 {
				a.occT = append(a.occT, g)
			}
			a.occ[g] = append(a.occ[g], j)
		}
	}
	for _, g := range a.occT {
		slices.SortFunc(a.occ[g], func(x, y *sim.Job) int {
			if x.LastStart != y.LastStart {
				if x.LastStart < y.LastStart {
					return -1
				}
				return 1
			}
			return int(x.Ref - y.Ref)
		})
		y := true
		for _, o := range a.occ[g] {
			if !a.opp(o) || !o.Preemptible(v.Now()) {
				y = false
				break
			}
		}
		a.ylds[g] = y
	}
}

// Schedule implements sim.Policy: guarantee jobs first (FIFO), evicting
// opportunistic jobs where they need the GPUs; then opportunistic jobs (FIFO)
// on leftovers, else on idle GPUs. An opportunistic job on an idle GPU never
// keeps a guarantee job waiting: a guarantee job that could use its GPU evicts
// it at the next scheduling point (a guarantee job that waits now could not
// have used it either, since opportunistic GPUs count as available to it).
func (a *Policy) Schedule(v *sim.View, p *sim.Plan) error {
	c := v.Cluster()
	if len(a.kind) < v.NumJobs() { // first call, or jobs submitted since (live runs)
		a.kind = append(a.kind, make([]uint8, v.NumJobs()-len(a.kind))...)
	}
	blocked := false
	a.dirty, a.oppGPUs, a.evFail.valid = true, 0, false
	a.whole.Reset()
	for _, j := range v.Running() {
		if a.opp(j) {
			a.oppGPUs += int64(len(j.GPUs))
		}
	}
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if a.opp(j) {
			j = next
			continue
		}
		if blocked {
			p.Wait(j.Ref, sim.ReasonBlocked)
			j = next
			continue
		}
		ok, err := a.placeGuarantee(v, p, j)
		if err != nil {
			return err
		}
		if !ok {
			p.Wait(j.Ref, sim.ReasonNoCapacity)
			blocked = a.strict
		}
		j = next
	}
	a.tab.Build(v)
	a.memo.Reset()
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if a.opp(j) {
			if err := a.placeOpportunistic(c, p, j); err != nil {
				return err
			}
		}
		j = next
	}
	return nil
}

// placeGuarantee starts guarantee job j on free GPUs (best-fit), else on GPUs
// that hold only opportunistic jobs, which yield now.
func (a *Policy) placeGuarantee(v *sim.View, p *sim.Plan, j *sim.Job) (bool, error) {
	c := v.Cluster()
	if j.Suspended() {
		return false, nil // antman never suspends a guarantee job
	}
	if a.whole.Place(c, a.first, j, &a.pl) {
		a.dirty = true
		return true, p.AddStart(j.Ref, a.pl.Nodes, a.pl.GPUs)
	}
	// evictions can only help when free plus opportunistic GPUs could hold it
	sp := &j.Spec
	if sp.GPUsPerReplica == 0 || int64(sp.TotalGPUs()) > c.FreeGPUs()+a.oppGPUs {
		return false, nil
	}
	f := &a.evFail
	if f.valid && len(sp.GPUModels) == 0 && int64(sp.GPUsPerReplica) >= f.gpr && int64(sp.Replicas) >= f.reps && sp.CPUMilli >= f.cpu && sp.MemoryMiB >= f.mem {
		return false, nil // needs at least as much as a job that found no GPUs to reclaim
	}
	if a.dirty {
		a.buildOcc(v)
	}
	a.victims = a.victims[:0]
	ok := false
	if j.Spec.Replicas == 1 && j.Spec.GPUsPerReplica == 1 {
		ok = a.evictOne(c, v.Now(), j)
	} else {
		ok = a.evictGang(c, v.Now(), j)
	}
	if !ok {
		if len(sp.GPUModels) == 0 && (!f.valid || int64(sp.GPUsPerReplica) <= f.gpr && int64(sp.Replicas) <= f.reps && sp.CPUMilli <= f.cpu && sp.MemoryMiB <= f.mem) {
			f.gpr, f.reps, f.cpu, f.mem, f.valid = int64(sp.GPUsPerReplica), int64(sp.Replicas), sp.CPUMilli, sp.MemoryMiB, true
		}
		return false, nil
	}
	f.valid = false // evictions may free more than the job takes
	a.whole.Reset()
	for _, o := range a.victims {
		var err error
		if a.yield == sim.PreemptMigrate {
			err = p.AddMigrate(o.Ref, a.delay, "antman: yield to a guarantee job")
		} else {
			err = p.AddPreempt(o.Ref, a.yield, "antman: yield to a guarantee job")
		}
		if err != nil {
			return false, err
		}
		a.Yields++
		a.oppGPUs -= int64(o.Spec.TotalGPUs())
	}
	a.dirty = true
	return true, p.AddStart(j.Ref, a.nodes, a.gpus)
}

// yieldable reports whether every job on GPU g is opportunistic and may be
// preempted now (and there is at least one).
func (a *Policy) yieldable(g sim.GPUID, _ sim.Time) bool {
	return len(a.occ[g]) > 0 && a.ylds[g]
}

func usable(c *sim.Cluster, s *sim.JobSpec, n sim.NodeID) bool {
	first, end := c.NodeGPUs(n)
	return first < end && c.GPUMode(first) != sim.ShareMIG && s.AllowsModel(c.Node(n).GPUModel)
}

// evictOne picks, for a 1-GPU guarantee job, the GPU holding only
// opportunistic jobs where the fewest must yield (ties: lowest id). When the
// job shares that GPU's mode, the oldest opportunistic jobs may stay as long as
// their sm_util and memory leave it room (AntMan's leftover) and every serving
// job keeps its P99 SLA (sim.Cluster.ServingAdmits); otherwise all go.
func (a *Policy) evictOne(c *sim.Cluster, now sim.Time, j *sim.Job) bool {
	s := &j.Spec
	best, bestK := sim.GPUID(-1), 0
	for _, g := range a.occT {
		n := c.GPUNode(g)
		if !a.yieldable(g, now) || !usable(c, s, n) || !coloc.HostOK(c, n, s) {
			continue
		}
		k := a.mustYield(c, s, g)
		if best < 0 || k < bestK || k == bestK && g < best {
			best, bestK = g, k
		}
	}
	if best < 0 {
		return false
	}
	on := a.occ[best]
	a.victims = append(a.victims, on[len(on)-bestK:]...)
	a.nodes = append(a.nodes[:0], c.GPUNode(best))
	a.gpus = append(a.gpus[:0], best)
	return true
}

// mustYield is how many of GPU g's (opportunistic) jobs, newest first, must
// leave for guarantee job s to run there.
func (a *Policy) mustYield(c *sim.Cluster, s *sim.JobSpec, g sim.GPUID) int {
	on := a.occ[g]
	nd := c.Node(c.GPUNode(g))
	m := c.GPUMode(g)
	if m == sim.ShareExclusive || m == sim.ShareMIG || !s.Accepts().Accepts(m) || c.Sharers(g) == 0 {
		return len(on)
	}
	clients := int(nd.SharingClients)
	if clients <= 0 {
		clients = sim.DefaultSharingClients
	}
	u, mem := coloc.Util(s, a.unknownU), s.GPUMemMiB
	for k := 0; k <= len(on); k++ {
		stay := on[:len(on)-k]
		if len(stay) < clients && coloc.UtilSum(stay, a.unknownU)+u <= a.limit+1e-9 && (nd.GPUMemMiB <= 0 || memSum(stay)+mem <= nd.GPUMemMiB) &&
			c.ServingAdmits(s, g, on[len(on)-k:]) { // serving jobs' P99 SLA (docs/serving.md)
			return k
		}
	}
	return len(on)
}

func memSum(js []*sim.Job) int64 {
	m := int64(0)
	for _, j := range js {
		m += j.Spec.GPUMemMiB
	}
	return m
}

// evictGang places a gang (or a multi-GPU replica) on free GPUs and GPUs
// holding only opportunistic jobs, nodes in id order, free GPUs first; every
// job on a chosen occupied GPU yields.
func (a *Policy) evictGang(c *sim.Cluster, now sim.Time, j *sim.Job) bool {
	s := &j.Spec
	g := int(s.GPUsPerReplica)
	a.nodes, a.gpus = a.nodes[:0], a.gpus[:0]
	rem := int(s.Replicas)
	for n := sim.NodeID(0); int(n) < c.NumNodes() && rem > 0; n++ {
		if !usable(c, s, n) {
			continue
		}
		a.cand = a.cand[:0]
		first, end := c.NodeGPUs(n)
		for gpu := first; gpu < end; gpu++ {
			if c.GPUUsed(gpu) == 0 {
				a.cand = append(a.cand, gpu)
			}
		}
		for gpu := first; gpu < end; gpu++ {
			if c.GPUUsed(gpu) != 0 && a.yieldable(gpu, now) {
				a.cand = append(a.cand, gpu)
			}
		}
		k := len(a.cand) / g
		if s.CPUMilli > 0 {
			k = min(k, int(c.NodeFreeCPU(n)/s.CPUMilli))
		}
		if s.MemoryMiB > 0 {
			k = min(k, int(c.NodeFreeMemory(n)/s.MemoryMiB))
		}
		k = min(k, rem)
		for r := 0; r < k; r++ {
			a.nodes = append(a.nodes, n)
			a.gpus = append(a.gpus, a.cand[r*g:(r+1)*g]...)
		}
		rem -= k
	}
	if rem > 0 {
		return false
	}
	for _, gpu := range a.gpus {
		for _, o := range a.occ[gpu] {
			if !slices.Contains(a.victims, o) {
				a.victims = append(a.victims, o)
			}
		}
	}
	return true
}

// placeOpportunistic starts opportunistic job j on a GPU's leftover (the GPU
// with the least summed sm_util where its own fits under utilisationLimit and
// its memory fits), else on idle GPUs (a suspended job: on its own nodes
// only).
func (a *Policy) placeOpportunistic(c *sim.Cluster, p *sim.Plan, j *sim.Job) error {
	s := &j.Spec
	if u := coloc.Util(s, a.unknownU); coloc.Shareable(c, s) && (j.Suspended() || !a.memo.Skip(s, u)) {
		js := s
		if j.Suspended() {
			cp := *s
			cp.MemoryMiB = 0 // still allocated on its node since the suspension
			js = &cp
		}
		best, bestU := sim.GPUID(-1), 0.0
		for _, g := range a.tab.GPUs() {
			on := a.tab.On(g)
			if len(on) == 0 || j.Suspended() && c.GPUNode(g) != j.Nodes[0] || !coloc.CanJoin(c, js, g) {
				continue
			}
			if t := coloc.UtilSum(on, a.unknownU) + u; t <= a.limit+1e-9 && (best < 0 || t < bestU) {
				best, bestU = g, t
			}
		}
		if best >= 0 {
			return a.start(c, p, j, []sim.NodeID{c.GPUNode(best)}, []sim.GPUID{best})
		}
		if !j.Suspended() {
			a.memo.Fail(s, u)
		}
	}
	if j.Suspended() {
		if a.resumeNodes(c, j) {
			return a.start(c, p, j, a.nodes, a.gpus)
		}
	} else if a.whole.Place(c, a.first, j, &a.pl) {
		return a.start(c, p, j, a.pl.Nodes, a.pl.GPUs)
	}
	p.Wait(j.Ref, sim.ReasonNoCapacity)
	return nil
}

// resumeNodes finds free GPUs for a suspended job on its own nodes.
func (a *Policy) resumeNodes(c *sim.Cluster, j *sim.Job) bool {
	g := int(j.Spec.GPUsPerReplica)
	a.nodes, a.gpus = append(a.nodes[:0], j.Nodes...), a.gpus[:0]
	for _, n := range j.Nodes {
		if c.NodeFreeCPU(n) < j.Spec.CPUMilli {
			return false
		}
		first, end := c.NodeGPUs(n)
		k := 0
		for gpu := first; gpu < end && k < g; gpu++ {
			if c.GPUUsed(gpu) == 0 && !slices.Contains(a.gpus, gpu) {
				a.gpus = append(a.gpus, gpu)
				k++
			}
		}
		if k < g {
			return false
		}
	}
	return true
}

func (a *Policy) start(c *sim.Cluster, p *sim.Plan, j *sim.Job, nodes []sim.NodeID, gpus []sim.GPUID) error {
	if err := p.AddStart(j.Ref, nodes, gpus); err != nil {
		return err
	}
	if len(j.GPUs) == 1 && c.Sharers(j.GPUs[0]) > 0 {
		a.tab.Add(j.GPUs[0], j)
		if c.Sharers(j.GPUs[0]) == 1 {
			a.memo.Reset() // a new GPU with leftover
		}
	}
	return nil
}
