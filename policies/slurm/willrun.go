package slurm

import (
	"fmt"
	"slices"

	"github.com/gpusim/gpusim/sim"
)

// willRunMode selects how backfill finds a pending job's earliest start
// (params.willRun).
type willRunMode uint8

const (
	// willRunExact tries every running job's expected end and every
	// reservation end in time order (gpusim's model before issue 17's
	// follow-up).
	willRunExact willRunMode = iota
	// willRunWindows is Slurm's search: _attempt_backfill's TRY_LATER loop
	// over start_res values, each calling select/cons_tres's will-run test
	// (_will_run_test), which frees running jobs in time windows.
	willRunWindows
)

func parseWillRun(s string) (willRunMode, error) {
	switch s {
	case "", "exact":
		return willRunExact, nil
	case "windows":
		return willRunWindows, nil
	}
	return 0, fmt.Errorf("willRun: unknown mode %q (want exact or windows)", s)
}

// willRunWindow is the first time window of _will_run_test (30 s); each
// further window is twice the previous (bf_window_linear unset).
const willRunWindow = 30 * sim.Second

// windowSearch finds when and where backfill reserves pending job j (limit
// lim) as Slurm's _attempt_backfill does, and leaves the nodes in s.pl. It
// returns now when j can start now and sim.Never when it finds no start
// within horizon.
//
// The loop is TRY_LATER in backfill.c: start_res begins at now; the usable
// nodes are those of the partition that no backfill reservation holds during
// [start_res, start_res+lim]; the will-run test (willRunTest) gives a start T;
// the start is max(T, start_res). The test's end_time is start_res + lim in
// whole seconds (time(NULL)); the cycle at a tick reads the second after it
// (cycleSecond: ceilSecond on the bf_interval grid). When it lies past later_start (the next
// end of a backfill reservation after start_res) the search resumes at
// later_start; when the chosen nodes overlap a reservation over the rounded
// slot (_test_resv_overlap) it resumes at the start.
func (s *Slurm) windowSearch(c *sim.Cluster, j *sim.Job, pt *partition, lim sim.Duration, now, horizon sim.Time) sim.Time {
	start := now
	for start <= horizon {
		later := s.laterStart(pt, start, start.Add(lim), horizon)
		s.bfProbe = bfProbe{j: j, t0: start, t1: s.cycleSecond(start).Add(lim)}
		t, ok := s.willRunTest(c, j, pt, now, start == now)
		s.ov.clear()
		switch {
		case !ok:
			start = later
			continue
		case t < start:
			t = start
		}
		if later != sim.Never && t > later {
			start = later
			continue
		}
		if t > now && s.resvOverlap(s.quantDown(t), s.reservationEnd(t.Add(lim))) {
			if t > start {
				start = t
			} else {
				start = later
			}
			continue
		}
		if t > horizon {
			return sim.Never
		}
		return t
	}
	return sim.Never
}

// laterStart is backfill.c's later_start for a test of j over [start, end]:
// walking the node_space records (the periods between the cycle's start and
// every backfill reservation's start and end), the end of the first record
// ending after start whose successor has a partition node that is not usable
// in it (the record's nodes that are usable throughout the records so far
// that overlap [start, end]); then the next advanced reservation boundary
// after start (find_resv_end), if earlier. sim.Never when there is none
// within horizon.
func (s *Slurm) laterStart(pt *partition, start, end, horizon sim.Time) sim.Time {
	later := sim.Never
	for _, n := range pt.nodes {
		s.acc[n] = true
	}
	for k, b := range s.resTimes {
		nb := sim.Never
		if k+1 < len(s.resTimes) {
			nb = s.resTimes[k+1]
		}
		if nb != sim.Never && nb > start {
			for _, n := range pt.nodes {
				if s.resFree(n, nb) && !(s.acc[n] && s.resFree(n, b)) {
					later = nb
					break
				}
			}
			if later != sim.Never {
				break
			}
		}
		if nb != sim.Never && nb <= start {
			continue
		}
		if b > end || nb == sim.Never {
			break
		}
		for _, n := range pt.nodes {
			s.acc[n] = s.acc[n] && s.resFree(n, b)
		}
	}
	i, found := slices.BinarySearch(s.advTimes, start)
	if found {
		i++
	}
	if i < len(s.advTimes) {
		later = min(later, s.advTimes[i])
	}
	if later > horizon {
		return sim.Never
	}
	return later
}

// resFree reports whether no backfill reservation holds node n at t (in the
// node_space record that starts at t).
func (s *Slurm) resFree(n sim.NodeID, t sim.Time) bool {
	for _, iv := range s.nodeRes[n] {
		if iv.start <= t && t < iv.end {
			return false
		}
	}
	return true
}

// insertTime inserts t into the sorted ts unless present.
func insertTime(ts []sim.Time, t sim.Time) []sim.Time {
	i, found := slices.BinarySearch(ts, t)
	if !found {
		ts = slices.Insert(ts, i, t)
	}
	return ts
}

// resvOverlap reports whether a node of s.pl is held by a backfill
// reservation during (t0, t1) (_test_resv_overlap: a node_space record with
// end_time > start_time and begin_time < end_reserve).
func (s *Slurm) resvOverlap(t0, t1 sim.Time) bool {
	s.nodesTmp = s.pl.distinctNodes(s.nodesTmp)
	for _, n := range s.nodesTmp {
		for _, iv := range s.nodeRes[n] {
			if iv.end > t0 && iv.start < t1 {
				return true
			}
		}
	}
	return false
}

