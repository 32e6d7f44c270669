package kueue

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// randomTree draws Kueue manifests: a root cohort r (maybe with its own quota),
// maybe a child cohort s, and 2-4 ClusterQueues under r or s, on two flavors of
// GPUs and CPUs, with random nominal quotas, borrowing/lending limits and
// fair-sharing weights (0 included).
func randomTree(t *rapid.T, extra string) (manifests string, cqs []string) {
	var b strings.Builder
	b.WriteString("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f1}\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f2}\n")
	weights := []string{"0", "0.5", "1", "2", "3"}
	quota := func(prefix string, limits bool) string {
		var s strings.Builder
		s.WriteString(prefix + "resourceGroups:\n" + prefix + "- coveredResources: [nvidia.com/gpu, cpu]\n" + prefix + "  flavors:\n")
		for _, f := range []string{"f1", "f2"} {
			fmt.Fprintf(&s, "%s  - name: %s\n%s    resources:\n", prefix, f, prefix)
			for _, r := range []string{"nvidia.com/gpu", "cpu"} {
				fmt.Fprintf(&s, "%s    - {name: %s, nominalQuota: %d", prefix, r, rapid.IntRange(0, 8).Draw(t, "nominal"))
				if limits && rapid.Bool().Draw(t, "hasBL") {
					fmt.Fprintf(&s, ", borrowingLimit: %d", rapid.IntRange(0, 6).Draw(t, "borrowingLimit"))
				}
				if limits && rapid.Bool().Draw(t, "hasLL") {
					fmt.Fprintf(&s, ", lendingLimit: %d", rapid.IntRange(0, 6).Draw(t, "lendingLimit"))
				}
				s.WriteString("}\n")
			}
		}
		return s.String()
	}
	b.WriteString("---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: r}\n")
	if rapid.Bool().Draw(t, "rootQuota") {
		b.WriteString("spec:\n" + quota("  ", false))
	}
	parents := []string{"r"}
	if rapid.Bool().Draw(t, "subCohort") {
		fmt.Fprintf(&b, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: s}\nspec:\n  parentName: r\n  fairSharing: {weight: \"%s\"}\n", rapid.SampledFrom(weights).Draw(t, "cohortWeight"))
		if rapid.Bool().Draw(t, "subQuota") {
			b.WriteString(quota("  ", true))
		}
		parents = append(parents, "s")
	}
	n := rapid.IntRange(2, 4).Draw(t, "cqs")
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("cq%d", i)
		cqs = append(cqs, name)
		fmt.Fprintf(&b, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: %s}\nspec:\n  cohortName: %s\n  fairSharing: {weight: \"%s\"}\n%s",
			name, rapid.SampledFrom(parents).Draw(t, "parent"), rapid.SampledFrom(weights).Draw(t, "weight"), extra)
		b.WriteString(quota("  ", true))
		fmt.Fprintf(&b, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: %s}\nspec: {clusterQueue: %s}\n", name, name)
	}
	b.WriteString("---\n" + fsOn)
	return b.String(), cqs
}

// ref recomputes the quota tree from scratch (policies.md 1.1, 1.5) from the
// ClusterQueues' usage alone.
type ref struct {
	k     *Kueue
	cqUse map[*qnode][]int64
}

func (r *ref) subtree(n *qnode, fr int) int64 {
	s := n.nominal[fr]
	for _, c := range n.children {
		s += r.subtree(c, fr) - r.local(c, fr)
	}
	return s
}

func (r *ref) local(n *qnode, fr int) int64 {
	if n.lendLim[fr] == noLimit {
		return 0
	}
	return max(0, r.subtree(n, fr)-n.lendLim[fr])
}

func (r *ref) usage(n *qnode, fr int) int64 {
	if n.isCQ {
		return r.cqUse[n][fr]
	}
	var u int64
	for _, c := range n.children {
		u += max(0, r.usage(c, fr)-r.local(c, fr))
	}
	return u
}

func (r *ref) potential(n *qnode, fr int) int64 {
	if n.parent == nil {
		return r.subtree(n, fr)
	}
	p := r.local(n, fr) + r.potential(n.parent, fr)
	if n.borrowLim[fr] != noLimit {
		p = min(p, r.subtree(n, fr)+n.borrowLim[fr])
	}
	return p
}

// share is the weighted DRS: max over resources of 1000 * (usage above quota,
// summed over flavors) / (what the parent could lend, summed over flavors), /
// weight; +Inf for a borrowing weight-0 node (ratio is then its unweighted ratio,
// which orders two infinite shares).
func (r *ref) share(n *qnode) (share, ratio float64) {
	if n.parent == nil {
		return 0, 0
	}
	borrowing := false
	borrowed, lendable := map[string]int64{}, map[string]int64{}
	for key, fr := range r.k.frIndex {
		if b := r.usage(n, fr) - r.subtree(n, fr); b > 0 {
			borrowed[key[1]] += b
			borrowing = true
		}
		lendable[key[1]] += r.potential(n.parent, fr)
	}
	for res, b := range borrowed {
		if lendable[res] > 0 {
			ratio = max(ratio, float64(b)*1000/float64(lendable[res]))
		}
	}
	switch {
	case n.weight == 0 && borrowing:
		return math.Inf(1), ratio
	case ratio == 0:
		return 0, 0
	}
	return ratio / n.weight, ratio
}

