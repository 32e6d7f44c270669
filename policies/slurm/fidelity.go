package slurm

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// This file holds the behaviours that the fidelity fixtures (real Slurm
// 22.05.8 recorded by scripts/fidelity-slurm.sh, docs/fidelity.md) showed the
// model lacked (issue 17): select/cons_tres best-fit node selection, the job
// size factor on CPUs with each PriorityFlags setting, the requeue delay, the
// wall clock of t=0 and slurmctld's start, and the release-dependent rounding
// of backfill reservations.

// nodeSel is the node selection of jobs that start (params.nodeSelection).
type nodeSel uint8

const (
	selBestFit  nodeSel = iota // select/cons_tres _eval_nodes
	selFirstFit                // nodes in index order
)

func parseNodeSelection(s string) (nodeSel, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "best-fit", "cons_tres", "select/cons_tres":
		return selBestFit, nil
	case "first-fit":
		return selFirstFit, nil
	}
	return 0, fmt.Errorf("nodeSelection: unknown %q (want best-fit or first-fit)", s)
}

// parseBestFitCPUs reads params.bestFitCPUs: true for job, false for free
// (the default).
func parseBestFitCPUs(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "job":
		return true, nil
	case "", "free":
		return false, nil
	}
	return false, fmt.Errorf("bestFitCPUs: unknown %q (want job or free)", s)
}

func parseGangNodes(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "distinct":
		return true, nil
	case "shared":
		return false, nil
	}
	return false, fmt.Errorf("gangNodes: unknown %q (want distinct or shared)", s)
}

// slurmVersion selects release-dependent behaviour (params.version).
type slurmVersion uint8

const (
	verLatest slurmVersion = iota
	ver2205
)

func parseVersion(s string) (slurmVersion, error) {
	v := strings.TrimSpace(s)
	switch {
	case v == "" || strings.EqualFold(v, "latest"):
		return verLatest, nil
	case v == "22.05" || strings.HasPrefix(v, "22.05."):
		return ver2205, nil
	}
	return 0, fmt.Errorf("version: unknown Slurm version %q (want latest or 22.05)", s)
}

// onTick reports whether now is a tick of a pass of period iv timed from
// slurmctld's start (params.controllerUptime before t=0).
func (s *Slurm) onTick(now sim.Time, iv sim.Duration) bool {
	return (now+sim.Time(s.uptime))%sim.Time(iv) == 0
}

// bfTick reports whether a backfill cycle runs at now and when the next one
// is due: every bf_interval from slurmctld's start, or, when the fidelity
// tests set bfCycles, at the cycle times a recording logged.
func (s *Slurm) bfTick(now sim.Time) (bool, sim.Time) {
	if s.bfCycles == nil {
		return s.onTick(now, s.bfInterval), s.nextTick(now, s.bfInterval)
	}
	i, found := slices.BinarySearch(s.bfCycles, now)
	if found {
		i++
	}
	next := sim.Never
	if i < len(s.bfCycles) {
		next = s.bfCycles[i]
	}
	return found, next
}

// nextTick is the first tick of a pass of period iv after now.
func (s *Slurm) nextTick(now sim.Time, iv sim.Duration) sim.Time {
	u := sim.Time(s.uptime)
	return nextGrid(now+u, iv) - u
}

// ceilTick is the first tick of a pass of period iv at or after t (t may be
// negative).
func (s *Slurm) ceilTick(t sim.Time, iv sim.Duration) sim.Time {
	x, i := t+sim.Time(s.uptime), sim.Time(iv)
	q := x / i // truncates toward zero: the ceiling for negative x
	if x > 0 && x%i != 0 {
		q++
	}
	return q*i - sim.Time(s.uptime)
}

// firstCalc is the first PriorityCalcPeriod step after t=0 (the decay thread
// runs when it starts, params.calcUptime before t=0, and every period
// after it).
func (s *Slurm) firstCalc() sim.Time {
	p := sim.Time(s.calcPeriod)
	return p - sim.Time(s.calcUptime)%p
}

