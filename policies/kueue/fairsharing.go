package kueue

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/gpusim/gpusim/sim"
)

// ext holds the state of the features a Kueue Configuration turns on: fair
// sharing (this file), Admission Fair Sharing (afs.go) and waitForPodsReady
// (podsready.go). It is embedded in Kueue.
type ext struct {
	now      sim.Time
	resNames []string // resource names of the quota tree, sorted
	frRes    []int    // flavor-resource index -> resource index
	drsBuf   []int64  // per-resource scratch for drsOf

	afs afsState
	prd podsReadyState
}

// fsNode is a quota-tree node's fair-sharing data; it is embedded in qnode.
type fsNode struct {
	weight   float64 // fairSharing.weight (default 1)
	lendable []int64 // per resource: sum over flavors of potentialAvailable(parent) (quota only, so fixed)
}

// cqExt is a ClusterQueue's extra data; it is embedded in clusterQueue.
type cqExt struct {
	afsOn  bool // admissionScope UsageBasedAdmissionFairSharing with AFS configured
	afsLQs int  // LocalQueues pointing at it (AFS head search stops when all are seen)
}

// wlExt is a workload's extra data; it is embedded in workload.
type wlExt struct {
	qts        sim.Time // queue-order timestamp: creation, or eviction (waitForPodsReady)
	lq         *lqState // its LocalQueue (Admission Fair Sharing)
	admittedAt sim.Time // last admission (waitForPodsReady deadline base)
	requeues   int32    // waitForPodsReady requeue count
	requeueAt  sim.Time // backoff end while inBackoff
	inBackoff  bool
	inactive   bool // deactivated: backoffLimitCount exceeded
}

func (k *Kueue) fairOn() bool { return k.m.Config != nil && k.m.Config.FairSharing != nil }

// setupExt prepares the Configuration features once the quota tree is built.
func (k *Kueue) setupExt() {
	res := map[string]int{}
	for key := range k.frIndex {
		res[key[1]] = 0
	}
	k.resNames = slices.Sorted(maps.Keys(res))
	for i, r := range k.resNames {
		res[r] = i
	}
	k.frRes = make([]int, len(k.frIndex))
	for key, fr := range k.frIndex {
		k.frRes[fr] = res[key[1]]
	}
	k.drsBuf = make([]int64, len(k.resNames))
	seen := map[*qnode]bool{}
	for _, cq := range k.cqs {
		cq.node.weight = weightOf(k.m.ClusterQueues[cq.name].FairSharing)
		for x := cq.node; x != nil && !seen[x]; x = x.parent {
			seen[x] = true
			if !x.isCQ {
				x.weight = 1
				if spec, ok := k.m.Cohorts[x.name]; ok {
					x.weight = weightOf(spec.FairSharing)
				}
			}
			x.lendable = make([]int64, len(k.resNames))
			if x.parent != nil {
				for fr := range x.usage {
					x.lendable[k.frRes[fr]] += x.parent.potentialAvailable(fr)
				}
			}
		}
	}
	k.setupAFS()
}

// drs is a node's Dominant Resource Share (Kueue pkg/cache/scheduler/fair_sharing.go).
type drs struct {
	ratio     float64 // max over resources of 1000 * borrowed / lendable (unweighted)
	weight    float64
	borrowing bool // usage above quota on some flavor-resource
}

// zeroWeightBorrows: a weight-0 node that borrows has an infinite share.
func (d drs) zeroWeightBorrows() bool { return d.weight == 0 && d.borrowing }

// Share is the weighted share: ratio / weight, +Inf for a borrowing weight-0
// node, 0 when not borrowing.
func (d drs) Share() float64 {
	if d.zeroWeightBorrows() {
		return math.Inf(1)
	}
	if d.ratio == 0 {
		return 0
	}
	return d.ratio / d.weight
}

// cmpDRS orders shares: infinite ones after every finite one, two infinite ones
// by their unweighted ratio.
func cmpDRS(a, b drs) int {
	switch {
	case a.zeroWeightBorrows() && b.zeroWeightBorrows():
		return cmp.Compare(a.ratio, b.ratio)
	case a.zeroWeightBorrows():
		return 1
	case b.zeroWeightBorrows():
		return -1
	}
	return cmp.Compare(a.Share(), b.Share())
}

