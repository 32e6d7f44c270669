package volcano

import (
	"fmt"
	"math"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

func init() {
	policies.Register(policies.Info{Name: "volcano",
		Summary: "Volcano scheduler: periodic sessions running enqueue/allocate/backfill (+preempt, reclaim) with tiered plugins: gang, priority, drf, proportion (weighted water-filling of queue deserved shares), overcommit, binpack, nodeorder; optional HyperNode network topology.",
		Params:  "schedulePeriod (1s); sessionOffset (0s); evictionGracePeriod (30s); actions; tiers (volcano-scheduler.conf syntax); queues [{name, weight, capability, guarantee, priority, reclaimable, state}]; queueMapping; defaultQueue; networkTopology {mode, highestTierAllowed, tiers, minReplicas}"},
		func(n *yaml.Node, _ policies.Env) (sim.Policy, error) {
			p, err := ParamsFromYAML(n)
			if err != nil {
				return nil, err
			}
			return New(p)
		})
}

// queue is a Volcano Queue with its per-session proportion attributes.
type queue struct {
	name        string
	idx         int
	weight      float64
	priority    int32
	reclaimable bool
	open        bool
	capability  res // +Inf where unset
	guarantee   res

	// session state
	active    bool // has jobs in this session
	allocated res  // running (not releasing) plus this session's allocations/pipelines
	request   res  // allocated + pending requests
	inqueue   res  // minResources of Inqueue jobs not yet running
	realCap   res
	deserved  res
	share     float64
	jobs      []*vjob // allocate/reclaim: jobs still to try, in job order
}

// vjob is a PodGroup: a sim job with Replicas identical tasks and minAvailable =
// Replicas.
type vjob struct {
	j          *sim.Job
	q          *queue
	task       res // one task's request
	min        res // minResources = Replicas x task
	bestEffort bool
	inqueue    bool     // PodGroup phase Inqueue (passed enqueue)
	evictAt    sim.Time // Never unless evicted: the job stops then
	// nominated holds, per task, the node a preempt/reclaim pipelined it onto
	// (the pod's nominatedNodeName): allocate tries it first.
	nominated []sim.NodeID

	// session state
	alloc     res  // allocated resources (running, tentative or pipelined)
	pipelined bool // placed this session (at least partly) on releasing resources
	started   bool
	reason    sim.Reason
	tentEvict bool // evicted by the current (uncommitted) statement
}

// Volcano is the volcano policy. See the package documentation.
type Volcano struct {
	cfg      *config
	jobs     []*vjob
	evicting []*vjob
	inited   bool
	err      error
	sessions int64

	// replaySessions, when set (the fidelity test only), replaces the session
	// grid: sessions run exactly at these ascending instants (a real
	// scheduler's logged sessions); nextReplay indexes the first one not run.
	replaySessions []sim.Time
	nextReplay     int

	// session scratch
	v       *sim.View
	p       *sim.Plan
	now     sim.Time
	total   res
	nodeCap []res
	rel     []res // releasing (evicted, still terminating) per node
	hold    []res // held by pipelined jobs this session, per node
	tent    []res // the current job's tentative tasks, per node
	ocUsed  res
	ocInq   res
	changed bool
	place   []tentTask
	evicts  []*vjob // the current statement's evictions
	failed  map[shapeKey]sim.Reason

	// HyperNodes: nodeDom[tier][node] is the node's HyperNode at that tier; while
	// restrictTier >= 0, predicates pass only nodes of HyperNode restrictDom.
	nodeDom      [][]int32
	restrictTier int
	restrictDom  int32
	gpuBuf       []sim.GPUID
	nodeBuf      []sim.NodeID

	// params.placement: xpl is its last placement (its GPUs are bound when
	// useX), allowFn admits the nodes the current job (cur) may use.
	xpl     placement.Placement
	useX    bool
	cur     *vjob
	allowFn func(sim.NodeID) bool
}

type tentTask struct {
	n      sim.NodeID
	future bool
	gpu    sim.GPUID // fractional tasks: the shared GPU
}

// New builds the policy from params.
func New(p Params) (*Volcano, error) {
	cfg, err := buildConfig(p)
	if err != nil {
		return nil, err
	}
	return &Volcano{cfg: cfg, restrictTier: -1}, nil
}

// Name returns "volcano".
func (s *Volcano) Name() string { return "volcano" }

// Warnings lists configuration that was read but is not simulated.
func (s *Volcano) Warnings() []string { return s.cfg.warnings }

// Sessions returns how many sessions ran (for tests and benchmarks).
func (s *Volcano) Sessions() int64 { return s.sessions }

func (s *Volcano) init(v *sim.View) error {
	s.inited = true
	s.jobs = make([]*vjob, v.NumJobs())
	c := v.Cluster()
	s.nodeCap = make([]res, c.NumNodes())
	for n := range s.nodeCap {
		ns := c.Node(sim.NodeID(n))
		s.nodeCap[n] = res{float64(ns.GPUs) * 1000, float64(ns.CPUMilli), float64(ns.MemoryMiB)}
		for d := range numDims {
			s.total[d] += s.nodeCap[n][d]
		}
	}
	s.initHyperNodes(c)
	s.rel = make([]res, c.NumNodes())
	s.hold = make([]res, c.NumNodes())
	s.tent = make([]res, c.NumNodes())
	var g res
	for _, q := range s.cfg.queues {
		g = add(g, q.guarantee)
	}
	for d := range numDims {
		if g[d] > s.total[d]+eps {
			return &policies.ConfigError{Err: fmt.Errorf("volcano: queues: guarantees sum to %g %s, more than the cluster's %g", unit(d, g[d]), dimNames[d], unit(d, s.total[d]))}
		}
	}
	return nil
}

// unit converts an internal amount back to the parameter unit (GPUs, cores, MiB).
func unit(d int, v float64) float64 {
	if d == dimMem {
		return v
	}
	return v / 1000
}

func (s *Volcano) job(j *sim.Job) *vjob {
	if vj := s.jobs[j.Ref]; vj != nil {
		return vj
	}
	sp := &j.Spec
	q := s.cfg.defQueue
	if m, ok := s.cfg.mapping[sp.Queue]; ok {
		q = m
	} else if n, ok := s.cfg.byName[sp.Queue]; ok {
		q = n
	}
	var t res
	if sp.GPUsPerReplica > 0 {
		t[dimGPU] = float64(sp.GPUsPerReplica) * float64(sp.GPUMilli)
	}
	t[dimCPU] = float64(sp.CPUMilli)
	t[dimMem] = float64(sp.MemoryMiB)
	vj := &vjob{j: j, q: q, task: t, min: scale(t, float64(sp.Replicas)), evictAt: sim.Never}
	vj.bestEffort = t == res{}
	s.jobs[j.Ref] = vj
	return vj
}

// Schedule stops evicted jobs whose grace period is over, and at multiples of the
// schedule period runs a session. Between sessions it only asks for the next one.
func (s *Volcano) Schedule(v *sim.View, p *sim.Plan) error {
	if !s.inited {
		if err := s.init(v); err != nil {
			s.err = err
		}
	}
	if s.err != nil {
		return s.err
	}
	if n := v.NumJobs(); len(s.jobs) < n { // jobs submitted since (live runs): mapped lazily by job
		s.jobs = append(s.jobs, make([]*vjob, n-len(s.jobs))...)
	}
	if s.cfg.placer != nil && s.allowFn == nil {
		if err := placement.Prepare(s.cfg.placer, v); err != nil {
			s.err = err
			return err
		}
		s.allowFn = s.allowNode
		s.xpl.Allow = s.allowFn
	}
	s.v, s.p, s.now = v, p, v.Now()
	s.changed = false
	// 1. Evicted jobs whose termination grace period is over stop now.
	if err := s.stopEvicted(); err != nil {
		return err
	}
	// 2. A session at offset + k*period (or at the replayed instants).
	period, off := int64(s.cfg.period), int64(s.cfg.offset)
	since := int64(s.now) - off
	session := since >= 0 && since%period == 0
	if s.replaySessions != nil {
		session = s.replaySession()
	}
	if session {
		if err := s.session(); err != nil {
			return err
		}
		// With evictionGracePeriod 0 the session's victims stop at once.
		if err := s.stopEvicted(); err != nil {
			return err
		}
	}
	next := sim.Time(off)
	if since >= 0 {
		next = sim.Time(off + (since/period+1)*period)
	}
	if s.replaySessions != nil && s.nextReplay < len(s.replaySessions) {
		next = s.replaySessions[s.nextReplay]
	}
	if (session && s.changed) || (!session && v.PendingCount() > 0) {
		p.Wake(next)
	}
	for _, vj := range s.evicting {
		p.Wake(vj.evictAt)
	}
	return nil
}

// replaySession reports whether a replayed session falls now and consumes it.
// Once the list is exhausted the grid (offset + k*period) takes over.
func (s *Volcano) replaySession() bool {
	for s.nextReplay < len(s.replaySessions) && s.replaySessions[s.nextReplay] < s.now {
		s.nextReplay++
	}
	if s.nextReplay < len(s.replaySessions) && s.replaySessions[s.nextReplay] == s.now {
		s.nextReplay++
		return true
	}
	if s.nextReplay < len(s.replaySessions) {
		return false
	}
	since := int64(s.now) - int64(s.cfg.offset)
	return since >= 0 && since%int64(s.cfg.period) == 0
}

// stopEvicted stops the evicted jobs whose grace period is over (requeued).
func (s *Volcano) stopEvicted() error {
	keep := s.evicting[:0]
	for _, vj := range s.evicting {
		if vj.evictAt > s.now {
			keep = append(keep, vj)
			continue
		}
		vj.evictAt = sim.Never
		vj.inqueue = false
		// A victim that finished meanwhile, or that the engine's preemption
		// protection now covers, keeps running.
		if vj.j.State == sim.StateRunning && preemptible(vj.j, s.now) {
			if err := s.p.AddPreemptAfterGrace(vj.j.Ref, sim.PreemptRequeue, "volcano eviction", s.cfg.grace); err != nil {
				return err
			}
			s.changed = true
		}
	}
	s.evicting = keep
	return nil
}

// session opens a session (snapshot + proportion's deserved shares), runs the
// actions in order and records why pending jobs wait.
func (s *Volcano) session() error {
	s.sessions++
	c := s.v.Cluster()
	for _, q := range s.cfg.queues {
		q.active = false
		q.allocated, q.request, q.inqueue, q.deserved, q.realCap = res{}, res{}, res{}, res{}, res{}
		q.share = 0
		q.jobs = q.jobs[:0]
	}
	clear(s.rel)
	clear(s.hold)
	clear(s.tent)
	s.ocInq = res{}
	for _, j := range s.v.Running() {
		vj := s.job(j)
		vj.started, vj.pipelined, vj.reason = false, false, sim.ReasonNone
		vj.q.active = true
		if vj.evictAt != sim.Never {
			vj.alloc = res{}
			for _, n := range j.Nodes {
				s.rel[n] = add(s.rel[n], vj.task)
			}
			continue
		}
		vj.alloc = vj.min
		vj.q.allocated = add(vj.q.allocated, vj.min)
	}
	for j := range s.v.Pending() {
		vj := s.job(j)
		vj.started, vj.pipelined, vj.reason, vj.alloc = false, false, sim.ReasonNone, res{}
		vj.q.active = true
		vj.q.request = add(vj.q.request, vj.min)
		if vj.inqueue {
			vj.q.inqueue = add(vj.q.inqueue, vj.min)
			s.ocInq = add(s.ocInq, vj.min)
		}
	}
	for _, q := range s.cfg.queues {
		q.request = add(q.request, q.allocated)
	}
	s.ocUsed = res{float64(c.AllocatedMilli()), s.total[dimCPU] - float64(c.FreeCPU()), s.total[dimMem] - float64(c.FreeMemory())}
	if s.cfg.proportion {
		s.proportion()
	}
	for _, a := range s.cfg.actions {
		var err error
		switch a {
		case "enqueue":
			s.enqueue()
		case "allocate":
			err = s.allocate()
		case "backfill":
			err = s.backfill()
		case "preempt":
			s.evictAction(false)
		case "reclaim":
			s.evictAction(true)
		}
		if err != nil {
			return err
		}
	}
	for j := range s.v.Pending() {
		vj := s.jobs[j.Ref]
		r := vj.reason
		if r == sim.ReasonNone {
			r = sim.ReasonNoCapacity
		}
		s.p.Wait(j.Ref, r)
	}
	return nil
}

// ---- resource vector helpers ----

const eps = 1e-6

func add(a, b res) res {
	for d := range numDims {
		a[d] += b[d]
	}
	return a
}

func sub(a, b res) res {
	for d := range numDims {
		a[d] -= b[d]
	}
	return a
}

func scale(a res, f float64) res {
	for d := range numDims {
		a[d] *= f
	}
	return a
}

// lessEqual reports a <= b in every dimension.
func lessEqual(a, b res) bool {
	for d := range numDims {
		if a[d] > b[d]+eps {
			return false
		}
	}
	return true
}

// lessEqualOn reports a <= b on the dimensions req requests (Volcano's
// LessEqualWithDimension).
func lessEqualOn(a, b, req res) bool {
	for d := range numDims {
		if req[d] > 0 && a[d] > b[d]+eps {
			return false
		}
	}
	return true
}

// ---- ordering ----

// queueLess is QueueOrderFn: proportion orders by queue priority (higher first),
// then by share (lower first); the session falls back to creation order (the
// order of the queues parameter, the implicit default queue first).
func (s *Volcano) queueLess(a, b *queue) bool {
	if s.cfg.proportion {
		if a.priority != b.priority {
			return a.priority > b.priority
		}
		if math.Abs(a.share-b.share) > eps {
			return a.share < b.share
		}
	}
	return a.idx < b.idx
}

// sortJobs sorts pending jobs by JobOrderFn: priority (higher first) when the
// priority plugin is on; gang (not ready first) and drf (lower share first) tie on
// pending jobs; the session falls back to creation time then UID, i.e. JobRef.
func (s *Volcano) sortJobs(js []*vjob) {
	prio := s.cfg.priority
	slices.SortFunc(js, func(a, b *vjob) int {
		if prio && a.j.Spec.Priority != b.j.Spec.Priority {
			if a.j.Spec.Priority > b.j.Spec.Priority {
				return -1
			}
			return 1
		}
		return int(a.j.Ref - b.j.Ref)
	})
}

// popQueue removes and returns the first queue of qs by queueLess.
func (s *Volcano) popQueue(qs *[]*queue) *queue {
	best := -1
	for i, q := range *qs {
		if best < 0 || s.queueLess(q, (*qs)[best]) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	q := (*qs)[best]
	*qs = slices.Delete(*qs, best, best+1)
	return q
}

func (s *Volcano) sortedQueues() []*queue {
	qs := slices.Clone(s.cfg.queues)
	slices.SortStableFunc(qs, func(a, b *queue) int {
		if s.queueLess(a, b) {
			return -1
		}
		if s.queueLess(b, a) {
			return 1
		}
		return 0
	})
	return qs
}
