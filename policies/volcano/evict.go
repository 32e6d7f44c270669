package volcano

import (
	"math"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// preemptible is the engine's preemption protection (minimum run time,
// anti-churn window): victims it protects are never candidates.
func preemptible(j *sim.Job, now sim.Time) bool { return j.Preemptible(now) }

// evictAction runs the preempt action (reclaim=false: victims are other jobs of the
// preemptor's own queue) or the reclaim action (victims are jobs of other,
// reclaimable queues; the preemptor's queue must be below its deserved share:
// proportion's Preemptive). Starving jobs (Inqueue, not running, not pipelined
// this session) are visited queue by queue in queue order (reclaim skips overused
// queues), in job order. For each task, nodes are tried (preempt: by score;
// reclaim: by node id); on a node the candidates go through the tiered victim
// filter, victims are evicted in victim order until the task fits the node's
// future-idle resources (preempt: and the queue stays Allocatable), and the task is
// pipelined there; a node that does not work out has its evictions undone. The
// job's statement is committed only if every task was pipelined; otherwise its
// evictions are undone.
func (s *Volcano) evictAction(reclaim bool) {
	c := s.v.Cluster()
	onNode := make([][]*vjob, c.NumNodes())
	running := slices.Clone(s.v.Running())
	slices.SortFunc(running, func(a, b *sim.Job) int { return int(a.Ref - b.Ref) })
	for _, j := range running {
		vj := s.jobs[j.Ref]
		if vj.evictAt != sim.Never || !preemptible(j, s.now) {
			continue
		}
		for i, n := range j.Nodes {
			if i == 0 || !slices.Contains(j.Nodes[:i], n) {
				onNode[n] = append(onNode[n], vj)
			}
		}
	}
	for _, q := range s.cfg.queues {
		q.jobs = q.jobs[:0]
	}
	var pending []*vjob
	for j := range s.v.Pending() {
		pending = append(pending, s.jobs[j.Ref])
	}
	var qs []*queue
	for _, vj := range pending {
		// Jobs with a network topology do not preempt or reclaim (as in Volcano's
		// legacy preempt action at the snapshot read).
		if vj.inqueue && !vj.bestEffort && !vj.pipelined && !vj.started && !s.topoJob(vj) {
			vj.q.jobs = append(vj.q.jobs, vj)
		}
	}
	for _, q := range s.cfg.queues {
		if len(q.jobs) > 0 {
			s.sortJobs(q.jobs)
			qs = append(qs, q)
		}
	}
	for len(qs) > 0 {
		q := s.popQueue(&qs)
		if reclaim && s.overused(q) {
			continue
		}
		if len(q.jobs) == 0 {
			continue
		}
		vj := q.jobs[0]
		q.jobs = q.jobs[1:]
		s.evictFor(vj, reclaim, onNode)
		qs = append(qs, q)
	}
}

func (s *Volcano) evictFor(vj *vjob, reclaim bool, onNode [][]*vjob) {
	c := s.v.Cluster()
	s.place = s.place[:0]
	s.evicts = s.evicts[:0]
	q := vj.q
	ok := true
	var nodes []sim.NodeID
	for r := int32(0); r < vj.j.Spec.Replicas && ok; r++ {
		if reclaim && !s.allocatable(q, vj.task) {
			ok = false
			break
		}
		nodes = nodes[:0]
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			if s.predicate(vj, n) {
				nodes = append(nodes, n)
			}
		}
		if !reclaim {
			scores := make(map[sim.NodeID]float64, len(nodes))
			for _, n := range nodes {
				scores[n] = s.score(vj, n)
			}
			slices.SortStableFunc(nodes, func(a, b sim.NodeID) int {
				switch {
				case scores[a] > scores[b]+eps:
					return -1
				case scores[b] > scores[a]+eps:
					return 1
				}
				return int(a - b)
			})
		}
		// canPipeline: the task fits n's future-idle resources and, for preempt,
		// the queue stays Allocatable (preempt.go normalPreempt; reclaim checked
		// Preemptive once per task above).
		canPipeline := func(n sim.NodeID) bool {
			if !reclaim && !s.allocatable(q, vj.task) {
				return false
			}
			_, fit := s.fits(vj, n, s.future(n), true)
			return fit
		}
		placed := false
		for _, n := range nodes {
			if canPipeline(n) {
				s.pipeline(vj, n)
				placed = true
				break
			}
			var cands []*vjob
			for _, o := range onNode[n] {
				if o == vj || o.tentEvict || o.evictAt != sim.Never || o.j.State != sim.StateRunning {
					continue
				}
				if reclaim && (o.q == q || !o.q.reclaimable) || !reclaim && o.q != q {
					continue
				}
				cands = append(cands, o)
			}
			if len(cands) == 0 {
				continue
			}
			victims := s.tierVictims(reclaim, vj, cands)
			if len(victims) == 0 {
				continue
			}
			// ValidateVictims: future idle plus the victims' tasks on n must fit.
			avail := s.future(n)
			for _, v := range victims {
				avail = add(avail, scale(v.task, float64(countNode(v.j.Nodes, n))))
			}
			if !lessEqual(vj.task, avail) {
				continue
			}
			slices.SortStableFunc(victims, s.victimCmp)
			mark := len(s.evicts)
			for _, v := range victims {
				if canPipeline(n) {
					break
				}
				s.evictTent(v)
			}
			if canPipeline(n) {
				s.pipeline(vj, n)
				placed = true
				break
			}
			// The node did not work out: its evictions are discarded (a per-node
			// statement in preempt.go normalPreempt and reclaim.go reclaimForTask).
			for _, v := range s.evicts[mark:] {
				s.unevict(v)
			}
			s.evicts = s.evicts[:mark]
		}
		if !placed {
			ok = false
		}
	}
	if ok {
		for _, v := range s.evicts {
			v.tentEvict = false
			v.evictAt = s.now.Add(s.cfg.grace)
			s.evicting = append(s.evicting, v)
		}
		if len(s.evicts) > 0 {
			s.changed = true
		}
		slices.SortStableFunc(s.evicting, func(a, b *vjob) int {
			if a.evictAt != b.evictAt {
				if a.evictAt < b.evictAt {
					return -1
				}
				return 1
			}
			return int(a.j.Ref - b.j.Ref)
		})
		vj.nominated = vj.nominated[:0]
		for _, t := range s.place {
			vj.nominated = append(vj.nominated, t.n)
		}
		vj.pipelined = true
		vj.reason = sim.ReasonPreempting
		s.updateShare(q)
		return
	}
	// Discard the statement.
	for _, t := range s.place {
		s.hold[t.n] = sub(s.hold[t.n], vj.task)
	}
	q.allocated = sub(q.allocated, vj.alloc)
	vj.alloc = res{}
	for _, v := range s.evicts {
		s.unevict(v)
	}
	s.updateShare(q)
	s.place = s.place[:0]
	s.evicts = s.evicts[:0]
}

