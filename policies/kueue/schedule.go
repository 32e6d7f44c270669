package kueue

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// maxCyclesPerPoint bounds the back-to-back admission cycles run at one virtual
// time (each real Kueue cycle takes milliseconds; a cycle that admits nothing ends
// the sequence earlier).
const maxCyclesPerPoint = 1000

type entry struct {
	w      *workload
	mode   mode
	assign []frQ
	need   []frQ // the flavor-resources of assign whose quota needs preemption (Kueue's frsNeedPreemption)
	models []string
	ab, nb []frQ     // the entry's own assign and need buffers (newEntry, keepBufs)
	borrow int       // borrowing level (0 = within nominal)
	held   bool      // held a reservation from its preemption
	tas    *tasEntry // topology request and assignment (TAS flavors only)
}

// Schedule runs due evictions, then admission cycles until one changes nothing,
// then places admitted workloads on nodes (kube-scheduler's role).
func (k *Kueue) Schedule(v *sim.View, p *sim.Plan) error {
	if k.wls == nil {
		k.wls = make([]*workload, v.NumJobs())
	}
	if k.pendingErr != nil {
		return k.pendingErr
	}
	if c := v.Cluster(); k.prepC != c {
		if err := placement.Prepare(k.placer, v); err != nil {
			return err
		}
		k.prepC = c
	}
	k.beginPoint(v)
	now := v.Now()
	k.replaySeen(now)
	k.fireRequeues(now)
	// 1. Evictions whose grace period is over: the victims terminate and release quota.
	keep := k.evictions[:0]
	for _, ev := range k.evictions {
		if ev.at > now {
			keep = append(keep, ev)
			continue
		}
		if err := k.evict(p, ev); err != nil {
			return err
		}
	}
	k.evictions = keep
	// 2-3 run again at this time while waitForPodsReady evicts timed-out
	// workloads or lifts blockAdmission (podsready.go).
	for pass := 0; pass < maxCyclesPerPoint; pass++ {
		// 2. Admission cycles.
		n, exact := k.replayCycles(now)
		for c := 0; c < n; c++ {
			k.cycles++
			if k.cycle(v, p) == 0 && !exact {
				break
			}
		}
		// 3. Placement of admitted workloads, in admission order.
		c := v.Cluster()
		for i := 0; i < len(k.pendingPl); {
			w := k.pendingPl[i]
			if w.evicting { // evicted before its pods ran: they are deleted, not started
				i++
				continue
			}
			if k.place(c, w) {
				if err := p.AddStart(w.job.Ref, k.pl.Nodes, k.pl.GPUs); err != nil {
					return err
				}
				w.state = wlRunning
				k.pendingPl = slices.Delete(k.pendingPl, i, i+1)
				continue
			}
			p.Wait(w.job.Ref, capacityReason(c, w))
			i++
		}
		if !k.afterPlacement(p) {
			break
		}
	}
	k.podsReadyWakes(p)
	k.requeueWakes(p)
	k.replayWakes(p)
	for _, ev := range k.evictions {
		p.Wake(ev.at)
	}
	return nil
}

// evict terminates a victim: quota is released, the job is preempted (requeued)
// if it was running, and its queue's parked workloads get another chance.
func (k *Kueue) evict(p *sim.Plan, ev eviction) error {
	w := ev.w
	w.evicting = false
	if ev.by.waitVict > 0 {
		ev.by.waitVict--
	}
	if w.state != wlAdmitted && w.state != wlRunning {
		return nil // finished during its grace period
	}
	wasRunning := w.state == wlRunning
	k.evicted++
	k.release(w)
	w.state = wlPending
	if wasRunning {
		if err := p.AddPreemptAfterGrace(w.job.Ref, sim.PreemptRequeue, "kueue preemption", ev.grace); err != nil {
			return err
		}
	} else if err := p.Evict(w.job.Ref); err != nil {
		// Admitted (quota reserved) but not started: Kueue evicts the Workload
		// all the same, so the engine logs and counts it (issue 17, gap 6).
		return err
	}
	// Back in its queue at once: this scheduling point's cycles may re-admit it
	// (waiting for the EvPreempt notification would leave it out until the next
	// unrelated event).
	k.push(w)
	k.batchRequeue(w.cq, ev.at)
	return nil
}

