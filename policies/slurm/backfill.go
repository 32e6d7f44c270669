package slurm

import (
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// backfill is one sched/backfill cycle. Running jobs end at start + time limit
// (never their true runtime), exactly, as the select plugin's will-run test
// sees them; pending jobs are walked in queue order (up to bf_max_job_test). A
// job starts now if it fits now on nodes that no reservation placed earlier in
// the cycle covers during its whole time limit; otherwise its earliest start
// within bf_window (on the candidate times: running jobs' ends and
// reservations' ends) gets a whole-node reservation over its time limit with
// the start rounded down and the end rounded up to bf_resolution of the wall
// clock (backfill.c, _set_slot_time; rounded down in 22.05), unless bf_min_prio_reserve or
// bf_job_part_count_reserve deny it one. Jobs beyond the window get none.
func (s *Slurm) backfill(v *sim.View, p *sim.Plan) error {
	now := v.Now()
	c := v.Cluster()
	horizon := now.Add(s.bfWindow)
	// reset the reservation map
	for _, n := range s.resTouched {
		s.nodeRes[n] = s.nodeRes[n][:0]
	}
	s.resTouched = s.resTouched[:0]
	clear(s.partRes)
	clear(s.partTested)
	clear(s.userTested)
	// running jobs by expected end
	s.runs = s.runs[:0]
	for _, r := range v.Running() {
		s.runs = append(s.runs, runEnd{r, s.expectedEnd(r, now)})
	}
	slices.SortFunc(s.runs, cmpRunEnd)
	s.times = append(s.times[:0], now)
	for _, r := range s.runs {
		s.addTime(r.end, horizon)
	}
	s.resTimes = append(s.resTimes[:0], now)
	s.advTimes = s.advTimes[:0]
	for _, r := range s.resvs {
		s.addTime(r.start, horizon)
		s.addTime(r.end, horizon)
		if s.willRunMode == willRunWindows {
			s.advTimes = insertTime(s.advTimes, r.start)
			s.advTimes = insertTime(s.advTimes, r.end)
		}
	}
	tested := 0
	for _, j := range s.queue {
		if j.State != sim.StatePending {
			continue // started by the main scheduler
		}
		info := &s.jobs[j.Ref]
		if info.overMax {
			continue
		}
		if tested >= s.maxTest ||
			s.maxJobPart > 0 && s.partTested[info.part] >= s.maxJobPart ||
			s.maxJobUser > 0 && s.userTested[j.Spec.User] >= s.maxJobUser {
			p.Wait(j.Ref, sim.ReasonNotTested)
			continue
		}
		tested++
		s.partTested[info.part]++
		if s.maxJobUser > 0 {
			s.userTested[j.Spec.User]++
		}
		pt := s.parts[info.part]
		lim := s.runLimit(j)
		found := sim.Never
		if s.willRunMode == willRunWindows {
			found = s.windowSearch(c, j, pt, lim, now, horizon)
		} else {
			found = s.exactSearch(c, j, pt, lim, now)
		}
		s.ov.clear()
		if found != now && s.ptype != preemptNone && !j.Suspended() {
			// Slurm's backfill starts a job now by preempting lower ones
			// when its will-run test, which counts preemptable jobs' resources
			// as free, puts its start now (_try_sched with preemptee
			// candidates; seen in the fidelity fixture preempt-requeue).
			s.bfProbe = bfProbe{j: j, t0: now, t1: now.Add(lim)}
			started, err := s.tryPreempt(v, p, j, pt, s.bfOKFn)
			if err != nil {
				return err
			}
			if started {
				continue
			}
			if s.willRunMode == willRunExact && s.suspendWouldFit(v, j, pt) {
				// The will-run test counts jobs in SUSPEND mode as
				// preemptable even where they cannot be suspended (no
				// OverSubscribe=FORCE): it puts the start at now, the start
				// fails, and the job gets no reservation (fidelity fixture
				// preempt-suspend: h2 backfills past h1).
				p.Wait(j.Ref, sim.ReasonNoCapacity)
				continue
			}
		}
		if found == now && s.anyCompleting(s.pl.nodes, now) {
			// backfill.c: a node of the selection is still COMPLETING; the
			// job waits one second and reserves the nodes (replay.go)
			found = s.cycleSecond(now) + sim.Time(sim.Second)
		}
		switch {
		case found == now:
			if err := p.AddStart(j.Ref, s.pl.nodes, s.pl.gpus); err != nil {
				return err
			}
			re := runEnd{j, now.Add(lim)}
			i, _ := slices.BinarySearchFunc(s.runs, re, cmpRunEnd)
			s.runs = slices.Insert(s.runs, i, re)
			s.addTime(re.end, horizon)
		case found == sim.Never: // beyond bf_window: no reservation
			p.Wait(j.Ref, s.waitReason(j, pt, now, lim))
		case info.prio < s.minPrioReserve || s.partReserve > 0 && s.partRes[info.part] >= s.partReserve:
			p.Wait(j.Ref, s.waitReason(j, pt, now, lim))
		default:
			s.partRes[info.part]++
			// The slot starts at the start rounded down to bf_resolution and
			// ends at start + limit rounded (reservationEnd: up, or down
			// with version 22.05).
			rstart, rend := s.quantDown(found), s.reservationEnd(found.Add(lim))
			s.nodesTmp = s.pl.distinctNodes(s.nodesTmp)
			for _, n := range s.nodesTmp {
				if len(s.nodeRes[n]) == 0 {
					s.resTouched = append(s.resTouched, n)
				}
				s.nodeRes[n] = append(s.nodeRes[n], interval{rstart, rend})
			}
			s.addTime(rend, horizon)
			if s.willRunMode == willRunWindows {
				s.resTimes = insertTime(s.resTimes, max(rstart, now))
				s.resTimes = insertTime(s.resTimes, rend)
			}
			if s.onReserve != nil {
				s.onReserve(now, j, found, rend, s.nodesTmp)
			}
			p.Reserve(j.Ref, found)
			p.Wait(j.Ref, s.waitReason(j, pt, now, lim))
		}
	}
	return nil
}

// waitReason explains why backfill left j pending: "reservation" when it would
// fit now but for the reservations of jobs ahead of it (starting it would delay
// them), else "no-capacity".
func (s *Slurm) waitReason(j *sim.Job, pt *partition, now sim.Time, lim sim.Duration) sim.Reason {
	end := now.Add(lim)
	ok := func(n sim.NodeID) bool { return !s.resvBlocks(j, n, now, end) }
	if place(&s.ov, j, pt.nodes, ok, &s.plWhy, s.topo) {
		return sim.ReasonReservation
	}
	return sim.ReasonNoCapacity
}

func cmpRunEnd(a, b runEnd) int {
	if a.end != b.end {
		if a.end < b.end {
			return -1
		}
		return 1
	}
	return int(a.j.Ref - b.j.Ref)
}

// addTime inserts t into the sorted candidate times if it is in (now, horizon].
func (s *Slurm) addTime(t, horizon sim.Time) {
	if t <= s.times[0] || t > horizon {
		return
	}
	i, found := slices.BinarySearch(s.times, t)
	if !found {
		s.times = slices.Insert(s.times, i, t)
	}
}

// expectedEnd is when backfill expects running job r to end: its start plus its
// time limit, not rounded (select/cons_tres _future_run_test starts a pending
// job at the end_time of the last running job it removes); a job already past
// its limit is expected to end just after now (_guess_job_end; KillWait and
// OverTimeLimit are not modelled).
func (s *Slurm) expectedEnd(r *sim.Job, now sim.Time) sim.Time {
	lim := s.runLimit(r)
	if lim == unlimited {
		return sim.Never
	}
	return max(r.LastStart.Add(lim), now+1)
}

// bfBlocked reports whether a backfill reservation holds node n for a run over
// [t0, t1]. A reservation that starts exactly when the run ends still blocks it:
// _attempt_backfill drops a node from a job's candidates when a node_space
// record without it has begin_time <= the job's end time.
func (s *Slurm) bfBlocked(n sim.NodeID, t0, t1 sim.Time) bool {
	for _, iv := range s.nodeRes[n] {
		if t0 < iv.end && t1 >= iv.start {
			return true
		}
	}
	return false
}

// exactSearch finds j's earliest start (params.willRun: exact): the first of
// now, the running jobs' expected ends and the reservation ends at which j
// fits on nodes no reservation holds during its whole limit. It leaves the
// nodes in s.pl and returns sim.Never when j fits at none of them.
func (s *Slurm) exactSearch(c *sim.Cluster, j *sim.Job, pt *partition, lim sim.Duration, now sim.Time) sim.Time {
	found := sim.Never
	s.ov.clear()
	ri := 0
	// An upper bound on the whole GPUs the partition can offer at t (free now
	// plus released by then) skips placement attempts that cannot succeed.
	need := int64(0)
	if j.Spec.GPUsPerReplica > 0 && !j.Spec.Fractional() {
		need = int64(j.Spec.TotalGPUs())
	}
	var ub int64
	if need > 0 {
		for _, n := range pt.nodes {
			ub += int64(c.NodeFreeGPUs(n))
		}
	}
	for _, t := range s.times {
		for ri < len(s.runs) && s.runs[ri].end <= t {
			r := s.runs[ri].j
			s.ov.release(r, +1, false)
			if need > 0 {
				for _, n := range r.Nodes {
					if pt.mask[n] {
						ub += int64(max(r.Spec.GPUsPerReplica, 1))
					}
				}
			}
			ri++
		}
		if ub < need {
			continue
		}
		end := t.Add(lim)
		s.bfProbe = bfProbe{j: j, t0: t, t1: end}
		ok := s.bfOKFn // s.bfOK, bound once: no closure per candidate time
		placed := false
		if t == now && len(s.ov.list) == 0 {
			placed = s.placeNow(c, j, pt, ok, &s.pl) // params.placement for starts now
		} else {
			placed = s.placeSel(j, pt.nodes, ok, &s.pl)
		}
		if placed {
			found = t
			break
		}
	}
	return found
}