// drsOf computes n's DRS from its current usage:
//
//	borrowed_r = sum over flavors of max(0, usage - subtreeQuota)
//	ratio      = max_r 1000 * borrowed_r / lendable_r   (lendable_r > 0)
//
// lendable (what the parent could ever lend, per resource) depends on quotas only
// and is precomputed, so this costs O(flavor-resources). The root's DRS is 0.
func (k *Kueue) drsOf(n *qnode) drs {
	d := drs{weight: n.weight}
	if n.parent == nil {
		return d
	}
	b := k.drsBuf
	clear(b)
	for fr, u := range n.usage {
		if x := u - n.subtree[fr]; x > 0 {
			b[k.frRes[fr]] += x
			d.borrowing = true
		}
	}
	if !d.borrowing {
		return d
	}
	for r, x := range b {
		if x > 0 && n.lendable[r] > 0 {
			d.ratio = max(d.ratio, float64(x)*1000/float64(n.lendable[r]))
		}
	}
	return d
}

// DominantResourceShare returns the weighted DRS of a ClusterQueue or Cohort
// (by name; ClusterQueues first) at the current usage, as the fair-sharing
// ordering uses it (+Inf for a borrowing weight-0 node); ok is false for an
// unknown name.
func (k *Kueue) DominantResourceShare(name string) (share float64, ok bool) {
	if cq := k.cqByName[name]; cq != nil {
		return k.drsOf(cq.node).Share(), true
	}
	for _, cq := range k.cqs {
		for x := cq.node.parent; x != nil; x = x.parent {
			if x.name == name {
				return k.drsOf(x).Share(), true
			}
		}
	}
	return 0, false
}

func (k *Kueue) addAssign(cq *clusterQueue, assign []frQ, sign int64) {
	for _, a := range assign {
		cq.node.addUsage(a.fr, sign*a.q)
	}
}

// borrowingOn reports whether n uses more than its quota on a flavor-resource of assign.
func borrowingOnNode(n *qnode, assign []frQ) bool {
	for _, a := range assign {
		if n.usage[a.fr] > n.subtree[a.fr] {
			return true
		}
	}
	return false
}

// entryIterator yields the cycle's entries in processing order. Without fair
// sharing the entries are already sorted (classical order). With fair sharing,
// entries holding a reservation come first (in classical order), then the
// fair-sharing tournament picks the next entry, re-run after every pop because
// each admission changes usage.
func (k *Kueue) entryIterator(entries []*entry) func() *entry {
	i := 0
	if !k.fairOn() {
		return func() *entry {
			if i >= len(entries) {
				return nil
			}
			i++
			return entries[i-1]
		}
	}
	rest := slices.Clone(entries)
	return func() *entry {
		if len(rest) == 0 {
			return nil
		}
		if rest[0].held {
			e := rest[0]
			rest = rest[1:]
			return e
		}
		j := k.tournament(rest)
		e := rest[j]
		rest = slices.Delete(rest, j, j+1)
		return e
	}
}

// fsCand is an entry's values on one node of its path during a tournament.
type fsCand struct {
	d      drs
	borrow bool // the node borrows on a flavor-resource the entry requests
}

// tournament returns the index of the entry Kueue's fair-sharing iterator
// processes next (pkg/scheduler/fair_sharing_iterator.go): for every entry its
// usage is added to its ClusterQueue and the DRS of each node on the path to the
// root (root excluded) is computed; then each cohort, from the root down, picks
// among the candidates its children bubble up, comparing the values of the child
// node on the candidate's path: (1) a node not borrowing on what the entry
// requests beats one that is (FairSharingPrioritizeNonBorrowing, on by default);
// (2) lower DRS; (3) higher priority; (4) older queue-order timestamp; (5) JobRef.
// Entries of different cohort trees (and ClusterQueues without a cohort) do not
// share quota; between them the simulator picks by priority, timestamp, JobRef
// (Kueue's order there is unspecified).
func (k *Kueue) tournament(es []*entry) int {
	vals := make([]map[*qnode]fsCand, len(es))
	byCQ := make(map[*qnode]int, len(es))
	for i, e := range es {
		cq := e.w.cq
		byCQ[cq.node] = i
		if cq.node.parent == nil {
			continue
		}
		vals[i] = map[*qnode]fsCand{}
		k.addAssign(cq, e.assign, +1)
		for x := cq.node; x.parent != nil; x = x.parent {
			vals[i][x] = fsCand{d: k.drsOf(x), borrow: borrowingOnNode(x, e.assign)}
		}
		k.addAssign(cq, e.assign, -1)
	}
	less := func(a, b int, child func(int) *qnode) bool {
		if child != nil {
			va, vb := vals[a][child(a)], vals[b][child(b)]
			if va.borrow != vb.borrow {
				return !va.borrow
			}
			if c := cmpDRS(va.d, vb.d); c != 0 {
				return c < 0
			}
		}
		return k.less(es[a].w, es[b].w)
	}
	var run func(c *qnode) int
	run = func(c *qnode) int {
		best := -1
		onPathChild := func(i int) *qnode {
			x := es[i].w.cq.node
			for x.parent != c {
				x = x.parent
			}
			return x
		}
		for _, ch := range c.children {
			cand := -1
			if ch.isCQ {
				if i, ok := byCQ[ch]; ok {
					cand = i
				}
			} else {
				cand = run(ch)
			}
			if cand >= 0 && (best < 0 || less(cand, best, onPathChild)) {
				best = cand
			}
		}
		return best
	}
	winner := -1
	roots := map[*qnode]bool{}
	for i, e := range es {
		r := e.w.cq.node.root()
		if roots[r] {
			continue
		}
		roots[r] = true
		cand := i
		if r != e.w.cq.node {
			cand = run(r)
		}
		if winner < 0 || less(cand, winner, nil) {
			winner = cand
		}
	}
	return winner
}

