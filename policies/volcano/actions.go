package volcano

import (
	"math"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// ---- enqueue ----

// enqueue moves Pending PodGroups to Inqueue when JobEnqueueable passes: plugins
// vote in tier order (overcommit, proportion); the first Reject refuses. Queues are
// visited in queue order, jobs in job order. Closed queues enqueue nothing.
func (s *Volcano) enqueue() {
	for _, q := range s.cfg.queues {
		q.jobs = q.jobs[:0]
	}
	for j := range s.v.Pending() {
		vj := s.jobs[j.Ref]
		if !vj.inqueue {
			vj.q.jobs = append(vj.q.jobs, vj)
		}
	}
	for _, q := range s.sortedQueues() {
		js := q.jobs
		if len(js) == 0 {
			continue
		}
		if !q.open {
			for _, vj := range js {
				vj.reason = sim.ReasonQuota
			}
			continue
		}
		s.sortJobs(js)
		for _, vj := range js {
			if s.enqueueable(vj) {
				vj.inqueue = true
				s.changed = true
			}
		}
	}
}

// enqueueable is JobEnqueueable (framework/session_plugins.go): the gates vote
// in tier order, a Reject refuses at once, and the first tier in which a gate
// permits admits the job without consulting later tiers (both gates vote on
// every job, so only the first tier holding one decides). proportion counts the
// job in its queue's inqueue as soon as it permits; overcommit counts it in
// JobEnqueued, once the job is admitted.
func (s *Volcano) enqueueable(vj *vjob) bool {
	for _, pl := range s.cfg.enqueueGates {
		switch pl {
		case "overcommit":
			// idle = total·factor - used; inqueue + minResources <= idle on the
			// dimensions the job requests.
			idle := sub(scale(s.total, s.cfg.ocFactor), s.ocUsed)
			if !lessEqualOn(add(s.ocInq, vj.min), idle, vj.min) {
				vj.reason = sim.ReasonNoCapacity
				return false
			}
		case "proportion":
			// minResources + allocated + inqueue <= realCapability (GPUs only when
			// requested; cpu and memory always).
			q := vj.q
			r := add(add(vj.min, q.allocated), q.inqueue)
			for d := range numDims {
				if (d != dimGPU || r[d] > 0) && r[d] > q.realCap[d]+eps {
					vj.reason = sim.ReasonQuota
					return false
				}
			}
			q.inqueue = add(q.inqueue, vj.min)
		}
	}
	if s.cfg.overcommit {
		s.ocInq = add(s.ocInq, vj.min)
	}
	return true
}

// ---- allocate ----

// allocate is Volcano's allocate action: pop the best queue (QueueOrderFn), skip
// it if Overused, pop its best job, place the job's tasks one by one (Allocatable,
// predicates, best node score; nodes whose idle resources fit first, then nodes
// that fit counting releasing resources), commit only if the gang is ready, keep
// a pipelined job's holds for the session, discard otherwise; push the queue
// back so its share is recomputed after every job.
func (s *Volcano) allocate() error {
	var qs []*queue
	for _, q := range s.cfg.queues {
		q.jobs = q.jobs[:0]
	}
	for j := range s.v.Pending() {
		vj := s.jobs[j.Ref]
		// Without the enqueue action, allocate moves Pending PodGroups to Inqueue
		// itself (actions/allocate/allocate.go, buildAllocateContext).
		if !s.cfg.hasEnqueue {
			vj.inqueue = true
		}
		if vj.inqueue && !vj.bestEffort && !vj.pipelined {
			vj.q.jobs = append(vj.q.jobs, vj)
		}
	}
	for _, q := range s.cfg.queues {
		if len(q.jobs) > 0 {
			s.sortJobs(q.jobs)
			qs = append(qs, q)
		}
	}
	clear(s.failed)
	for len(qs) > 0 {
		q := s.popQueue(&qs)
		if s.overused(q) {
			for _, vj := range q.jobs {
				vj.reason = sim.ReasonFairShare
			}
			continue
		}
		if len(q.jobs) == 0 {
			continue
		}
		vj := q.jobs[0]
		q.jobs = q.jobs[1:]
		if err := s.allocateJob(vj); err != nil {
			return err
		}
		qs = append(qs, q)
	}
	return nil
}

// shapeKey identifies jobs that place identically.
type shapeKey struct {
	task     res
	replicas int32
	models   string
}

// allocateJob tries to place every task of vj (minAvailable = all of them).
func (s *Volcano) allocateJob(vj *vjob) error {
	c := s.v.Cluster()
	sp := &vj.j.Spec
	// Cheap rejection: not enough GPUs in the whole cluster, counting releasing ones.
	if sp.GPUsPerReplica > 0 && !sp.Fractional() {
		var rel float64
		for n := range s.rel {
			rel += s.rel[n][dimGPU]
		}
		if float64(sp.TotalGPUs())*1000 > float64(c.FreeGPUs())*1000+rel+eps {
			vj.reason = sim.ReasonNoCapacity
			return nil
		}
	}
	// Free resources only shrink during allocate: a job shape that found no nodes
	// finds none for the rest of the action.
	key := shapeKey{task: vj.task, replicas: sp.Replicas, models: strings.Join(sp.GPUModels, ",")}
	if r, ok := s.failed[key]; ok {
		vj.reason = r
		if !s.allocatable(vj.q, vj.min) {
			vj.reason = sim.ReasonFairShare
		}
		return nil
	}
	q := vj.q
	var ok bool
	if s.topoJob(vj) {
		ok = s.placeTopo(vj)
	} else {
		ok = s.tryPlace(vj)
	}
	if !ok {
		// (Topology jobs are not cached: their dry-runs mix quota and node failures.)
		if !s.topoJob(vj) && (vj.reason == sim.ReasonNoCapacity || vj.reason == sim.ReasonTopology) {
			if s.failed == nil {
				s.failed = map[shapeKey]sim.Reason{}
			}
			s.failed[key] = vj.reason
		}
		return nil
	}
	pipelined := false
	for _, t := range s.place {
		pipelined = pipelined || t.future
	}
	for _, t := range s.place {
		s.tent[t.n] = sub(s.tent[t.n], vj.task)
	}
	s.updateShare(q)
	if pipelined {
		// JobPipelined but not JobReady: the statement is kept for this session
		// (its resources are held), nothing is bound; the next session starts over.
		for _, t := range s.place {
			s.hold[t.n] = add(s.hold[t.n], vj.task)
		}
		vj.pipelined = true
		vj.reason = sim.ReasonPreempting
		return nil
	}
	return s.start(vj)
}

// tryPlace places every task of vj (Allocatable, then the best node), charging
// them tentatively (tent, the queue's and the job's allocation). On failure it
// undoes everything, sets vj.reason and returns false.
func (s *Volcano) tryPlace(vj *vjob) bool {
	if s.cfg.placer != nil {
		return s.tryPlaceWith(vj)
	}
	q := vj.q
	s.place = s.place[:0]
	for r := int32(0); r < vj.j.Spec.Replicas; r++ {
		if !s.allocatable(q, vj.task) {
			vj.reason = sim.ReasonFairShare
			if lessEqualOn(q.realCap, q.deserved, vj.task) {
				vj.reason = sim.ReasonQuota
			}
			s.unplace(vj)
			return false
		}
		t, found := s.nominatedNode(vj, int(r))
		if !found {
			t, found = s.pickNode(vj)
		}
		if !found {
			vj.reason = s.noNodeReason(vj)
			s.unplace(vj)
			return false
		}
		s.place = append(s.place, t)
		s.tent[t.n] = add(s.tent[t.n], vj.task)
		q.allocated = add(q.allocated, vj.task)
		vj.alloc = add(vj.alloc, vj.task)
	}
	return true
}

// tryPlaceWith is tryPlace with params.placement choosing the nodes: the same
// per-task quota checks (Allocatable), then one placement of the whole gang on
// the live cluster among the nodes the predicates admit and whose idle resources
// (free minus pipelined holds) fit a task; each task is then checked against
// its node's idle resources as tryPlace checks it. There is no pipelining onto
// releasing resources and no nominated node: a placement places what fits now.
func (s *Volcano) tryPlaceWith(vj *vjob) bool {
	q := vj.q
	s.place = s.place[:0]
	s.useX = false
	for r := int32(0); r < vj.j.Spec.Replicas; r++ {
		if !s.allocatable(q, vj.task) {
			vj.reason = sim.ReasonFairShare
			if lessEqualOn(q.realCap, q.deserved, vj.task) {
				vj.reason = sim.ReasonQuota
			}
			s.unplace(vj)
			return false
		}
		q.allocated = add(q.allocated, vj.task)
		vj.alloc = add(vj.alloc, vj.task)
	}
	s.cur = vj
	ok := s.cfg.placer.Place(s.v.Cluster(), vj.j, &s.xpl)
	s.cur = nil
	if !ok {
		vj.reason = s.noNodeReason(vj)
		s.unplace(vj)
		return false
	}
	sp := &vj.j.Spec
	for r, n := range s.xpl.Nodes {
		if _, fit := s.fits(vj, n, s.idle(n), false); !fit {
			vj.reason = sim.ReasonTopology
			s.unplace(vj)
			return false
		}
		t := tentTask{n: n}
		if sp.Fractional() {
			t.gpu = s.xpl.GPUs[r]
		}
		s.place = append(s.place, t)
		s.tent[n] = add(s.tent[n], vj.task)
	}
	s.useX = true
	return true
}

// allowNode is Placement.Allow for params.placement: the predicates admit node n
// for the current job and its idle resources fit one task.
func (s *Volcano) allowNode(n sim.NodeID) bool {
	vj := s.cur
	if vj == nil || !s.predicate(vj, n) {
		return false
	}
	_, ok := s.fits(vj, n, s.idle(n), false)
	return ok
}

// nominatedNode returns task r's nominated node when its idle resources fit.
func (s *Volcano) nominatedNode(vj *vjob, r int) (tentTask, bool) {
	if r >= len(vj.nominated) {
		return tentTask{}, false
	}
	n := vj.nominated[r]
	if !s.predicate(vj, n) {
		return tentTask{}, false
	}
	g, ok := s.fits(vj, n, s.idle(n), false)
	return tentTask{n: n, gpu: g}, ok
}

// unplace undoes tryPlace's tentative charges.
func (s *Volcano) unplace(vj *vjob) {
	for _, t := range s.place {
		s.tent[t.n] = sub(s.tent[t.n], vj.task)
	}
	vj.q.allocated = sub(vj.q.allocated, vj.alloc)
	vj.alloc = res{}
	s.place = s.place[:0]
}

// start binds a ready job: the lowest free GPUs of each task's node.
func (s *Volcano) start(vj *vjob) error {
	c := s.v.Cluster()
	sp := &vj.j.Spec
	s.nodeBuf = s.nodeBuf[:0]
	s.gpuBuf = s.gpuBuf[:0]
	useX := s.useX
	s.useX = false
	if useX {
		s.gpuBuf = append(s.gpuBuf, s.xpl.GPUs...)
	}
	for _, t := range s.place {
		s.nodeBuf = append(s.nodeBuf, t.n)
		switch {
		case useX: // the placement's GPUs
		case sp.GPUsPerReplica == 0:
		case sp.Fractional():
			s.gpuBuf = append(s.gpuBuf, t.gpu)
		default:
			first, end := c.NodeGPUs(t.n)
			need := sp.GPUsPerReplica
			for g := first; g < end && need > 0; g++ {
				if c.GPUUsed(g) == 0 && !slices.Contains(s.gpuBuf, g) {
					s.gpuBuf = append(s.gpuBuf, g)
					need--
				}
			}
		}
	}
	if err := s.p.AddStart(vj.j.Ref, s.nodeBuf, s.gpuBuf); err != nil {
		return err
	}
	vj.nominated = vj.nominated[:0]
	vj.started = true
	s.changed = true
	return nil
}

// idle is what a task may use on n now: free minus this job's tentative tasks
// minus holds of pipelined jobs beyond the node's releasing resources.
func (s *Volcano) idle(n sim.NodeID) res {
	c := s.v.Cluster()
	r := res{float64(c.NodeFreeGPUs(n)) * 1000, float64(c.NodeFreeCPU(n)), float64(c.NodeFreeMemory(n))}
	r = sub(r, s.tent[n])
	for d := range numDims {
		r[d] -= math.Max(0, s.hold[n][d]-s.rel[n][d])
	}
	return r
}

// future is FutureIdle: idle plus releasing resources, minus all holds.
func (s *Volcano) future(n sim.NodeID) res {
	c := s.v.Cluster()
	r := res{float64(c.NodeFreeGPUs(n)) * 1000, float64(c.NodeFreeCPU(n)), float64(c.NodeFreeMemory(n))}
	return sub(add(sub(r, s.tent[n]), s.rel[n]), s.hold[n])
}

// predicate is the predicates plugin for gpusim nodes: the node has the job's GPU
// model and could hold one task when empty.
func (s *Volcano) predicate(vj *vjob, n sim.NodeID) bool {
	sp := &vj.j.Spec
	if s.restrictTier >= 0 && s.nodeDom[s.restrictTier][n] != s.restrictDom {
		return false
	}
	ns := s.v.Cluster().Node(n)
	if sp.GPUsPerReplica > 0 && !sp.AllowsModel(ns.GPUModel) {
		return false
	}
	return lessEqual(vj.task, s.nodeCap[n])
}

// fits reports whether one task fits avail; fractional tasks also need one GPU
// with enough spare share (checked on the live cluster for idle fits).
func (s *Volcano) fits(vj *vjob, n sim.NodeID, avail res, future bool) (sim.GPUID, bool) {
	sp := &vj.j.Spec
	if !sp.Fractional() {
		return -1, lessEqual(vj.task, avail)
	}
	t := vj.task
	t[dimGPU] = 0
	if !lessEqual(t, avail) {
		return -1, false
	}
	c := s.v.Cluster()
	first, end := c.NodeGPUs(n)
	for g := first; g < end; g++ {
		if sim.WholeGPU-c.GPUUsed(g) >= sp.GPUMilli {
			return g, true
		}
	}
	if future && s.rel[n][dimGPU]-s.hold[n][dimGPU] >= float64(sp.GPUMilli) {
		return -1, true
	}
	return -1, false
}

// pickNode returns the best-scoring node for one more task of vj: among nodes
// whose idle resources fit; if none, among nodes that fit counting releasing
// resources (a pipelined task). Ties go to the lowest node id.
func (s *Volcano) pickNode(vj *vjob) (tentTask, bool) {
	c := s.v.Cluster()
	for pass := 0; pass < 2; pass++ {
		best := tentTask{n: -1}
		bestScore := math.Inf(-1)
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			if !s.predicate(vj, n) {
				continue
			}
			avail := s.idle(n)
			if pass == 1 {
				avail = s.future(n)
			}
			g, ok := s.fits(vj, n, avail, pass == 1)
			if !ok {
				continue
			}
			if sc := s.score(vj, n); sc > bestScore+eps {
				best, bestScore = tentTask{n: n, future: pass == 1, gpu: g}, sc
			}
		}
		if best.n >= 0 {
			return best, true
		}
	}
	return tentTask{}, false
}

