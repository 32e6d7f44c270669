package kueue

// pvariant is how a classical preemption candidate may be evicted (Kueue
// classical/hierarchical_preemption.go preemptionVariant).
type pvariant uint8

const (
	pvWithinCQ         pvariant = iota // the preemptor's own ClusterQueue (withinClusterQueue)
	pvHierarchical                     // the preemptor's request fits in a subtree below the LCA: evictable while borrowing
	pvWithoutBorrowing                 // only if the preemptor then does not borrow
	pvWhileBorrowing                   // borrowWithinCohort: even if the preemptor borrows
)

// group is the candidate list the variant belongs to: Kueue's candidate order is
// hierarchical ++ priority (without / while borrowing) ++ same-queue candidates,
// each sorted by CandidatesOrdering.
func (v pvariant) group() int {
	switch v {
	case pvHierarchical:
		return 0
	case pvWithinCQ:
		return 2
	}
	return 1
}

// allowedBy reports whether a preemption policy (withinClusterQueue or
// reclaimWithinCohort) lets w evict x (Kueue satisfiesPreemptionPolicy).
func allowedBy(policy string, w, x *workload) bool {
	switch policy {
	case "LowerPriority":
		return x.prio < w.prio
	case "LowerOrNewerEqualPriority":
		return x.prio < w.prio || x.prio == w.prio && w.qts < x.qts
	case "Any":
		return true
	}
	return false
}

// fitsInQuota is Kueue's QuantitiesFitInQuota: whether req fits n's own subtree
// quota (usage + q <= SubtreeQuota for every resource) and what of req is left
// for n's parent once n's local (lending-limit) quota is used.
func fitsInQuota(n *qnode, req []frQ, rem []frQ) (bool, []frQ) {
	fits := true
	rem = rem[:0]
	for _, a := range req {
		if n.usage[a.fr]+a.q > n.subtree[a.fr] {
			fits = false
		}
		rem = append(rem, frQ{a.fr, max(0, a.q-max(0, n.local[a.fr]-n.usage[a.fr]))})
	}
	return fits, rem
}

// targets chooses victims for a preempting entry with Kueue's classical
// algorithm (preemption.go classicalPreemptions, classical/candidate_generator.go,
// classical/hierarchical_preemption.go). Candidates use a flavor-resource that
// needs preemption and are running or admitted (k.candidate: not already being
// evicted, unless preemptorReservation is false):
//   - same-queue candidates (withinClusterQueue);
//   - with reclaimWithinCohort, workloads allowed by it in ClusterQueues (and
//     subtrees) above their quota on what needs preemption, collected walking up
//     from the preemptor: once its request fits the quota of the preemptor's
//     ClusterQueue or of an ancestor below the candidate's lowest common ancestor,
//     the candidate is hierarchical (evictable even if the preemptor borrows);
//     otherwise it is evictable only if the preemptor does not borrow, unless
//     borrowWithinCohort allows it (lower priority, at most maxPriorityThreshold).
//
// Order: (preemptorReservation false) those already being evicted first; then
// hierarchical, then the other cross-queue, then same-queue candidates,
// each by (AFS) LocalQueue usage, lower priority, most recently admitted, then
// id. Attempts with borrowing allowed and/or forbidden as Kueue orders them;
// candidates are removed in order (skipping those whose queue, or an ancestor
// below the LCA, no longer exceeds its quota) until the preemptor fits; then a
// reverse fill-back drops victims that turned out unnecessary. The quota tree
// is restored before returning.
func (k *Kueue) targets(e *entry) []*workload {
	if k.fairOn() {
		return k.fairTargets(e)
	}
	w := e.w
	C := w.cq
	defer k.tasWhatIf(e)() // TAS: candidates are also released on a copy of the cluster
	need := e.needFRs()
	uses := func(x *workload) bool { return x.usesAny(need) }
	cands := k.candBuf[:0]
	defer func() { k.candBuf = cands[:0] }()
	ok := func(x *workload) bool { return uses(x) && k.candidate(x) }
	if C.within != "Never" {
		for _, x := range C.admitted {
			if ok(x) && allowedBy(C.within, w, x) {
				x.pv, x.pvLCA = pvWithinCQ, nil
				cands = append(cands, x)
			}
		}
	}
	nSame, nHier := len(cands), 0
	if nSame == 0 && C.bwc != "LowerPriority" && !k.underNominal(C, need) && !k.hierPossible(C, e.assign) {
		// The only attempt allows borrowing, and every cross-queue candidate would
		// be pvWithoutBorrowing, which it refuses: no victims, whatever the walk
		// below collects (Attempt order and valid).
		return nil
	}
	if C.node.parent != nil && C.reclaim != "Never" {
		// collect walks the subtree of cur (skipping skip) and adds the workloads
		// of ClusterQueues above their quota on what needs preemption, descending
		// only into cohorts above theirs (Kueue collectCandidatesInSubtree).
		var collect func(cur, lca, skip *qnode, adv bool)
		collect = func(cur, lca, skip *qnode, adv bool) {
			for _, ch := range cur.children {
				if ch == skip || ch == C.node || !borrowingOnNode(ch, need) {
					continue
				}
				if !ch.isCQ {
					collect(ch, lca, nil, adv)
					continue
				}
				for _, x := range ch.cq.admitted {
					if !ok(x) || !allowedBy(C.reclaim, w, x) {
						continue
					}
					switch {
					case adv:
						x.pv = pvHierarchical
						nHier++
					case C.bwc != "LowerPriority" || x.prio >= w.prio || C.bwcThresh != nil && x.prio > *C.bwcThresh:
						x.pv = pvWithoutBorrowing
					default:
						x.pv = pvWhileBorrowing
					}
					x.pvLCA = lca
					cands = append(cands, x)
				}
			}
		}
		adv, rem := fitsInQuota(C.node, e.assign, k.remQ[:0])
		var prev *qnode
		for cur := C.node.parent; cur != nil; cur = cur.parent {
			collect(cur, cur, prev, adv)
			var fits bool
			fits, rem = fitsInQuota(cur, rem, rem)
			adv = adv || fits
			prev = cur
		}
		k.remQ = rem[:0]
	}
	if len(cands) == 0 {
		return nil
	}
	// Attempt order (classicalPreemptions): borrowing allowed only, when there is
	// no cross-queue candidate or (without borrowWithinCohort) the preemptor's
	// queue is not below its nominal quota on what needs preemption; forbidden
	// first when there is no hierarchical candidate; else allowed first.
	forbidden := C.bwc != "LowerPriority"
	under := k.underNominal(C, need)
	var attempts []bool
	switch {
	case len(cands) == nSame || forbidden && !under:
		attempts = []bool{true}
	case forbidden && nHier == 0:
		attempts = []bool{false, true}
	default:
		attempts = []bool{true, false}
	}
	// Quota is monotone in removals: an attempt can only succeed if the preemptor
	// fits once every candidate it may remove is gone (valid may refuse more, never
	// fewer), at least one. When no attempt can, the candidates need no ordering.
	if k.tas == nil {
		possible := false
		for _, allowBorrow := range attempts {
			if k.attemptPossible(e, cands, allowBorrow) {
				possible = true
				break
			}
		}
		if !possible {
			return nil
		}
	}
	// Candidates are taken in order until the preemptor fits, usually after a
	// few: a lazily popped heap (or, for a few candidates, a sort) of precomputed
	// keys. The order is total (it ends with the JobRef), so the result is the
	// sorted order's.
	ord := &k.candOrd
	if k.afs.cfg == nil {
		ord.reset(cands, nil) // afsCandCmp is 0: the keys decide
	} else {
		if k.candCmpFn == nil {
			k.candCmpFn = k.classicalCandCmp
		}
		ord.reset(cands, k.candCmpFn)
	}
	// valid is Kueue's candidateIsValid: a cross-queue candidate only while its
	// ClusterQueue and its ancestors below the LCA still exceed their quota on
	// what needs preemption (earlier removals may have ended that).
	valid := func(x *workload, allowBorrow bool) bool {
		if x.cq == C {
			return true
		}
		if allowBorrow && x.pv == pvWithoutBorrowing {
			return false
		}
		for n := x.cq.node; n != nil && n != x.pvLCA; n = n.parent {
			if !borrowingOnNode(n, need) {
				return false
			}
		}
		return true
	}
	for _, allowBorrow := range attempts {
		removed := k.remBuf[:0]
		found := false
		for i := 0; ; i++ {
			x := ord.at(i)
			if x == nil {
				break
			}
			if !valid(x, allowBorrow) {
				continue
			}
			k.take(x, -1)
			removed = append(removed, x)
			if k.fitsEntry(e, allowBorrow) {
				found = true
				break
			}
		}
		if found {
			removed = k.fillBack(e, removed, allowBorrow)
		}
		for _, x := range removed {
			k.take(x, +1)
		}
		k.remBuf = removed[:0]
		if found {
			return removed // valid until the next targets call
		}
	}
	return nil
}

