package kueue

import "math"

// noLimit marks an absent borrowing or lending limit.
const noLimit = int64(math.MinInt64)

// qnode is a node of the quota tree: a ClusterQueue (leaf) or a Cohort. All
// per-resource vectors are indexed by flavor-resource (fr) index.
type qnode struct {
	name     string
	isCQ     bool
	cq       *clusterQueue // the ClusterQueue of a leaf (nil for a Cohort)
	parent   *qnode
	children []*qnode

	nominal   []int64
	borrowLim []int64 // noLimit if unset
	lendLim   []int64 // noLimit if unset

	subtree []int64 // SubtreeQuota
	local   []int64 // localQuota: capacity kept inside the subtree (lending limit)
	usage   []int64
	fsNode  // fair-sharing weight and lendable capacity (fairsharing.go)
}

func newQNode(name string, isCQ bool, nfr int) *qnode {
	n := &qnode{name: name, isCQ: isCQ, nominal: make([]int64, nfr), borrowLim: make([]int64, nfr),
		lendLim: make([]int64, nfr), subtree: make([]int64, nfr), local: make([]int64, nfr), usage: make([]int64, nfr)}
	for i := range n.borrowLim {
		n.borrowLim[i], n.lendLim[i] = noLimit, noLimit
	}
	return n
}

// computeQuotas fills subtree and local bottom-up (Kueue resource_node.go):
//
//	SubtreeQuota(CQ)  = nominal
//	SubtreeQuota(Coh) = nominal + sum_children (SubtreeQuota(child) - localQuota(child))
//	localQuota(n)     = max(0, SubtreeQuota(n) - lendingLimit(n)) if set, else 0
func (n *qnode) computeQuotas() {
	for _, c := range n.children {
		c.computeQuotas()
	}
	for fr := range n.nominal {
		s := n.nominal[fr]
		for _, c := range n.children {
			s += c.subtree[fr] - c.local[fr]
		}
		n.subtree[fr] = s
		n.local[fr] = 0
		if n.lendLim[fr] != noLimit {
			n.local[fr] = max(0, s-n.lendLim[fr])
		}
	}
}

// addUsage adds q on fr to n and bubbles the part above n's local quota up:
// Usage(Coh) = sum_children max(0, Usage(child) - localQuota(child)).
func (n *qnode) addUsage(fr int, q int64) {
	for x := n; x != nil; x = x.parent {
		old := x.usage[fr]
		x.usage[fr] += q
		if x.parent == nil {
			return
		}
		d := max(0, x.usage[fr]-x.local[fr]) - max(0, old-x.local[fr])
		if d == 0 {
			return
		}
		q = d
	}
}

// available is how much more of fr n can admit (may be negative):
//
//	available(root) = SubtreeQuota - Usage
//	available(n)    = LocalAvailable(n) + min(available(parent),
//	                    [borrowingLimit set] (SubtreeQuota - local) - max(0, Usage - local) + borrowingLimit)
func (n *qnode) available(fr int) int64 {
	if n.parent == nil {
		return n.subtree[fr] - n.usage[fr]
	}
	localAvail := max(0, n.local[fr]-n.usage[fr])
	up := n.parent.available(fr)
	if n.borrowLim[fr] != noLimit {
		up = min(up, (n.subtree[fr]-n.local[fr])-max(0, n.usage[fr]-n.local[fr])+n.borrowLim[fr])
	}
	return localAvail + up
}

// potentialAvailable is the most n could ever get of fr with the whole tree idle.
func (n *qnode) potentialAvailable(fr int) int64 {
	if n.parent == nil {
		return n.subtree[fr]
	}
	p := n.local[fr] + n.parent.potentialAvailable(fr)
	if n.borrowLim[fr] != noLimit {
		p = min(p, n.subtree[fr]+n.borrowLim[fr])
	}
	return p
}

// borrowing reports whether n uses more of fr than its own subtree quota.
func (n *qnode) borrowing(fr int) bool { return n.usage[fr] > n.subtree[fr] }

// root returns the top of n's tree.
func (n *qnode) root() *qnode {
	for n.parent != nil {
		n = n.parent
	}
	return n
}

// borrowingLevel is how far up the tree quota for q more of fr must come from: 0
// within n's own quota, 1 from its parent's subtree, and so on.
func (n *qnode) borrowingLevel(fr int, q int64) int {
	lvl := 0
	for x := n; x != nil; x = x.parent {
		if x.usage[fr]+q <= x.subtree[fr] {
			return lvl
		}
		lvl++
	}
	return lvl
}

// depth is how many ancestors n has (the root's borrowing level from n).
func (n *qnode) depth() int {
	d := 0
	for x := n.parent; x != nil; x = x.parent {
		d++
	}
	return d
}