func (s *Volcano) noNodeReason(vj *vjob) sim.Reason {
	c := s.v.Cluster()
	var free float64
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		if s.predicate(vj, n) {
			free += s.idle(n)[dimGPU]
		}
	}
	if vj.min[dimGPU] > 0 && free+eps >= vj.min[dimGPU] {
		return sim.ReasonTopology
	}
	return sim.ReasonNoCapacity
}

// used is the node's requested resources including the current job's tentative
// tasks (GPUs counted as whole busy GPUs).
func (s *Volcano) used(n sim.NodeID) res {
	c := s.v.Cluster()
	capN := s.nodeCap[n]
	u := res{capN[dimGPU] - float64(c.NodeFreeGPUs(n))*1000, capN[dimCPU] - float64(c.NodeFreeCPU(n)), capN[dimMem] - float64(c.NodeFreeMemory(n))}
	return add(u, s.tent[n])
}

// score is the sum of the node-order plugins' scores for one task of vj on n:
// nodeorder (leastrequested and mostrequested over cpu and memory,
// balancedresource over cpu, memory and nvidia.com/gpu; kube-scheduler
// formulas, 0..100 times their weights) and binpack.
func (s *Volcano) score(vj *vjob, n sim.NodeID) float64 {
	var total float64
	u := add(s.used(n), vj.task)
	capN := s.nodeCap[n]
	if no := s.cfg.nodeorder; no.least > 0 || no.most > 0 || no.balanced > 0 {
		var least, most float64
		for _, d := range []int{dimCPU, dimMem} {
			if capN[d] <= 0 {
				continue
			}
			req := math.Min(u[d], capN[d])
			least += math.Floor((capN[d] - req) * 100 / capN[d])
			most += math.Floor(req * 100 / capN[d])
		}
		total += no.least*math.Floor(least/2) + no.most*math.Floor(most/2)
		total += no.balanced * balancedScore(u, capN, vj.task[dimGPU] > 0)
	}
	if bp := s.cfg.binpack; bp.weight > 0 {
		var sc, wsum float64
		for d := range numDims {
			if vj.task[d] == 0 || bp.w[d] == 0 {
				continue
			}
			if capN[d] == 0 {
				continue
			}
			if u[d] > capN[d]+eps {
				return total // binpack scores an overflowing node 0
			}
			sc += bp.w[d] * u[d] / capN[d]
			wsum += bp.w[d]
		}
		if wsum > 0 {
			total += sc / wsum * 100 * bp.weight
		}
	}
	return total
}