// candidate reports whether x, admitted, may be a preemption candidate now.
// A workload already being evicted is one only with preemptorReservation
// false (Kueue lists it and sorts it first, CandidatesOrdering; preempting it
// again evicts nothing, IssuePreemptions' "Preemption ongoing"); otherwise x
// must be preemptible.
func (k *Kueue) candidate(x *workload) bool {
	if x.evicting {
		return k.retarget
	}
	return k.preemptible(x)
}

// preemptible reports whether x may be chosen as a victim now: a workload still
// waiting for placement holds quota and can always be evicted; a running one only
// if the engine allows preempting its job (minimum runtime, anti-churn window).
func (k *Kueue) preemptible(x *workload) bool {
	return x.state != wlRunning || x.job.Preemptible(k.now)
}

// candLess is Kueue's preemption candidate order (common/ordering.go) for a
// preemptor of ClusterQueue C: workloads already being evicted first (only
// candidates with preemptorReservation false); other ClusterQueues; (Admission
// Fair Sharing, same ClusterQueue, different LocalQueues) higher LocalQueue
// usage first; lower priority; most recently admitted; JobRef.
func (k *Kueue) candLess(C *clusterQueue, x, y *workload) bool {
	if x.evicting != y.evicting {
		return x.evicting
	}
	if (x.cq != C) != (y.cq != C) {
		return x.cq != C
	}
	if c := k.afsCandCmp(x, y); c != 0 {
		return c < 0
	}
	if x.prio != y.prio {
		return x.prio < y.prio
	}
	if x.admitSeq != y.admitSeq {
		return x.admitSeq > y.admitSeq
	}
	return x.job.Ref < y.job.Ref
}