// quantDown rounds t down to a multiple of bf_resolution of the wall clock
// (t=0 lies params.clockOffset past a whole minute).
func (s *Slurm) quantDown(t sim.Time) sim.Time {
	if t == sim.Never {
		return t
	}
	r := sim.Time(s.bfRes)
	off := sim.Time(s.clockOff) % r
	return (t+off)/r*r - off
}

// quantUp rounds t up to a multiple of bf_resolution of the wall clock.
func (s *Slurm) quantUp(t sim.Time) sim.Time {
	if t == sim.Never {
		return t
	}
	r := sim.Time(s.bfRes)
	off := sim.Time(s.clockOff) % r
	q := (t+off+r-1)/r*r - off
	if q < t { // overflow
		return sim.Never
	}
	return q
}

// reservationEnd is where a backfill reservation for a run ending at end
// stops. Slurm 22.05's _attempt_backfill rounds end_reserve down to
// bf_resolution ("end_reserve = (end_reserve / backfill_resolution) *
// backfill_resolution"); later releases round it up (_set_slot_time).
func (s *Slurm) reservationEnd(end sim.Time) sim.Time {
	if s.version == ver2205 {
		return s.quantDown(end)
	}
	return s.quantUp(end)
}

// jobCPUs is the CPU count Slurm's job size factor reads for a pending job
// (details->min_cpus): per replica the job's CPUs rounded up to whole CPUs,
// at least one (a task gets one CPU by default).
func jobCPUs(sp *sim.JobSpec) float64 {
	per := max((sp.CPUMilli+999)/1000, 1)
	return float64(per) * float64(sp.Replicas)
}

// jobSizeFactor is priority/multifactor's job size factor
// (priority_multifactor.c, _get_priority_internal, weight_js): with
// SMALL_RELATIVE_TO_TIME max(min_nodes × cluster CPUs / nodes, CPUs) / time
// limit (minutes) / cluster CPUs; otherwise (min_nodes/nodes + CPUs/cluster
// CPUs) / 2, or with PriorityFavorSmall ((nodes − min_nodes)/nodes + (cluster
// CPUs − CPUs)/cluster CPUs) / 2. min_nodes is the job's replica count
// (sbatch -N) and CPUs its CPUs (jobCPUs).
func (s *Slurm) jobSizeFactor(c *sim.Cluster, sp *sim.JobSpec, limit sim.Duration) float64 {
	nn := float64(c.NumNodes())
	nodes := min(float64(sp.Replicas), nn)
	cc := s.clusterCPUs
	cpus := min(jobCPUs(sp), cc)
	if cc <= 0 {
		// nodes without CPUs: only the node term
		if s.favorSmall {
			return (nn - nodes) / nn
		}
		return nodes / nn
	}
	if s.jsRelTime {
		js := max(nodes*cc/nn, cpus)
		tl := float64(math.MaxUint32 - 1) // INFINITE
		if limit != unlimited {
			tl = max(math.Ceil(float64(limit)/float64(sim.Minute)), 1)
		}
		js = js / tl / cc
		if s.favorSmall {
			js = 1 - js
		}
		return js
	}
	if s.favorSmall {
		return ((nn-nodes)/nn + (cc-cpus)/cc) / 2
	}
	return (nodes/nn + cpus/cc) / 2
}

// fitRun is a run of consecutive usable nodes (select/cons_tres consec_*).
type fitRun struct {
	first, end int   // s.fitNodes[first:end]
	cpu        int64 // free CPU (millicores) of its nodes
	hosts      int64 // replicas its nodes can host
	used       bool
}

// fitNode is a usable node and what it offers the job.
type fitNode struct {
	n     sim.NodeID
	cpu   int64
	hosts int64
}

