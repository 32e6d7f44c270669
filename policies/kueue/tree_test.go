package kueue

import (
	"testing"

	"pgregory.net/rapid"
)

// Hand-worked quota tree: cohort "root" with its own 4 GPUs; CQ a (nominal 10,
// lendingLimit 4 -> 6 kept local), CQ b (nominal 6, borrowingLimit 5).
func TestQuotaTreeFormulas(t *testing.T) {
	root := newQNode("root", false, 1)
	root.nominal[0] = 4
	a := newQNode("a", true, 1)
	a.nominal[0], a.lendLim[0] = 10, 4
	b := newQNode("b", true, 1)
	b.nominal[0], b.borrowLim[0] = 6, 5
	for _, c := range []*qnode{a, b} {
		c.parent = root
		root.children = append(root.children, c)
	}
	root.computeQuotas()
	if root.subtree[0] != 4+(10-6)+6 || a.local[0] != 6 || b.local[0] != 0 {
		t.Fatalf("subtree %d local a %d b %d", root.subtree[0], a.local[0], b.local[0])
	}
	// a can use its 10 plus what the cohort can lend: 4 (root) + 6 (b) = 20.
	if got := a.available(0); got != 20 {
		t.Errorf("available(a) = %d, want 20", got)
	}
	// b: borrowingLimit 5 caps it at 6+5 = 11 although the cohort has 14 lendable.
	if got := b.available(0); got != 11 {
		t.Errorf("available(b) = %d, want 11", got)
	}
	// a uses 8: 6 stay local, 2 bubble up to the cohort.
	a.addUsage(0, 8)
	if root.usage[0] != 2 {
		t.Errorf("cohort usage %d, want 2", root.usage[0])
	}
	if got := b.available(0); got != 11 {
		t.Errorf("after a uses 8, available(b) = %d, want 11 (cohort still has 12 free)", got)
	}
	b.addUsage(0, 11)
	// a's usage 8 is above its local 6, so nothing local is left; the cohort has
	// 14 - (2 + 11) = 1 left: b borrowed one GPU of what a lends, and a would have
	// to reclaim it by preemption.
	if got := a.available(0); got != 1 {
		t.Errorf("available(a) = %d, want 1", got)
	}
	if a.potentialAvailable(0) != 6+14 || b.potentialAvailable(0) != 11 {
		t.Errorf("potentialAvailable a %d b %d", a.potentialAvailable(0), b.potentialAvailable(0))
	}
	a.addUsage(0, -8)
	b.addUsage(0, -11)
	if root.usage[0] != 0 || a.usage[0] != 0 || b.usage[0] != 0 {
		t.Error("usage not restored")
	}
}

// Property: admitting whatever fits (available >= q) never lets a ClusterQueue
// exceed nominal + borrowingLimit, never lets the cohort's usage exceed its
// subtree quota, and never lets others use what a lendingLimit keeps local.
func TestQuotaTreeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		root := newQNode("root", false, 1)
		root.nominal[0] = int64(rapid.IntRange(0, 8).Draw(t, "rootq"))
		n := rapid.IntRange(1, 4).Draw(t, "cqs")
		var cqs []*qnode
		for i := 0; i < n; i++ {
			c := newQNode("cq", true, 1)
			c.nominal[0] = int64(rapid.IntRange(0, 16).Draw(t, "nominal"))
			if rapid.Bool().Draw(t, "bl") {
				c.borrowLim[0] = int64(rapid.IntRange(0, 8).Draw(t, "borrowLimit"))
			}
			if rapid.Bool().Draw(t, "ll") {
				c.lendLim[0] = int64(rapid.IntRange(0, 16).Draw(t, "lendLimit"))
			}
			c.parent = root
			root.children = append(root.children, c)
			cqs = append(cqs, c)
		}
		root.computeQuotas()
		type held struct {
			c *qnode
			q int64
		}
		var live []held
		for step := 0; step < 40; step++ {
			if len(live) > 0 && rapid.Bool().Draw(t, "release") {
				i := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				live[i].c.addUsage(0, -live[i].q)
				live = append(live[:i], live[i+1:]...)
			} else {
				c := cqs[rapid.IntRange(0, n-1).Draw(t, "cq")]
				q := int64(rapid.IntRange(1, 6).Draw(t, "q"))
				if q <= c.available(0) {
					c.addUsage(0, q)
					live = append(live, held{c, q})
				}
			}
			var sum int64
			for _, c := range cqs {
				if c.borrowLim[0] != noLimit && c.usage[0] > c.nominal[0]+c.borrowLim[0] {
					t.Fatalf("usage %d > nominal %d + borrowingLimit %d", c.usage[0], c.nominal[0], c.borrowLim[0])
				}
				sum += c.usage[0]
				// what this CQ keeps local (nominal - lendingLimit) is never used by others
				var others int64
				for _, o := range cqs {
					if o != c {
						others += o.usage[0]
					}
				}
				// others can use at most their own quotas, the cohort's and what c lends
				if others > root.nominal[0]+sumOtherSubtree(cqs, c)+(c.subtree[0]-c.local[0]) {
					t.Fatalf("others use %d, more than c's lending limit allows", others)
				}
			}
			if sum > root.nominal[0]+sumSubtree(cqs) {
				t.Fatalf("total usage %d exceeds total quota", sum)
			}
			// the cohort's bubbled usage equals the sum of each child's usage above its local part
			var bub int64
			for _, c := range cqs {
				bub += max(0, c.usage[0]-c.local[0])
			}
			if bub != root.usage[0] || root.usage[0] > root.subtree[0] {
				t.Fatalf("cohort usage %d, recomputed %d, subtree %d", root.usage[0], bub, root.subtree[0])
			}
		}
	})
}

func sumSubtree(cqs []*qnode) int64 {
	var s int64
	for _, c := range cqs {
		s += c.subtree[0]
	}
	return s
}

func sumOtherSubtree(cqs []*qnode, not *qnode) int64 {
	var s int64
	for _, c := range cqs {
		if c != not {
			s += c.subtree[0]
		}
	}
	return s
}