// refLess orders two shares (with their unweighted ratios).
func refLess(sa, ra, sb, rb float64) (less, equal bool) {
	if math.IsInf(sa, 1) && math.IsInf(sb, 1) {
		return ra < rb, ra == rb
	}
	return sa < sb, sa == sb
}

// Property: after random admissions and releases (each admission fits
// available()), the DRS the policy computes for every node equals a from-scratch
// recomputation over the quota tree, and the entry the fair-sharing tournament
// picks equals a from-scratch tournament (usage added per candidate; at each
// cohort non-borrowing first, then lower share, then priority, then order).
func TestFairShareMatchesRecomputation(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, names := randomTree(t, "")
		k, err := New(Params{Inline: m}, policies.Env{})
		if err != nil {
			t.Fatal(err)
		}
		r := &ref{k: k, cqUse: map[*qnode][]int64{}}
		var nodes []*qnode
		for _, name := range names {
			n := k.cqByName[name].node
			r.cqUse[n] = make([]int64, len(k.frIndex))
			for x := n; x != nil; x = x.parent {
				nodes = append(nodes, x)
			}
		}
		type held struct {
			cq *clusterQueue
			fr int
			q  int64
		}
		var live []held
		frs := len(k.frIndex)
		for step := 0; step < 30; step++ {
			if len(live) > 0 && rapid.Bool().Draw(t, "release") {
				i := rapid.IntRange(0, len(live)-1).Draw(t, "which")
				h := live[i]
				h.cq.node.addUsage(h.fr, -h.q)
				r.cqUse[h.cq.node][h.fr] -= h.q
				live = append(live[:i], live[i+1:]...)
			} else {
				cq := k.cqByName[rapid.SampledFrom(names).Draw(t, "cq")]
				fr := rapid.IntRange(0, frs-1).Draw(t, "fr")
				q := int64(rapid.IntRange(1, 5).Draw(t, "q"))
				if q <= cq.node.available(fr) {
					cq.node.addUsage(fr, q)
					r.cqUse[cq.node][fr] += q
					live = append(live, held{cq: cq, fr: fr, q: q})
				}
			}
			for _, n := range nodes {
				want, _ := r.share(n)
				if got := k.drsOf(n).Share(); !(got == want || math.Abs(got-want) < 1e-9) {
					t.Fatalf("step %d: DRS(%s) = %v, recomputed %v", step, n.name, got, want)
				}
			}
			// A cycle's entries: one head per ClusterQueue with a random request.
			var es []*entry
			for i, name := range names {
				if !rapid.Bool().Draw(t, "hasHead") {
					continue
				}
				j := &sim.Job{Ref: sim.JobRef(i)}
				w := &workload{job: j, cq: k.cqByName[name], prio: int32(rapid.IntRange(0, 2).Draw(t, "prio"))}
				es = append(es, &entry{w: w, assign: []frQ{{rapid.IntRange(0, frs-1).Draw(t, "efr"), int64(rapid.IntRange(0, 6).Draw(t, "eq"))}}})
			}
			if len(es) == 0 {
				continue
			}
			if got, want := k.tournament(es), refTournament(r, es); got != want {
				t.Fatalf("step %d: tournament picked entry %d, recomputation %d", step, got, want)
			}
		}
	})
}

// refTournament runs the tournament from scratch: for a cohort, the best of its
// children's candidates, compared on the child node of each candidate's path with
// the candidate's request added to its ClusterQueue.
func refTournament(r *ref, es []*entry) int {
	value := func(i int, node *qnode) (float64, float64, bool) {
		e := es[i]
		u := r.cqUse[e.w.cq.node]
		for _, a := range e.assign {
			u[a.fr] += a.q
		}
		s, ratio := r.share(node)
		borrow := false
		for _, a := range e.assign {
			if r.usage(node, a.fr) > r.subtree(node, a.fr) {
				borrow = true
			}
		}
		for _, a := range e.assign {
			u[a.fr] -= a.q
		}
		return s, ratio, borrow
	}
	order := func(a, b int) bool {
		wa, wb := es[a].w, es[b].w
		if wa.prio != wb.prio {
			return wa.prio > wb.prio
		}
		return wa.job.Ref < wb.job.Ref
	}
	var run func(c *qnode) int
	run = func(c *qnode) int {
		best := -1
		for _, ch := range c.children {
			cand := -1
			if ch.isCQ {
				for i, e := range es {
					if e.w.cq.node == ch {
						cand = i
					}
				}
			} else {
				cand = run(ch)
			}
			if cand < 0 {
				continue
			}
			if best < 0 {
				best = cand
				continue
			}
			child := func(i int) *qnode {
				x := es[i].w.cq.node
				for x.parent != c {
					x = x.parent
				}
				return x
			}
			sc, rc, bc := value(cand, child(cand))
			sb, rb, bb := value(best, child(best))
			less, equal := refLess(sc, rc, sb, rb)
			switch {
			case bc != bb:
				if !bc {
					best = cand
				}
			case !equal:
				if less {
					best = cand
				}
			case order(cand, best):
				best = cand
			}
		}
		return best
	}
	return run(es[0].w.cq.node.root())
}