// initActive numbers the ClusterQueues and marks every one active. A ClusterQueue
// is active (its bit in k.active set) whenever it may have a head: push and
// unpark set the bit (markActive), cycle clears it when head finds none. So cycle
// visits the same heads, in k.cqs order, without scanning idle queues.
func (k *Kueue) initActive() {
	k.active = make([]uint64, (len(k.cqs)+63)/64)
	for i, cq := range k.cqs {
		cq.idx = i
		k.active[i/64] |= 1 << (i % 64)
	}
}

// markActive marks cq as possibly having a head (see initActive).
func (k *Kueue) markActive(cq *clusterQueue) {
	if k.active != nil {
		k.active[cq.idx/64] |= 1 << (cq.idx % 64)
	}
}

// head returns the first workload of cq's queue (parked ones are not in it). A
// sticky preemptor (BestEffortFIFO, waiting for or just after its evictions) stays
// the head until it is admitted or turns out unschedulable, so workloads returned
// from the inadmissible set cannot overtake it (Kueue#6929).
func (k *Kueue) head(cq *clusterQueue) *workload {
	if s := cq.sticky; s != nil {
		if s.state == wlPending && s.queued() {
			return s
		}
		cq.sticky = nil
	}
	if cq.nQueued == 0 {
		return nil
	}
	if cq.afsOn {
		return k.afsHead(cq)
	}
	return k.minHead(cq)
}

// cycle is one Kueue scheduling cycle: one head per ClusterQueue, nominate,
// order, process (re-checking fit against admissions made earlier in the cycle).
// It returns how many heads changed state (admitted, parked, or started
// preempting); cycles repeat at one virtual time until that is zero.
func (k *Kueue) cycle(v *sim.View, p *sim.Plan) int {
	k.nEnt = 0 // the previous cycle's entries are dead
	k.claimGen++
	if k.active == nil {
		k.initActive()
	}
	entries := k.entBuf[:0]
	for wi, word := range k.active {
		for word != 0 {
			bit := bits.TrailingZeros64(word)
			word &^= 1 << bit
			cq := k.cqs[wi*64+bit]
			w := k.head(cq)
			if w == nil {
				k.active[wi] &^= 1 << bit // until push or unpark queues a workload
				continue
			}
			if w.waitVict > 0 {
				p.Wait(w.job.Ref, sim.ReasonPreempting) // sticky: waits for its victims
				continue
			}
			held := len(w.reserved) > 0
			k.unreserve(w)
			e := k.nominate(v, w)
			e.held = held
			entries = append(entries, e)
		}
	}
	k.entBuf = entries[:0]
	if len(entries) == 0 {
		return 0
	}
	// Classical ordering: entries already holding quota (preemptors whose victims
	// terminated) first, then non-borrowing, higher priority, older, id (a total
	// order: entries are distinct workloads).
	slices.SortFunc(entries, func(ea, eb *entry) int {
		if ea.held != eb.held {
			if ea.held {
				return -1
			}
			return 1
		}
		if ea.borrow != eb.borrow {
			return cmp.Compare(ea.borrow, eb.borrow)
		}
		if k.less(ea.w, eb.w) {
			return -1
		}
		if k.less(eb.w, ea.w) {
			return 1
		}
		return 0
	})
	admitted := 0
	now := v.Now()
	var held []heldQuota // held for the rest of this cycle by preemptors without candidates
	defer func() {
		for _, h := range held {
			h.cq.node.addUsage(h.fr, -h.q)
		}
	}()
	next := k.entryIterator(entries)
	for e := next(); e != nil; e = next() {
		w := e.w
		switch e.mode {
		case modeNoFit:
			if k.requeueInadmissible(w) {
				admitted++ // parked: the next head gets its turn in the next cycle
			}
			p.Wait(w.job.Ref, waitReason(e))
			continue
		case modePreempt:
			targets := k.targets(e)
			if len(targets) == 0 {
				held = k.holdUnreclaimable(e, held)
				if k.requeueInadmissible(w) {
					admitted++
				}
				p.Wait(w.job.Ref, waitReason(e))
				continue
			}
			overlap := false
			for _, t := range targets {
				overlap = overlap || t.claimed == k.claimGen
			}
			if overlap {
				continue
			}
			if k.retarget {
				held = k.preemptRetarget(e, targets, now, held, &admitted)
				if !w.cq.strict {
					w.cq.sticky = w
				}
				p.Wait(w.job.Ref, sim.ReasonPreempting)
				continue
			}
			for _, t := range targets {
				t.claimed = k.claimGen
				t.evicting = true
				g := k.graceFor(t, now)
				k.evictions = append(k.evictions, eviction{w: t, by: w, at: now.Add(g), grace: g})
			}
			w.waitVict += len(targets)
			// The preemptor reserves its quota now, so no other workload (of this
			// cycle or a later one) takes what its victims free; it is admitted
			// once they have terminated. A simplification: Kueue adds its usage
			// to the current cycle only and re-nominates it every cycle
			// (docs/kueue.md, "Known differences from Kueue").
			k.reserve(w, e.assign)
			admitted++
			if !w.cq.strict {
				w.cq.sticky = w
			}
			p.Wait(w.job.Ref, sim.ReasonPreempting)
			continue
		}
		if !k.fits(w.cq, e.assign, true) || !k.tasRecheck(v, e) {
			continue // stays at the head; retried next cycle
		}
		if k.admissionBlocked() {
			p.Wait(w.job.Ref, sim.ReasonBlocked) // waitForPodsReady.blockAdmission
			continue
		}
		k.admit(w, e)
		k.tasStart(p, e) // a TAS workload starts on its topology assignment
		admitted++
	}
	// Zero grace: victims terminate within this scheduling point (in the
	// fidelity replay, those whose recorded grace is zero).
	if k.grace == 0 || k.replayGrace != nil {
		keep := k.evictions[:0]
		for _, ev := range k.evictions {
			if ev.at <= now {
				if err := k.evict(p, ev); err != nil {
					k.pendingErr = err
				}
				admitted++ // the sticky preemptor can now be admitted: run another cycle
			} else {
				keep = append(keep, ev)
			}
		}
		k.evictions = keep
	}
	return admitted
}