func countNode(ns []sim.NodeID, n sim.NodeID) int {
	k := 0
	for _, x := range ns {
		if x == n {
			k++
		}
	}
	return k
}

// pipeline puts one task of vj onto n's future-idle resources (held this session).
func (s *Volcano) pipeline(vj *vjob, n sim.NodeID) {
	s.place = append(s.place, tentTask{n: n, future: true, gpu: -1})
	s.hold[n] = add(s.hold[n], vj.task)
	vj.q.allocated = add(vj.q.allocated, vj.task)
	vj.alloc = add(vj.alloc, vj.task)
}

// evictTent evicts v within the current statement: the whole job (a sim job
// restarts as a whole, like a Volcano Job with the default PodEvicted ->
// RestartJob policy) becomes releasing on all its nodes and leaves its queue's
// allocation.
func (s *Volcano) evictTent(v *vjob) {
	v.tentEvict = true
	for _, n := range v.j.Nodes {
		s.rel[n] = add(s.rel[n], v.task)
	}
	v.q.allocated = sub(v.q.allocated, v.alloc)
	v.alloc = res{}
	s.updateShare(v.q)
	s.evicts = append(s.evicts, v)
}

// victimCmp is the victim order of Session.BuildVictimsPriorityQueue: victims of
// different queues (reclaim) by reverse QueueOrderFn (VictimQueueOrderFn without
// plugin functions: the queue that orders last goes first), victims of one queue
// by reverse JobOrderFn: the first plugin in tier order that distinguishes them
// decides — priority (lower job priority first), drf (larger share first); gang
// ties (all victims are ready) — then the newest job first.
func (s *Volcano) victimCmp(a, b *vjob) int {
	if a.q != b.q {
		switch {
		case s.queueLess(b.q, a.q):
			return -1
		case s.queueLess(a.q, b.q):
			return 1
		}
	}
	for _, tier := range s.cfg.tiers {
		for _, pl := range tier {
			switch pl {
			case "priority":
				if pa, pb := a.j.Spec.Priority, b.j.Spec.Priority; pa != pb {
					if pa < pb {
						return -1
					}
					return 1
				}
			case "drf":
				if sa, sb := s.drfShare(a.alloc), s.drfShare(b.alloc); sa != sb {
					if sa > sb {
						return -1
					}
					return 1
				}
			}
		}
	}
	return int(b.j.Ref - a.j.Ref)
}