// gangCheck wraps the policy and checks, after every scheduling point, that each
// workload holding quota holds its whole request (no gang is partially admitted),
// that every ClusterQueue's usage is exactly what its admitted workloads and
// reservations hold, and that every running job runs all its replicas.
type gangCheck struct {
	*Kueue
	t *rapid.T
}

func (g gangCheck) Schedule(v *sim.View, p *sim.Plan) error {
	if err := g.Kueue.Schedule(v, p); err != nil {
		return err
	}
	k := g.Kueue
	want := map[*qnode][]int64{}
	for _, cq := range k.cqs {
		want[cq.node] = make([]int64, len(k.frIndex))
	}
	for _, w := range k.wls {
		if w == nil || w.cq == nil {
			continue
		}
		held := w.assign
		if w.state == wlPending || w.state == wlDone {
			if len(w.assign) > 0 && w.state == wlPending {
				g.t.Fatalf("pending workload %s still holds quota %v", w.job.Spec.ID, w.assign)
			}
			held = w.reserved
		}
		if len(held) == 0 {
			continue
		}
		var gpus int64
		for _, a := range held {
			want[w.cq.node][a.fr] += a.q
			if k.resNames[k.frRes[a.fr]] == ResGPU {
				gpus += a.q
			}
		}
		if gpus != int64(w.job.Spec.TotalGPUs()) {
			g.t.Fatalf("workload %s holds %d GPUs of quota, requests %d: partially admitted", w.job.Spec.ID, gpus, w.job.Spec.TotalGPUs())
		}
		if w.job.State == sim.StateRunning && int32(len(w.job.Nodes)) != w.job.Spec.Replicas {
			g.t.Fatalf("job %s runs %d of %d replicas", w.job.Spec.ID, len(w.job.Nodes), w.job.Spec.Replicas)
		}
	}
	for n, u := range want {
		for fr := range u {
			if n.usage[fr] != u[fr] {
				g.t.Fatalf("ClusterQueue %s usage[%d] = %d, its workloads hold %d", n.name, fr, n.usage[fr], u[fr])
			}
		}
	}
	return nil
}

// Property: with fair sharing (and reclaimWithinCohort: Any, and sometimes
// waitForPodsReady), random gangs on random quota trees are never partially
// admitted, quota usage always equals what admitted workloads hold, and every
// run ends.
func TestNoPartialGangAdmission(t *testing.T) {
	tt := t
	rapid.Check(t, func(t *rapid.T) {
		m, names := randomTree(t, "  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}\n")
		if rapid.Bool().Draw(t, "podsReady") {
			m = strings.Replace(m, "fairSharing: {}\n", "fairSharing: {}\nwaitForPodsReady: {timeout: 1m, requeuingStrategy: {backoffBaseSeconds: 5, backoffLimitCount: 3}}\n", 1)
		}
		g := sim.Duration(rapid.SampledFrom([]int{0, 5}).Draw(t, "grace")) * sim.Second
		gd := policies.Dur(g)
		k, err := New(Params{Inline: m, EvictionGracePeriod: &gd}, policies.Env{})
		if err != nil {
			t.Fatal(err)
		}
		var jobs []sim.JobSpec
		n := rapid.IntRange(4, 24).Draw(t, "jobs")
		for i := 0; i < n; i++ {
			jobs = append(jobs, MakeJob(fmt.Sprintf("j%02d", i)).Queue(rapid.SampledFrom(names).Draw(t, "queue")).
				GPUs(int32(rapid.IntRange(1, 4).Draw(t, "gpus"))).Replicas(int32(rapid.IntRange(1, 3).Draw(t, "replicas"))).
				Prio(int32(rapid.IntRange(0, 2).Draw(t, "prio"))).At(float64(rapid.IntRange(0, 50).Draw(t, "at"))).
				Dur(float64(rapid.IntRange(1, 100).Draw(t, "dur"))).Obj())
		}
		// Fair sharing plus priority preemption can cycle forever on some trees
		// (A reclaims from B, a higher-priority workload of A preempts A's, B then
		// preempts that one by share, ...), as it can in Kueue. A minimum run time
		// with checkpoints makes every run progress, so every run ends.
		e, err := sim.NewEngine(sim.Config{Cluster: Cluster(tt, Nodes(2, 8)), Jobs: jobs, Policy: gangCheck{k, t}, Seed: 1,
			PreemptMinRuntime: 2 * sim.Second, CheckpointInterval: sim.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}