// preemptRetarget is the preemption step of a cycle with preemptorReservation
// false, as Kueue's schedule does it (pkg/scheduler/scheduler.go, v0.17.0):
// the preemptor's usage is added to the quota tree for the rest of this cycle
// only (cq.AddUsage(usage), undone with held at the end of the cycle), and its
// targets are preempted (preemption.go IssuePreemptions): a target already
// being evicted is not evicted again ("Preemption ongoing"). It reports a
// change of state (admitted++) only when it evicted a new victim, so that a
// preemptor re-targeting its terminating victims ends the sequence of cycles
// at this time. The preemptor stays queued (Kueue requeues it at once,
// RequeueReasonPendingPreemption) and is nominated again next cycle.
func (k *Kueue) preemptRetarget(e *entry, targets []*workload, now sim.Time, held []heldQuota, admitted *int) []heldQuota {
	fresh := 0
	for _, t := range targets {
		t.claimed = k.claimGen
		if t.evicting {
			continue // preemption ongoing
		}
		t.evicting = true
		g := k.graceFor(t, now)
		k.evictions = append(k.evictions, eviction{w: t, by: e.w, at: now.Add(g), grace: g})
		fresh++
	}
	if fresh > 0 {
		*admitted++
	}
	cq := e.w.cq
	for _, a := range e.assign {
		cq.node.addUsage(a.fr, a.q)
		held = append(held, heldQuota{cq, a})
	}
	return held
}

// requeueInadmissible parks a BestEffortFIFO head that cannot be admitted, together
// with every queued workload of the same ClusterQueue that is equivalent for
// scheduling (same requests and allowed models) and has no higher priority: Kueue's
// SchedulingEquivalenceHashing bulk-moves them to the inadmissible set, since they
// would fail the same way. They return on the next relevant event.
func (k *Kueue) requeueInadmissible(w *workload) bool {
	if w.cq.strict {
		return false // StrictFIFO: the head stays and blocks its queue
	}
	k.park(w)
	return true
}

func (k *Kueue) admit(w *workload, e *entry) {
	k.removeFromQueue(w)
	w.assign = append(w.assign[:0], e.assign...)
	for _, a := range e.assign {
		w.cq.node.addUsage(a.fr, a.q)
	}
	w.models = e.models
	w.state = wlAdmitted
	k.seq++
	w.admitSeq = k.seq
	w.cq.admitted = append(w.cq.admitted, w)
	k.pendingPl = append(k.pendingPl, w)
	k.onAdmit(w)
}