// take adds (sign +1) or removes (-1) x's usage in the quota tree (what-if).
func (k *Kueue) take(x *workload, sign int64) {
	for _, a := range x.assign {
		x.cq.node.addUsage(a.fr, sign*a.q)
	}
	k.tasTake(x, sign)
}

func (k *Kueue) borrowingOn(cq *clusterQueue, assign []frQ) bool {
	for _, a := range assign {
		if cq.node.borrowing(a.fr) {
			return true
		}
	}
	return false
}

// usesAny reports whether x holds quota on any flavor-resource of need.
func (x *workload) usesAny(need []frQ) bool {
	for _, a := range x.assign {
		for _, b := range need {
			if a.fr == b.fr {
				return true
			}
		}
	}
	return false
}

// attemptPossible is a necessary condition for a targets attempt to find victims:
// some candidate may be removed (same queue, or not pvWithoutBorrowing when
// borrowing is allowed) and e fits with all of those removed (fitsWithout).
func (k *Kueue) attemptPossible(e *entry, cands []*workload, allowBorrow bool) bool {
	for _, x := range cands {
		if x.cq == e.w.cq || !allowBorrow || x.pv != pvWithoutBorrowing {
			return k.fitsWithout(e, cands, allowBorrow, allowBorrow)
		}
	}
	return false
}

// underNominal reports whether C uses less than its nominal quota on every
// flavor-resource of need (targets' attempt order).
func (k *Kueue) underNominal(C *clusterQueue, need []frQ) bool {
	for _, a := range need {
		if C.node.usage[a.fr] >= C.node.nominal[a.fr] {
			return false
		}
	}
	return true
}

// hierPossible reports whether targets' walk up from C could mark a candidate
// hierarchical: whether, at some level that collects candidates (C's parent up
// to the root), the request already fits the quota of C or of an ancestor below
// that level (the adv of targets, computed the same way).
func (k *Kueue) hierPossible(C *clusterQueue, assign []frQ) bool {
	adv, rem := fitsInQuota(C.node, assign, k.remQ[:0])
	defer func() { k.remQ = rem[:0] }()
	for cur := C.node.parent; cur != nil; cur = cur.parent {
		if adv {
			return true
		}
		var fits bool
		fits, rem = fitsInQuota(cur, rem, rem)
		adv = fits
	}
	return false
}