// bestFitOrder orders the nodes of cand on which a replica of j fits (in
// state o, admitted by ok) as select/cons_tres's _eval_nodes takes them:
// nodes form runs of consecutive node indices; while replicas remain, the
// best run is the first that can host them all with the fewest free CPUs
// ("tightest fit"), else the one with the most; inside it, when one node must
// take all remaining replicas, the node with the fewest free CPUs that can
// comes first, then the run's nodes in index order. It writes into s.fitOrder
// (scratch) and returns it; place then fills the order first-fit.
func (s *Slurm) bestFitOrder(o *overlay, j *sim.Job, cand []sim.NodeID, ok func(sim.NodeID) bool) []sim.NodeID {
	sp := &j.Spec
	s.fitNodes = s.fitNodes[:0]
	s.fitRuns = s.fitRuns[:0]
	prev := sim.NodeID(-2)
	for _, n := range cand {
		h := hostable(o, sp, n, ok)
		if h == 0 {
			continue
		}
		fn := fitNode{n: n, cpu: o.cpuFree(n), hosts: h}
		if s.taskCPUs {
			// _allocate_sc: avail_cpus = num_tasks * cpus_per_task, whole
			// CPUs, at least one per task (sbatch's -c default)
			fn.cpu = h * max((sp.CPUMilli+999)/1000, 1) * 1000
		}
		if n != prev+1 || len(s.fitRuns) == 0 {
			s.fitRuns = append(s.fitRuns, fitRun{first: len(s.fitNodes), end: len(s.fitNodes)})
		}
		r := &s.fitRuns[len(s.fitRuns)-1]
		s.fitNodes = append(s.fitNodes, fn)
		r.end++
		r.cpu += fn.cpu
		r.hosts += fn.hosts
		prev = n
	}
	s.fitOrder = s.fitOrder[:0]
	rem := int64(sp.Replicas)
	for rem > 0 {
		best := -1
		bestSuff := false
		for i := range s.fitRuns {
			r := &s.fitRuns[i]
			if r.used {
				continue
			}
			suff := r.hosts >= rem
			b := (*fitRun)(nil)
			if best >= 0 {
				b = &s.fitRuns[best]
			}
			if b == nil || suff && !bestSuff || suff && r.cpu < b.cpu || !suff && !bestSuff && r.cpu > b.cpu {
				best, bestSuff = i, suff
			}
		}
		if best < 0 {
			break
		}
		r := &s.fitRuns[best]
		r.used = true
		nodes := s.fitNodes[r.first:r.end]
		single := -1
		for i, fn := range nodes {
			if fn.hosts >= rem && (single < 0 || fn.cpu < nodes[single].cpu) {
				single = i
			}
		}
		if single >= 0 {
			s.fitOrder = append(s.fitOrder, nodes[single].n)
		}
		for i, fn := range nodes {
			if i != single {
				s.fitOrder = append(s.fitOrder, fn.n)
			}
		}
		rem -= r.hosts
	}
	return s.fitOrder
}

// bfProbe is the job and run interval backfill's node filter (bfOK) tests.
type bfProbe struct {
	j      *sim.Job
	t0, t1 sim.Time
}

// bfOK admits node n for the run s.bfProbe: no backfill reservation and no
// advanced reservation keeps the job off it.
func (s *Slurm) bfOK(n sim.NodeID) bool {
	p := &s.bfProbe
	return !s.bfBlocked(n, p.t0, p.t1) && !s.resvBlocks(p.j, n, p.t0, p.t1)
}