// fits reports whether every (fr, q) fits cq's available quota; without
// allowBorrow the queue must also stay within its nominal quota.
func (k *Kueue) fits(cq *clusterQueue, assign []frQ, allowBorrow bool) bool {
	for _, a := range assign {
		if a.q > cq.node.available(a.fr) {
			return false
		}
		if !allowBorrow && cq.node.usage[a.fr]+a.q > cq.node.subtree[a.fr] {
			return false
		}
	}
	return true
}

// nominate computes a flavor assignment (flavors tried in ClusterQueue order per
// resource group, with flavorFungibility) and its mode. The entry comes from the
// cycle's pool (newEntry) and is valid until the next cycle.
func (k *Kueue) nominate(v *sim.View, w *workload) *entry {
	e := k.newEntry(w)
	if !w.reqOK {
		w.req, w.reqOK = requestVec(&w.job.Spec), true // fixed per job: computed once
	}
	req := &w.req
	cq := w.cq
	tab := k.nomTable(cq)
	preemptEnabled := cq.within != "Never" || cq.reclaim != "Never"
	var models []string
	restricted := false
	cur, best := &k.nomCur, &k.nomBest
	for gi := range cq.groups {
		g := &cq.groups[gi]
		gt := &tab.groups[gi]
		requested := false // the job requests a resource the group covers
		for _, ri := range gt.ri {
			if ri >= 0 && req[ri] > 0 {
				requested = true
				break
			}
		}
		if !requested {
			continue
		}
		gpuGroup := req[riGPU] > 0 && gt.gpu
		var chosen *cand
		haveBest := false
		for fi, fl := range g.flavors {
			if gpuGroup && !k.flavorAllowsJob(v, fl, &w.job.Spec) || !k.tasFlavorOK(w, fl) {
				continue
			}
			c := cur
			c.reset(fl)
			frs := gt.frs[fi]
			for ci, ri := range gt.ri {
				if ri < 0 || req[ri] <= 0 {
					continue
				}
				fr := frs[ci]
				q := req[ri]
				c.assign = append(c.assign, frQ{fr, q})
				switch {
				case q <= cq.node.available(fr):
					c.borrow = max(c.borrow, cq.node.borrowingLevel(fr, q))
				case preemptEnabled && q <= cq.node.potentialAvailable(fr):
					c.m = min(c.m, modePreempt)
					c.need = append(c.need, frQ{fr, q}) // Kueue: this resource's FlavorAssignment.Mode is Preempt
					// Kueue's oracle reports the borrowing level after its simulated
					// preemption (FindHeightOfLowestSubtreeThatFits: the root's when no
					// subtree fits); this is the level before it, the same unless
					// own-queue victims would lower it.
					c.borrow = max(c.borrow, min(cq.node.borrowingLevel(fr, q), cq.node.depth()))
				default:
					c.m = modeNoFit
				}
			}
			if c.m == modeNoFit {
				continue
			}
			if c.m == modeFit && (c.borrow == 0 || cq.canBorrow == "MayStopSearch") {
				chosen = c
				break
			}
			if c.m == modePreempt && cq.canPreempt == "MayStopSearch" {
				chosen = c
				break
			}
			// BorrowingOverPreemption: a borrowing fit beats a preemption.
			if !haveBest || c.m > best.m || c.m == best.m && c.borrow < best.borrow {
				*cur, *best = *best, *cur // best takes c; c's old buffers are reused
				haveBest = true
			}
		}
		if chosen == nil && haveBest {
			chosen = best
		}
		if chosen == nil {
			e.mode = modeNoFit
			e.keepBufs()
			return e
		}
		e.mode = min(e.mode, chosen.m)
		e.borrow = max(e.borrow, chosen.borrow)
		e.assign = append(e.assign, chosen.assign...)
		e.need = append(e.need, chosen.need...)
		if gpuGroup {
			if fm := k.flavMods[chosen.fl]; fm != nil {
				restricted = true
				models = fm
			}
		}
	}
	e.keepBufs()
	for ri, q := range req {
		if q > 0 && !tab.covered[ri] {
			e.mode = modeNoFit // requests a resource its ClusterQueue does not cover
			return e
		}
	}
	if restricted {
		e.models = models
	}
	k.tasNominate(v, e)
	return e
}