// unevict undoes evictTent: v runs on and counts in its queue again.
func (s *Volcano) unevict(v *vjob) {
	v.tentEvict = false
	for _, n := range v.j.Nodes {
		s.rel[n] = sub(s.rel[n], v.task)
	}
	v.alloc = v.min
	v.q.allocated = add(v.q.allocated, v.min)
	s.updateShare(v.q)
}

// drfShare is drf's job share: max over dimensions of alloc / cluster total.
func (s *Volcano) drfShare(r res) float64 {
	var sh float64
	for d := range numDims {
		if s.total[d] > 0 {
			sh = math.Max(sh, r[d]/s.total[d])
		}
	}
	return sh
}

// tierVictims is Session.Preemptable / Reclaimable: in each tier, the victim lists
// of the plugins that have a victim function for this action are intersected; a
// plugin returning no victims empties the tier, which lets the next tier decide.
//
// Victim functions: priority (preempt only): lower job priority than the
// preemptor; gang: a task only while its job keeps more than minAvailable ready
// tasks — never for gpusim jobs, whose minAvailable is all their tasks, so a tier
// containing gang never decides; conformance: everything (no system pods); drf
// (preempt only): share(preemptor + task) < share(victim - task), or equal within
// 1e-6; proportion (reclaim only): from queues whose allocation, reduced by the
// victims taken so far, is still not within their deserved share.
func (s *Volcano) tierVictims(reclaim bool, pre *vjob, cands []*vjob) []*vjob {
	for _, tier := range s.cfg.tiers {
		var victims []*vjob
		init := false
		for _, pl := range tier {
			var out []*vjob
			switch pl {
			case "priority":
				if reclaim {
					continue
				}
				for _, c := range cands {
					if c.j.Spec.Priority < pre.j.Spec.Priority {
						out = append(out, c)
					}
				}
			case "gang":
				for _, c := range cands {
					ready, minAvailable := c.j.Spec.Replicas, c.j.Spec.Replicas
					if ready > minAvailable {
						out = append(out, c)
					}
				}
			case "conformance":
				out = cands
			case "drf":
				if reclaim {
					continue
				}
				l := s.drfShare(add(pre.alloc, pre.task))
				for _, c := range cands {
					r := s.drfShare(sub(c.alloc, c.task))
					if l < r || math.Abs(l-r) <= 1e-6 {
						out = append(out, c)
					}
				}
			case "proportion":
				if !reclaim {
					continue
				}
				tally := map[*queue]res{}
				for _, c := range cands {
					a, seen := tally[c.q]
					if !seen {
						a = c.q.allocated
					}
					partlyLess := false
					for d := range numDims {
						if a[d] < pre.task[d]-eps {
							partlyLess = true
						}
					}
					if partlyLess {
						tally[c.q] = a
						continue
					}
					if !lessEqual(a, c.q.deserved) {
						a = sub(a, c.task)
						out = append(out, c)
					}
					tally[c.q] = a
				}
			default:
				continue
			}
			if len(out) == 0 {
				victims, init = nil, true
				break
			}
			if !init {
				victims, init = slices.Clone(out), true
			} else {
				victims = slices.DeleteFunc(victims, func(v *vjob) bool { return !slices.Contains(out, v) })
			}
		}
		if len(victims) > 0 {
			return victims
		}
	}
	return nil
}