// willRunTest is select/cons_tres's _will_run_test for j on the nodes s.bfOK
// admits: if j fits now it returns now; otherwise it frees running jobs (in
// order of expected end, skipping those on no usable node) in batches and
// tests after each batch. The first batch ends at the first freed job's end
// rounded up to the next multiple of 30 s of the wall clock, plus 30 s; each
// later window is twice as long. The start is the expected end of the last
// job freed.
func (s *Slurm) willRunTest(c *sim.Cluster, j *sim.Job, pt *partition, now sim.Time, isNow bool) (sim.Time, bool) {
	s.ov.clear()
	ok := s.bfOKFn
	if isNow {
		if s.placeNow(c, j, pt, ok, &s.pl) {
			return now, true
		}
	} else if s.placeSel(j, pt.nodes, ok, &s.pl) {
		return now, true
	}
	// Jobs j may suspend are not in the will-run's job list
	// (_build_cr_job_list removes preemptable jobs; a SUSPEND-mode one with
	// action 2, which frees its cores but keeps its GRES), so their GPUs are
	// never freed.
	runs := s.wrRuns[:0]
	for _, r := range s.runs {
		if !s.suspendVictim(j, r.j, now) {
			runs = append(runs, r)
		}
	}
	s.wrRuns = runs
	tw := willRunWindow
	base := sim.Never
	i := 0
	for {
		var last sim.Time = sim.Never
		more := true
		for {
			if i >= len(runs) {
				more = false
				break
			}
			r := runs[i]
			i++
			if !s.usableRun(r.j, pt) {
				continue
			}
			end := s.limitEnd(r)
			if base == sim.Never {
				base = s.alignUp(end, willRunWindow)
			}
			s.ov.release(r.j, +1, false)
			last = end
			if i >= len(runs) {
				more = false
				break
			}
			if s.limitEnd(runs[i]) > base.Add(tw) {
				break
			}
		}
		if last == sim.Never {
			return sim.Never, false
		}
		for {
			tw *= 2
			if i >= len(runs) || s.limitEnd(runs[i]) <= base.Add(tw) {
				break
			}
		}
		if s.placeSel(j, pt.nodes, ok, &s.pl) {
			if last <= now {
				// _guess_job_end: a job past its limit ends KillWait later
				return max(last.Add(s.killWait), now+1), true
			}
			return last, true
		}
		if !more {
			return sim.Never, false
		}
	}
}

// suspendVictim reports whether pending job j may preempt running job r by
// suspending it (the will-run test keeps r's GRES allocated).
func (s *Slurm) suspendVictim(j, r *sim.Job, now sim.Time) bool {
	return s.ptype != preemptNone && s.mayPreempt(j, r) && s.victimMode(r) == modeSuspend && s.preemptible(r, now)
}

// usableRun reports whether running job r holds a node j may use (Slurm
// skips jobs with no overlap with the usable node bitmap).
func (s *Slurm) usableRun(r *sim.Job, pt *partition) bool {
	for _, n := range r.Nodes {
		if pt.mask[n] && s.bfOK(n) {
			return true
		}
	}
	return false
}

// alignUp is _will_run_test's barrier: t plus (w - t mod w) of the wall
// clock, so a t on the barrier moves a whole w.
func (s *Slurm) alignUp(t sim.Time, w sim.Duration) sim.Time {
	if t == sim.Never {
		return t
	}
	r := sim.Time(w)
	off := sim.Time(s.clockOff) % r
	return (t+off)/r*r + r - off
}

// defaultKillWait is slurm.conf's KillWait default (30 s): _guess_job_end expects a
// job past its time limit (OverTimeLimit 0) to end KillWait after it.
const defaultKillWait = 30 * sim.Second

// limitEnd is running job r's end_time as the will-run test reads it: its
// start plus its time limit, even when that has passed (sim.Never without a
// limit).
func (s *Slurm) limitEnd(r runEnd) sim.Time {
	lim := s.runLimit(r.j)
	if lim == unlimited {
		return sim.Never
	}
	st := r.j.LastStart
	if s.wholeSec {
		// job_mgr.c: start_time = time(NULL); end_time = start_time +
		// time_limit * 60, both whole seconds
		st = floorSecond(st)
	}
	return st.Add(lim)
}

// floorSecond is t rounded down to a whole second (t >= 0).
func floorSecond(t sim.Time) sim.Time {
	const sec = sim.Time(sim.Second)
	return t / sec * sec
}

// ceilSecond is t rounded up to a whole second: the second of slurmctld's
// clock that a backfill cycle at tick t reads. Slurm's times are whole
// seconds (time(NULL)); a cycle starts bf_interval after the previous one
// ended, so in the recordings the cycles drift through the second (backfill
// starts fall from x.0 to x.9 s) while the replay ticks at a fixed phase;
// the cycle is taken to read the next whole second. With the second rounded
// down instead, fixture mixed60 agrees for 36 jobs, not 44 (docs/fidelity.md).
// cycleSecond is the whole second a backfill cycle at t reads from
// time(NULL): ceilSecond on the bf_interval grid, t rounded down at the
// recorded cycle times of bfCycles.
func (s *Slurm) cycleSecond(t sim.Time) sim.Time {
	if s.bfCycles != nil && t != sim.Never {
		const sec = sim.Time(sim.Second)
		return t / sec * sec
	}
	return ceilSecond(t)
}

func ceilSecond(t sim.Time) sim.Time {
	const sec = sim.Time(sim.Second)
	if t == sim.Never {
		return t
	}
	return (t + sec - 1) / sec * sec
}