// fairCandidates lists preemption candidates with fair sharing (Kueue
// findCandidates): workloads of the preemptor's ClusterQueue allowed by
// withinClusterQueue, and, with reclaimWithinCohort, workloads of any
// ClusterQueue of the cohort tree that borrows on a requested flavor-resource,
// allowed by that policy. Only workloads using a requested flavor-resource
// count, and (k.candidate) not already being evicted unless
// preemptorReservation is false.
func (k *Kueue) fairCandidates(e *entry) []*workload {
	w, C := e.w, e.w.cq
	need := e.needFRs()
	uses := func(x *workload) bool { return x.usesAny(need) }
	allowed := func(policy string, x *workload) bool {
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
	var out []*workload
	for _, cq := range k.cqs {
		policy := C.within
		if cq != C {
			if C.reclaim == "Never" || C.node.parent == nil || cq.node.root() != C.node.root() || !k.borrowingOn(cq, need) {
				continue
			}
			policy = C.reclaim
		}
		for _, x := range cq.admitted {
			if uses(x) && allowed(policy, x) && k.candidate(x) {
				out = append(out, x)
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return k.candLess(C, out[a], out[b]) })
	return out
}

// fsOrdering yields target ClusterQueues for fair preemption
// (preemption/fairsharing/ordering.go): from the root, descend into the child with
// the highest DRS among children that borrow and still have candidates (the
// preemptor's ClusterQueue and the cohorts on its path are kept while they have
// candidates); a cohort wins a tie against a ClusterQueue; two ClusterQueues with
// equal DRS are ordered by their first candidates.
type fsOrdering struct {
	k      *Kueue
	pre    *clusterQueue
	onPath map[*qnode]bool
	cands  map[*qnode][]*workload
	pruned map[*qnode]bool
}

func (k *Kueue) newOrdering(C *clusterQueue, cands []*workload) *fsOrdering {
	o := &fsOrdering{k: k, pre: C, onPath: map[*qnode]bool{}, cands: map[*qnode][]*workload{}, pruned: map[*qnode]bool{}}
	for x := C.node.parent; x != nil; x = x.parent {
		o.onPath[x] = true
	}
	for _, c := range cands {
		o.cands[c.cq.node] = append(o.cands[c.cq.node], c)
	}
	return o
}

func (o *fsOrdering) next() *qnode {
	pn := o.pre.node
	if pn.parent == nil {
		if len(o.cands[pn]) > 0 {
			return pn
		}
		return nil
	}
	root := pn.root()
	for !o.pruned[root] {
		if t := o.nextTarget(root); t != nil {
			return t
		}
	}
	return nil
}

func (o *fsOrdering) nextTarget(c *qnode) *qnode {
	var bestCQ, bestCoh *qnode
	var dCQ, dCoh drs
	for _, ch := range c.children {
		if o.pruned[ch] {
			continue
		}
		d := o.k.drsOf(ch)
		zero := d.Share() == 0
		if ch.isCQ {
			if zero && ch != o.pre.node || len(o.cands[ch]) == 0 {
				o.pruned[ch] = true
				continue
			}
			if bestCQ == nil {
				bestCQ, dCQ = ch, d
				continue
			}
			cmp := cmpDRS(d, dCQ)
			if cmp > 0 || cmp == 0 && o.k.candLess(o.pre, o.cands[ch][0], o.cands[bestCQ][0]) {
				bestCQ, dCQ = ch, d
			}
			continue
		}
		if zero && !o.onPath[ch] {
			o.pruned[ch] = true
			continue
		}
		if bestCoh == nil || cmpDRS(d, dCoh) > 0 {
			bestCoh, dCoh = ch, d
		}
	}
	switch {
	case bestCQ == nil && bestCoh == nil:
		o.pruned[c] = true
		return nil
	case bestCoh != nil && (bestCQ == nil || cmpDRS(dCoh, dCQ) >= 0):
		return o.nextTarget(bestCoh)
	}
	return bestCQ
}

func (o *fsOrdering) pop(n *qnode) *workload {
	x := o.cands[n][0]
	o.cands[n] = o.cands[n][1:]
	return x
}

// almostLCAs returns the ancestors (or the queues themselves) of the preemptor's
// and the target's ClusterQueue just below their lowest common ancestor.
func (o *fsOrdering) almostLCAs(target *qnode) (pre, tgt *qnode) {
	lca := target.parent
	for !o.onPath[lca] {
		lca = lca.parent
	}
	below := func(x *qnode) *qnode {
		for x.parent != lca {
			x = x.parent
		}
		return x
	}
	return below(o.pre.node), below(target)
}

// strategyAllows applies a fair-sharing preemption strategy to the preemptor's
// share P' (with the incoming workload), the target's share T before and T' after
// removing the candidate. A preemptor with an infinite share (weight 0,
// borrowing) satisfies neither.
func strategyAllows(s string, pNew, tOld, tNew drs) bool {
	if pNew.zeroWeightBorrows() {
		return false
	}
	if s == StrategyLessThanInitialShare {
		return cmpDRS(pNew, tOld) < 0
	}
	return cmpDRS(pNew, tNew) <= 0
}

// fairTargets chooses victims with Kueue's fair-sharing preemption
// (preemption.go fairPreemptions): the preemptor's usage is added to its
// ClusterQueue; target ClusterQueues come from fsOrdering, re-selected after every
// eviction; in the preemptor's own ClusterQueue candidates are taken in order;
// elsewhere a candidate is taken when the preemptor's ClusterQueue stays within
// its nominal quota (FairSharingPreemptWithinNominal) or the first strategy allows
// it at the almost-LCA level; candidates it rejects get a second pass with
// LessThanInitialShare (at most one victim per target ClusterQueue). On success a
// reverse fill-back drops unnecessary victims. The quota tree is restored.
func (k *Kueue) fairTargets(e *entry) []*workload {
	C := e.w.cq
	cands := k.fairCandidates(e)
	if len(cands) == 0 {
		return nil
	}
	strategies := k.m.Config.FairSharing.PreemptionStrategies
	defer k.tasWhatIf(e)() // TAS: candidates are also released on a copy of the cluster
	k.addAssign(C, e.assign, +1)
	fits := func() bool {
		k.addAssign(C, e.assign, -1)
		ok := k.fitsEntry(e, true)
		k.addAssign(C, e.assign, +1)
		return ok
	}
	// FairSharingPreemptWithinNominal: decided once, with the preemptor's request
	// added and before any candidate is removed, on the flavor-resources needing
	// preemption (Kueue iterateWithFirstFsStrategy,
	// queueWithinNominalInResourcesNeedingPreemption): own-queue victims removed
	// later do not turn it on.
	withinNominal := true
	for _, a := range e.needFRs() {
		if C.node.usage[a.fr] > C.node.nominal[a.fr] {
			withinNominal = false
		}
	}
	var targets, retry []*workload
	found := false
	o := k.newOrdering(C, cands)
first:
	for t := o.next(); t != nil; t = o.next() {
		if t == C.node {
			x := o.pop(t)
			k.take(x, -1)
			targets = append(targets, x)
			if fits() {
				found = true
				break
			}
			continue
		}
		pl, tl := o.almostLCAs(t)
		pNew, tOld := k.drsOf(pl), k.drsOf(tl)
		for len(o.cands[t]) > 0 {
			x := o.pop(t)
			k.take(x, -1)
			if withinNominal || strategyAllows(strategies[0], pNew, tOld, k.drsOf(tl)) {
				targets = append(targets, x)
				if fits() {
					found = true
					break first
				}
				break // shares changed: re-select the target
			}
			k.take(x, +1)
			retry = append(retry, x)
		}
	}
	if !found && len(strategies) > 1 && len(retry) > 0 {
		o2 := k.newOrdering(C, retry)
		for t := o2.next(); t != nil; t = o2.next() {
			pl, tl := o2.almostLCAs(t)
			if strategyAllows(StrategyLessThanInitialShare, k.drsOf(pl), k.drsOf(tl), drs{}) {
				x := o2.pop(t)
				k.take(x, -1)
				targets = append(targets, x)
				if fits() {
					found = true
					break
				}
			}
			o2.pruned[t] = true // at most one victim per ClusterQueue in this pass
		}
	}
	k.addAssign(C, e.assign, -1)
	if found {
		targets = k.fillBack(e, targets, true)
	}
	for _, x := range targets {
		k.take(x, +1)
	}
	if !found {
		return nil
	}
	return targets
}

// fillBack re-adds the removed victims in reverse order (except the last) and
// drops those the preemptor does not need gone. The victims kept stay removed.
func (k *Kueue) fillBack(e *entry, removed []*workload, allowBorrow bool) []*workload {
	for i := len(removed) - 2; i >= 0; i-- {
		x := removed[i]
		k.take(x, +1)
		if k.fitsEntry(e, allowBorrow) {
			removed = slices.Delete(removed, i, i+1)
			continue
		}
		k.take(x, -1)
	}
	return removed
}

// WorkloadFairState is one workload's fair-sharing, AFS and waitForPodsReady
// state (for tests and explanations).
type WorkloadFairState struct {
	ClusterQueue string
	LocalQueue   string   // "namespace/name" (set with Admission Fair Sharing)
	Share        float64  // weighted DRS of its ClusterQueue now (+Inf: weight 0 and borrowing)
	QueueUsage   float64  // AFS usage of its LocalQueue (0 without AFS)
	QueueTime    sim.Time // queue-order timestamp: creation, or last PodsReady eviction
	Requeues     int32    // PodsReady requeues so far
	RequeueAt    sim.Time // end of the current backoff (valid while InBackoff)
	InBackoff    bool
	Deactivated  bool
}

// WorkloadState returns job j's state; ok is false for a job that has not
// arrived or matches no ClusterQueue.
func (k *Kueue) WorkloadState(j sim.JobRef) (s WorkloadFairState, ok bool) {
	if int(j) >= len(k.wls) || k.wls[j] == nil || k.wls[j].cq == nil {
		return s, false
	}
	w := k.wls[j]
	s = WorkloadFairState{ClusterQueue: w.cq.name, Share: k.drsOf(w.cq.node).Share(), QueueTime: w.qts,
		Requeues: w.requeues, RequeueAt: w.requeueAt, InBackoff: w.inBackoff, Deactivated: w.inactive}
	if w.lq != nil {
		s.LocalQueue, s.QueueUsage = w.lq.key, k.lqUsage(w.lq)
	}
	return s, true
}