// flavorAllowsJob: the flavor's nodes must include a GPU model the job allows.
func (k *Kueue) flavorAllowsJob(v *sim.View, fl int, s *sim.JobSpec) bool {
	fm := k.flavMods[fl]
	if fm == nil {
		return true
	}
	c := v.Cluster()
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		ns := c.Node(n)
		if (slices.Contains(fm, ns.GPUModel) || slices.Contains(fm, ns.Pool)) && s.AllowsModel(ns.GPUModel) {
			return true
		}
	}
	return false
}

// place finds nodes for an admitted workload on its flavors' nodes.
func (k *Kueue) place(c *sim.Cluster, w *workload) bool {
	if w.models == nil {
		return k.placer.Place(c, w.job, &k.pl)
	}
	k.tmp = *w.job
	var allowed []string
	for _, m := range c.Models() {
		if w.job.Spec.AllowsModel(m) && k.modelInFlavor(c, m, w.models) {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) == 0 {
		return false
	}
	k.tmp.Spec.GPUModels = allowed
	return k.placer.Place(c, &k.tmp, &k.pl)
}

func (k *Kueue) modelInFlavor(c *sim.Cluster, model string, fm []string) bool {
	if slices.Contains(fm, model) {
		return true
	}
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		if ns := c.Node(n); ns.GPUModel == model && slices.Contains(fm, ns.Pool) {
			return true
		}
	}
	return false
}

func capacityReason(c *sim.Cluster, w *workload) sim.Reason {
	s := &w.job.Spec
	if s.GPUsPerReplica > 0 && !s.Fractional() && int64(s.TotalGPUs()) <= c.FreeGPUs() {
		return sim.ReasonTopology
	}
	return sim.ReasonNoCapacity
}

// needFRs returns the flavor-resources a preemption must free (Kueue's
// flavorResourcesNeedPreemption: those assigned in Preempt mode): victims must
// use one of them and other ClusterQueues must borrow on one of them. Requests
// that fit on their own (e.g. CPU while the GPUs need preemption) do not count.
func (e *entry) needFRs() []frQ {
	if len(e.need) == 0 {
		return e.assign
	}
	return e.need
}

// heldQuota is quota a preemptor without candidates holds for one cycle.
type heldQuota struct {
	cq *clusterQueue
	frQ
}

// holdUnreclaimable is Kueue's reserveCapacityForUnreclaimablePreempt
// (scheduler.go; quotaResourcesToReserve): a head that needs preemption but found
// no candidates, in a ClusterQueue that cannot always reclaim its quota
// (reclaimWithinCohort not Any), holds quota for the rest of the cycle so that
// heads processed after it cannot take it: its whole request where it would
// borrow (capped by the borrowing limit), else what is left of its nominal quota.
// A StrictFIFO head repeats this every cycle; a BestEffortFIFO head is parked.
func (k *Kueue) holdUnreclaimable(e *entry, held []heldQuota) []heldQuota {
	cq := e.w.cq
	if cq.reclaim == "Any" {
		return held
	}
	n := cq.node
	borrowing := false // Kueue: Assignment.Borrowing > 0 (FindHeightOfLowestSubtreeThatFits without victims)
	for _, a := range e.assign {
		if n.parent != nil && n.usage[a.fr]+a.q > n.nominal[a.fr] {
			borrowing = true
		}
	}
	for _, a := range e.assign {
		q := max(0, min(a.q, n.nominal[a.fr]-n.usage[a.fr]))
		if borrowing {
			q = a.q
			if n.borrowLim[a.fr] != noLimit {
				q = max(0, min(a.q, n.nominal[a.fr]+n.borrowLim[a.fr]-n.usage[a.fr]))
			}
		}
		if q > 0 {
			n.addUsage(a.fr, q)
			held = append(held, heldQuota{cq, frQ{a.fr, q}})
		}
	}
	return held
}

// reserve adds a preemptor's requests to its queue's usage until it is admitted.
func (k *Kueue) reserve(w *workload, assign []frQ) {
	k.unreserve(w)
	w.reserved = append(w.reserved[:0], assign...)
	for _, a := range assign {
		w.cq.node.addUsage(a.fr, a.q)
	}
}

// unreserve drops a preemptor's reservation.
func (k *Kueue) unreserve(w *workload) {
	for _, a := range w.reserved {
		w.cq.node.addUsage(a.fr, -a.q)
	}
	w.reserved = w.reserved[:0]
}