// balancedScore is kube-scheduler's BalancedAllocation score (0..100) of a node
// whose requests, with the task, are u, as Volcano v1.10's nodeorder plugin
// configures it (pkg/scheduler/plugins/nodeorder/nodeorder.go: resources cpu,
// memory and nvidia.com/gpu, weight 1 each). It follows k8s v1.30
// noderesources/balanced_allocation.go balancedResourceScorer: each resource's
// requested/allocatable fraction (capped at 1), skipping a resource the node
// lacks and an extended resource the pod does not request
// (resource_allocation.go calculateResourceAllocatableRequest), then
// int64((1 - std) * 100), where std is |f1 - f2| / 2 for two fractions and the
// population standard deviation for three. So GPU pods spread over nodes: a
// node whose GPUs fill faster than its CPU and memory scores lower.
func balancedScore(u, capN res, gpuPod bool) float64 {
	var frac [3]float64
	k := 0
	for _, d := range []int{dimCPU, dimMem, dimGPU} {
		if capN[d] <= 0 || (d == dimGPU && !gpuPod) {
			continue
		}
		frac[k] = math.Min(u[d]/capN[d], 1)
		k++
	}
	var std float64
	switch k {
	case 2:
		std = math.Abs(frac[0]-frac[1]) / 2
	case 3:
		mean := (frac[0] + frac[1] + frac[2]) / 3
		var sum float64
		for _, f := range frac {
			sum += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sum / 3)
	}
	return math.Floor((1 - std) * 100)
}

// ---- backfill ----

// backfill places BestEffort jobs (no resource requests at all) that passed
// enqueue: each task on the best-scoring predicate-passing node.
func (s *Volcano) backfill() error {
	var be []*vjob
	for j := range s.v.Pending() {
		if vj := s.jobs[j.Ref]; vj.inqueue && vj.bestEffort {
			be = append(be, vj)
		}
	}
	s.sortJobs(be)
	for _, vj := range be {
		j := vj.j
		s.place = s.place[:0]
		for r := int32(0); r < j.Spec.Replicas; r++ {
			t, ok := s.pickNode(vj)
			if !ok {
				break
			}
			s.place = append(s.place, t)
		}
		if len(s.place) == int(j.Spec.Replicas) {
			if err := s.start(vj); err != nil {
				return err
			}
		}
	}
	return nil
}