// mainDue reports whether the main scheduler runs at this scheduling point
// (issue 17). slurmctld runs it at once when a job ends or is preempted
// (queue_job_scheduler), fully every sched_interval, and for newly submitted
// batch jobs only from its background loop (controller.c
// _slurmctld_background, once a second), at least batch_sched_delay after
// its previous such pass; backfill cycles start new jobs meanwhile. With
// batch_sched_delay 0 the main scheduler runs at every scheduling point
// (gpusim's model before issue 17).
func (s *Slurm) mainDue(now sim.Time, full bool) bool {
	freed := s.freed
	s.freed = false
	if s.batchDelay <= 0 {
		s.arrivedAt = sim.Never
		return true
	}
	run := full || freed
	s.batchWake = sim.Never
	if s.arrivedAt != sim.Never {
		// the first background tick (1 s from slurmctld's start) at or
		// after both the arrival and the previous batch pass + the delay
		due := s.ceilTick(max(s.arrivedAt, s.lastBatch.Add(s.batchDelay)), sim.Second)
		if now >= due {
			run = true
			s.lastBatch = now
			s.arrivedAt = sim.Never
		} else {
			s.batchWake = due
		}
	}
	return run
}

// resvOnly reports whether job j, which cannot start now, would start but
// for advanced reservations active now (on the nodes the main pass has not
// blocked; reservations that start later still count). Slurm then gives the
// reason ReqNodeNotAvail (the nodes are reserved), which does not fail the
// partition, while a clash with a later reservation reads as busy nodes,
// which does (fidelity fixture reservation).
func (s *Slurm) resvOnly(now sim.Time, j *sim.Job, pt *partition) bool {
	active := false
	for _, r := range s.resvs {
		active = active || r.start <= now && now < r.end
	}
	if !active || j.Suspended() {
		return false
	}
	s.bfProbe = bfProbe{j: j, t0: now, t1: now.Add(s.runLimit(j))}
	return place(&s.ov, j, pt.nodes, s.notBlockedFn, &s.plWhy, s.topo)
}

// notBlocked admits a node for s.bfProbe's run that the main pass has not
// blocked and that no advanced reservation starting after now keeps it off.
func (s *Slurm) notBlocked(n sim.NodeID) bool {
	if s.blockedNode[n] {
		return false
	}
	p := &s.bfProbe
	for _, ri := range s.nodeResv[n] {
		r := s.resvs[ri]
		if r.start > p.t0 && p.t0 < r.end && p.t1 > r.start && !s.resvAllows(r, p.j) {
			return false
		}
	}
	return true
}

// nextResvBoundary is the first start or end of an advanced reservation
// after now (Never: none).
func (s *Slurm) nextResvBoundary(now sim.Time) sim.Time {
	b := sim.Never
	for _, r := range s.resvs {
		if r.start > now {
			b = min(b, r.start)
		}
		if r.end > now {
			b = min(b, r.end)
		}
	}
	return b
}

// suspendWouldFit reports whether j would fit now if the running jobs it may
// preempt in SUSPEND mode, which lack OverSubscribe=FORCE, were gone (with
// the node filter of s.bfProbe).
func (s *Slurm) suspendWouldFit(v *sim.View, j *sim.Job, pt *partition) bool {
	now := v.Now()
	any := false
	for _, r := range v.Running() {
		if s.mayPreempt(j, r) && s.victimMode(r) == modeSuspend && !s.parts[s.jobs[r.Ref].part].overSub && s.preemptible(r, now) {
			s.ov.release(r, +1, true)
			any = true
		}
	}
	if !any {
		return false
	}
	ok := place(&s.ov, j, pt.nodes, s.bfOKFn, &s.plWhy, s.topo)
	s.ov.clear()
	return ok
}

// placeSel places j with Slurm's node selection: best-fit order
// (bestFitOrder) unless params.nodeSelection is first-fit, topology/tree
// confines the job, or a suspended job resumes on its own nodes.
func (s *Slurm) placeSel(j *sim.Job, cand []sim.NodeID, ok func(sim.NodeID) bool, pl *placement) bool {
	if !place(&s.ov, j, cand, ok, pl, s.topo) {
		return false // the job does not fit: no order will place it
	}
	if s.nodeSel == selBestFit && s.topo == nil && !j.Suspended() {
		return place(&s.ov, j, s.bestFitOrder(&s.ov, j, cand, ok), ok, pl, nil)
	}
	return true
}
