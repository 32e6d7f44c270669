package volcano

import "math"

// proportion computes every active queue's realCapability and deserved share by
// Volcano's weighted water-filling (plugins/proportion, OnSessionOpen), then the
// queues' shares:
//
//	realCapability(q) = min(capability(q), total - Σ guarantee + guarantee(q))   per dimension
//	remaining = total
//	repeat:
//	  for each unsatisfied queue q (in queue order):
//	    deserved(q) += remaining · w_q / Σ_unsatisfied w
//	    deserved(q) = min(deserved(q), realCapability(q), request(q))    per dimension
//	    deserved(q) = max(deserved(q), guarantee(q))
//	    q is satisfied if request(q) <= deserved(q) or deserved(q) did not change
//	  remaining = max(0, remaining + Σ decreases - Σ increases)   per dimension
//	  stop when remaining is empty or did not change
//
// Queues without jobs in the session take no part (their deserved stays 0).
func (s *Volcano) proportion() {
	var totalGuarantee res
	for _, q := range s.cfg.queues {
		totalGuarantee = add(totalGuarantee, q.guarantee)
	}
	var active []*queue
	for _, q := range s.cfg.queues {
		if !q.active {
			continue
		}
		for d := range numDims {
			q.realCap[d] = math.Min(q.capability[d], s.total[d]-totalGuarantee[d]+q.guarantee[d])
		}
		q.deserved = res{}
		active = append(active, q)
	}
	waterFill(s.total, active)
	for _, q := range s.cfg.queues {
		s.updateShare(q)
	}
}

// waterFill distributes total among qs (realCap, request, guarantee and weight set)
// into their deserved fields.
func waterFill(total res, qs []*queue) {
	remaining := total
	met := make([]bool, len(qs))
	for iter := 0; iter < 1000; iter++ {
		var wsum float64
		for i, q := range qs {
			if !met[i] {
				wsum += q.weight
			}
		}
		if wsum == 0 {
			break
		}
		old := remaining
		var inc, dec res
		for i, q := range qs {
			if met[i] {
				continue
			}
			prev := q.deserved
			for d := range numDims {
				v := prev[d] + remaining[d]*q.weight/wsum
				v = math.Min(v, q.realCap[d])
				v = math.Min(v, q.request[d])
				v = math.Max(v, q.guarantee[d])
				q.deserved[d] = v
			}
			if lessEqual(q.request, q.deserved) || q.deserved == prev {
				met[i] = true
			}
			for d := range numDims {
				if diff := q.deserved[d] - prev[d]; diff > 0 {
					inc[d] += diff
				} else {
					dec[d] -= diff
				}
			}
		}
		// ExceededPart(remaining + decreases, increases): clamped at 0 per
		// dimension (a guarantee floor can raise deserved past what remains).
		remaining = add(sub(remaining, inc), dec)
		for d := range numDims {
			remaining[d] = math.Max(0, remaining[d])
		}
		empty := true
		for d := range numDims {
			if remaining[d] > eps {
				empty = false
			}
		}
		if empty || remaining == old {
			break
		}
	}
}

// updateShare sets share = max of allocated/deserved over the dimensions the
// deserved share holds (proportion's updateShare iterates
// deserved.ResourceNames(), the non-zero quantities); 0 if it holds none.
func (s *Volcano) updateShare(q *queue) {
	var sh float64
	for d := range numDims {
		if q.deserved[d] > eps {
			sh = math.Max(sh, q.allocated[d]/q.deserved[d])
		}
	}
	q.share = sh
}

// overused is proportion's Overused: deserved <= allocated in every dimension.
func (s *Volcano) overused(q *queue) bool {
	if !s.cfg.proportion {
		return false
	}
	return lessEqual(q.deserved, q.allocated)
}

// allocatable is proportion's Allocatable (and Preemptive): the queue is Open and
// allocated + task <= deserved on the dimensions the task requests.
func (s *Volcano) allocatable(q *queue, task res) bool {
	if !s.cfg.proportion {
		return true
	}
	// A queue that is not Open allocates nothing (queueAllocatable).
	if !q.open {
		return false
	}
	return lessEqualOn(add(q.allocated, task), q.deserved, task)
}
