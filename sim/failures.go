package sim

import (
	"fmt"
	"math"
	"slices"
)

// Failure injection and recovery (docs/failures.md). Hardware fails by
// incidents from a FailureSource; the jobs on failed hardware are interrupted
// and recovered by the run's Recovery strategy; the hardware is held out of
// service until its repair ends. Without Config.Failures none of this code runs
// and no output changes.

// Incident is one hardware outage: GPU (when >= 0) or Nodes go down at At and
// come back Repair later.
type Incident struct {
	At      Time
	Repair  Duration
	GPU     GPUID    // a single failed GPU; -1 when Nodes failed
	Nodes   []NodeID // the failed nodes (one node, or a rack / leaf / PDU group)
	Planned bool     // scheduled maintenance, counted apart from unexpected failures
	Cause   string   // the process or log that produced it (for outputs)
}

// Recovery is what happens to a job whose hardware failed.
type Recovery uint8

// Recovery strategies.
const (
	// RecoverRestart stops the whole gang and requeues it: it resumes from its
	// last completed checkpoint (from scratch without checkpoints) and pays
	// Config.CheckpointRestore at its next start (Slurm JobRequeue, TorchElastic
	// max_restarts).
	RecoverRestart Recovery = iota
	// RecoverFaultTolerant keeps the gang: each replica on failed hardware moves
	// to a spare (then, with UseFreeNodes, to a free node) in the same topology
	// domain as the healthy replicas (the gang's span level), the gang pauses for
	// RebuildCost (communicator rebuild, state transfer from peers) and resumes
	// with all its work. With no healthy replica left or no replacement in the
	// domain it falls back to RecoverRestart.
	RecoverFaultTolerant
)

var recoveryNames = [...]string{"restart", "fault-tolerant"}

// String returns the strategy's scenario name.
func (r Recovery) String() string {
	if int(r) < len(recoveryNames) {
		return recoveryNames[r]
	}
	return fmt.Sprintf("recovery(%d)", r)
}

// ParseRecovery maps a scenario name to a Recovery.
func ParseRecovery(s string) (Recovery, error) {
	for i, n := range recoveryNames {
		if n == s {
			return Recovery(i), nil
		}
	}
	return 0, fmt.Errorf("unknown recovery strategy %q (want restart or fault-tolerant)", s)
}

// FailureConfig turns on failure injection (Config.Failures).
type FailureConfig struct {
	// Source yields the incidents (a Generator, an IncidentList); a run consumes
	// it, so each engine needs its own.
	Source   FailureSource
	Recovery Recovery
	// RebuildCost is the pause of a fault-tolerant recovery (all replicas hold
	// their GPUs without progress).
	RebuildCost Duration
	// UseFreeNodes lets a fault-tolerant recovery use free in-service nodes when
	// no spare fits.
	UseFreeNodes bool
	// Spares are held out of service from t=0 as hot spares. With
	// RecoverRestart each failed in-service node (or node with a failed GPU) is
	// replaced at once by a spare (same leaf first) that joins the service; with
	// RecoverFaultTolerant spares replace failed replicas. A repaired node (after
	// a GPU repair: an idle one) refills the spare pool while it is below
	// len(Spares), otherwise it returns to service.
	Spares []NodeID
	// PlannedCheckpoint: jobs on hardware taken down by a planned incident
	// checkpoint in the notice (CheckpointSave before) and lose no work.
	PlannedCheckpoint bool
	// CheckpointInterval, when set, gives each job its own checkpoint interval
	// (e.g. Young/Daly from its gang's failure rate) instead of
	// Config.CheckpointInterval.
	CheckpointInterval func(*JobSpec) Duration
}

// FailureStats is Result.Failures: what the failures did.
type FailureStats struct {
	Incidents        int64 // unexpected hardware incidents that began
	PlannedIncidents int64 // planned (maintenance) incidents that began
	Interruptions    int64 // job interruptions by unexpected incidents
	PlannedInterrupt int64 // job interruptions by planned incidents
	Recovered        int64 // fault-tolerant recoveries in place
	Fallbacks        int64 // fault-tolerant recoveries that fell back to a restart
	SparesUsed       int64 // spares that joined the service or replaced a replica
	Repairs          int64 // repairs completed within the run
	RepairSeconds    float64
	// LostGPUSeconds is Σ over interruptions of lost wall time × the job's GPUs:
	// work since the last checkpoint plus the restore (restart) or the rebuild
	// pause (fault-tolerant).
	LostGPUSeconds float64
	// DownGPUSeconds integrates GPUs out of service for failures or maintenance
	// (not spares) over [0, End].
	DownGPUSeconds float64
	// UsefulGPUSeconds is the work jobs kept (at reference speed) × GPUs × share,
	// including the progress of jobs still running at the end.
	UsefulGPUSeconds float64
	// JobInterruptions and JobLost are per job (JobRef order): interruptions and
	// lost wall time (× the job's GPUs for GPU time).
	JobInterruptions []int32
	JobLost          []Duration
}

type failState struct {
	cfg     *FailureConfig
	next    Incident
	hasNext bool
	inc     []Incident
	open    int // repairs outstanding

	gdown    []int16 // per GPU: GPU-level outages in effect
	nfail    []int16 // per node: node-level outages in effect
	spare    []bool
	nSpare   int
	target   int
	heldCPU  []int64
	heldMem  []int64
	iv       []Duration
	downGPUs int64
	lastT    Time
	idleRuns int
	stats    FailureStats

	mark    []bool // per node scratch: failing now
	before  []bool
	victims []JobRef
	nodes   []NodeID
	gpus    []GPUID
	picked  []GPUID
	moved   []int // replicas being replaced (recoverInPlace)
}

const (
	qRepair uint8 = 4 // an outage ends (job = incident index)
	qFail   uint8 = 5 // the next incident begins (FailureState.next)
)

func (e *Engine) initFailures() error {
	fc := e.cfg.Failures
	if fc.Source == nil {
		return fmt.Errorf("sim: failures without a source")
	}
	if e.cfg.Sharing != nil {
		return fmt.Errorf("sim: failures are not supported with device-level GPU sharing")
	}
	c := e.cluster
	nn := c.NumNodes()
	f := &failState{cfg: fc, gdown: make([]int16, c.totalGPUs), nfail: make([]int16, nn), spare: make([]bool, nn),
		heldCPU: make([]int64, nn), heldMem: make([]int64, nn), mark: make([]bool, nn), before: make([]bool, c.maxGPUs)}
	f.stats.JobInterruptions = make([]int32, len(e.jobs))
	f.stats.JobLost = make([]Duration, len(e.jobs))
	e.fail = f
	for _, n := range fc.Spares {
		if n < 0 || int(n) >= nn {
			return fmt.Errorf("sim: spare node %d out of range", n)
		}
		if f.spare[n] {
			return fmt.Errorf("sim: spare node %s listed twice", c.nodes[n].Name)
		}
		e.changeNode(n, func() { f.spare[n] = true })
		f.nSpare++
	}
	f.target = f.nSpare
	if fc.CheckpointInterval != nil {
		f.iv = make([]Duration, len(e.jobs))
		for i := range e.jobs {
			f.iv[i] = max(0, fc.CheckpointInterval(&e.jobs[i].Spec))
		}
	}
	e.pullIncident()
	return nil
}

// ivOf is job j's checkpoint interval.
func (e *Engine) ivOf(j *Job) Duration {
	if e.fail != nil && e.fail.iv != nil {
		return e.fail.iv[j.Ref]
	}
	return e.cfg.CheckpointInterval
}

func (e *Engine) pullIncident() {
	f := e.fail
	inc, ok := f.cfg.Source.Next()
	f.hasNext = ok
	if !ok {
		return
	}
	if inc.At < e.now {
		inc.At = e.now
	}
	f.next = inc
	e.seq++
	e.q.push(qitem{t: inc.At, kind: qFail, seq: e.seq})
}

// failuresOnly reports whether the queue holds only failure events that can no
// longer matter: every job arrived, none runs, and either none is pending or
// no repair is outstanding (a new failure cannot help a pending job start).
func (e *Engine) failuresOnly() bool {
	f := e.fail
	if f == nil || e.q.Len() == 0 || e.nextArr < len(e.jobs) || len(e.running) > 0 {
		return false
	}
	k := e.q.top().kind
	if k != qFail && k != qRepair {
		return false
	}
	if e.pendN == 0 || f.open == 0 && k == qFail {
		return true
	}
	// Pending jobs that no repair lets start: give up after many idle events.
	return f.idleRuns > 100_000
}

// dropWakes removes the wake-ups from the queue (an idle policy), keeping
// failure events.
func (e *Engine) dropWakes() {
	h := e.q.h[:0]
	for _, it := range e.q.h {
		if it.kind != qWake {
			h = append(h, it)
		}
	}
	e.q.h = h
	for i := len(h)/2 - 1; i >= 0; i-- { // re-heapify
		e.siftDown(i)
	}
}

func (e *Engine) siftDown(i int) {
	h := e.q.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && h[r].less(&h[l]) {
			m = r
		}
		if !h[m].less(&h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// failEvent handles a popped failure or repair item.
func (e *Engine) failEvent(it qitem) error {
	f := e.fail
	e.events++
	f.integrate(e.now)
	if len(e.running) == 0 && e.nextArr >= len(e.jobs) {
		f.idleRuns++
	} else {
		f.idleRuns = 0
	}
	if it.kind == qRepair {
		e.repair(int(it.job))
		return nil
	}
	inc := f.next
	e.pullIncident()
	return e.incident(inc)
}

func (f *failState) integrate(now Time) {
	if now > f.lastT {
		f.stats.DownGPUSeconds += float64(f.downGPUs) * float64(now-f.lastT) / 1e6
		f.lastT = now
	}
}

func (f *failState) gpuDown(c *Cluster, g GPUID) bool {
	return f.gdown[g] > 0 || f.nfail[c.gpuNode[g]] > 0
}

func (f *failState) gpuHeld(c *Cluster, g GPUID) bool {
	return f.gpuDown(c, g) || f.spare[c.gpuNode[g]]
}

func (f *failState) nodeHeld(n NodeID) bool { return f.nfail[n] > 0 || f.spare[n] }

// changeNode applies mut (a change of node n's outage counters or spare flag)
// and moves the node's GPUs, CPU and memory in or out of service to match. A
// GPU leaving service must be unused (its jobs were interrupted first).
func (e *Engine) changeNode(n NodeID, mut func()) {
	f, c := e.fail, e.cluster
	lo, hi := c.first[n], c.first[n+1]
	hb := f.nodeHeld(n)
	var downBefore int64
	for g := lo; g < hi; g++ {
		f.before[g-lo] = f.gpuHeld(c, g)
		if f.gpuDown(c, g) {
			downBefore++
		}
	}
	mut()
	c.nodeVer[n]++
	var downAfter int64
	for g := lo; g < hi; g++ {
		now := f.gpuHeld(c, g)
		if f.gpuDown(c, g) {
			downAfter++
		}
		switch {
		case now && !f.before[g-lo]:
			if c.gpuUsed[g] != 0 {
				panic(fmt.Sprintf("sim: failed GPU %d still in use", g))
			}
			c.gpuUsed[g] = WholeGPU // held, not allocated: allocMilli unchanged
			c.wholeDelta(g, -1)
		case !now && f.before[g-lo]:
			c.gpuUsed[g] = 0
			c.wholeDelta(g, +1)
		}
	}
	f.downGPUs += downAfter - downBefore
	ha := f.nodeHeld(n)
	switch {
	case ha && !hb:
		f.heldCPU[n], f.heldMem[n] = c.cpuFree[n], c.memFree[n]
		c.freeCPUAll -= c.cpuFree[n]
		c.freeMemAll -= c.memFree[n]
		c.cpuFree[n], c.memFree[n] = 0, 0
	case !ha && hb:
		c.cpuFree[n], c.memFree[n] = f.heldCPU[n], f.heldMem[n]
		c.freeCPUAll += c.cpuFree[n]
		c.freeMemAll += c.memFree[n]
		f.heldCPU[n], f.heldMem[n] = 0, 0
	}
}

// incident starts an outage: interrupts and recovers the jobs on the failed
// hardware, takes it out of service and schedules its repair.
func (e *Engine) incident(inc Incident) error {
	f, c := e.fail, e.cluster
	idx := len(f.inc)
	f.inc = append(f.inc, inc)
	if inc.Planned {
		f.stats.PlannedIncidents++
	} else {
		f.stats.Incidents++
	}
	for _, n := range inc.Nodes {
		if n < 0 || int(n) >= c.NumNodes() {
			return fmt.Errorf("failure incident at t=%s (%s): node %d out of range", inc.At, inc.Cause, n)
		}
		f.mark[n] = true
	}
	if inc.GPU >= 0 && int64(inc.GPU) >= c.totalGPUs {
		return fmt.Errorf("failure incident at t=%s (%s): GPU %d out of range", inc.At, inc.Cause, inc.GPU)
	}
	f.victims = f.victims[:0]
	for _, j := range e.running {
		if e.hitBy(j, &inc) {
			f.victims = append(f.victims, j.Ref)
		}
	}
	slices.Sort(f.victims)
	for _, r := range f.victims {
		if err := e.interrupt(&e.jobs[r], &inc); err != nil {
			return err
		}
	}
	if inc.GPU >= 0 {
		g := inc.GPU
		n := c.gpuNode[g]
		wasService := !f.nodeHeld(n) && f.gdown[g] == 0
		e.changeNode(n, func() { f.gdown[g]++ })
		if wasService && f.cfg.Recovery == RecoverRestart {
			e.releaseSpare(n) // the degraded node is as good as gone for gangs
		}
	}
	for _, n := range inc.Nodes {
		wasService := !f.nodeHeld(n)
		e.changeNode(n, func() { f.nfail[n]++ })
		if wasService && f.cfg.Recovery == RecoverRestart {
			e.releaseSpare(n)
		}
	}
	for _, n := range inc.Nodes {
		f.mark[n] = false
	}
	if inc.Repair > 0 && inc.At.Add(inc.Repair) > inc.At {
		f.open++
		e.seq++
		e.q.push(qitem{t: inc.At.Add(inc.Repair), kind: qRepair, seq: e.seq, job: JobRef(idx)})
	}
	return nil
}

func (e *Engine) hitBy(j *Job, inc *Incident) bool {
	if inc.GPU >= 0 {
		return slices.Contains(j.GPUs, inc.GPU)
	}
	for _, n := range j.Nodes {
		if e.fail.mark[n] {
			return true
		}
	}
	return false
}

// releaseSpare puts one spare into service in place of failed node n (same
// leaf first, then the lowest node index).
func (e *Engine) releaseSpare(n NodeID) {
	f, c := e.fail, e.cluster
	if f.nSpare == 0 {
		return
	}
	pick := NodeID(-1)
	for m := range f.spare {
		if !f.spare[m] || !e.healthy(NodeID(m)) {
			continue
		}
		if pick < 0 {
			pick = NodeID(m)
		}
		if c.nodes[m].Leaf == c.nodes[n].Leaf {
			pick = NodeID(m)
			break
		}
	}
	if pick < 0 {
		return
	}
	e.changeNode(pick, func() { f.spare[pick] = false })
	f.nSpare--
	f.stats.SparesUsed++
}

// healthy reports whether node n has no outage in effect (node or GPU).
func (e *Engine) healthy(n NodeID) bool {
	f, c := e.fail, e.cluster
	if f.nfail[n] > 0 {
		return false
	}
	for g := c.first[n]; g < c.first[n+1]; g++ {
		if f.gdown[g] > 0 {
			return false
		}
	}
	return true
}

func (e *Engine) repair(idx int) {
	f, c := e.fail, e.cluster
	inc := &f.inc[idx]
	f.open--
	f.stats.Repairs++
	f.stats.RepairSeconds += inc.Repair.Seconds()
	if inc.GPU >= 0 {
		g := inc.GPU
		n := c.gpuNode[g]
		e.changeNode(n, func() { f.gdown[g]-- })
		// A repaired node that is idle refills the spare pool.
		nd := &c.nodes[n]
		if f.nSpare < f.target && !f.nodeHeld(n) && c.nodeFree[n] == nd.GPUs && c.cpuFree[n] == nd.CPUMilli && c.memFree[n] == nd.MemoryMiB {
			e.changeNode(n, func() { f.spare[n] = true })
			f.nSpare++
		}
	}
	for _, n := range inc.Nodes {
		e.changeNode(n, func() {
			f.nfail[n]--
			if f.nfail[n] == 0 && !f.spare[n] && f.nSpare < f.target {
				f.spare[n] = true
				f.nSpare++
			}
		})
	}
}

// interrupt recovers running job j hit by inc.
func (e *Engine) interrupt(j *Job, inc *Incident) error {
	f := e.fail
	if inc.Planned {
		f.stats.PlannedInterrupt++
	} else {
		f.stats.Interruptions++
	}
	f.stats.JobInterruptions[j.Ref]++
	if f.cfg.Recovery == RecoverFaultTolerant && !(inc.Planned && f.cfg.PlannedCheckpoint) {
		ok, err := e.recoverInPlace(j, inc)
		if ok || err != nil {
			return err
		}
		f.stats.Fallbacks++
	}
	e.restartJob(j, inc)
	return nil
}

// restartJob stops j and requeues it from its last checkpoint (RecoverRestart).
func (e *Engine) restartJob(j *Job, inc *Incident) {
	f := e.fail
	el := Duration(e.now - j.LastStart)
	done, ckpt, ovh := e.runProgress(j, el)
	var extra Duration
	if c := e.cfg.CheckpointSave; inc.Planned && f.cfg.PlannedCheckpoint && e.sto == nil && el >= c {
		// checkpointed in the notice: the work done when the save began survives
		sd, _, so := e.runProgress(j, el-c)
		ckpt, ovh = max(ckpt, sd), so+c
		extra = c
		done = ckpt
	}
	e.stop(j, false)
	j.Overhead += ovh
	kept := ckpt - j.runDone
	prod := Duration(float64(kept) / j.speed)
	j.Wasted += max(0, el-prod)
	j.Done = ckpt
	j.restore = true
	j.Nodes, j.GPUs = nil, nil
	lost := Duration(math.Ceil(float64(done-ckpt)/j.speed)) + extra + e.cfg.CheckpointRestore
	e.chargeLost(j, lost)
	e.repend(j, PreemptRequeue)
}

func (e *Engine) chargeLost(j *Job, lost Duration) {
	f := e.fail
	f.stats.JobLost[j.Ref] += lost
	f.stats.LostGPUSeconds += lost.Seconds() * float64(j.Spec.TotalGPUs()) * float64(j.Spec.GPUMilli) / 1000
}

// recoverInPlace moves j's replicas off the failed hardware (RecoverFaultTolerant).
// It returns false, changing nothing, when no healthy replica is left or a
// replica has no replacement in the gang's domain.
func (e *Engine) recoverInPlace(j *Job, inc *Incident) (bool, error) {
	f, c := e.fail, e.cluster
	sp := &j.Spec
	g := int(sp.GPUsPerReplica)
	failed := func(r int) bool {
		if inc.GPU >= 0 {
			return g > 0 && slices.Contains(ReplicaSlice(j.GPUs, r, g), inc.GPU)
		}
		return f.mark[j.Nodes[r]]
	}
	ref := -1
	for r := range j.Nodes {
		if !failed(r) {
			ref = r
			break
		}
	}
	if ref < 0 {
		return false, nil
	}
	span := int(NumLevels)
	var dom int32
	if g > 0 {
		sl, _ := c.SpanLevel(j.GPUs)
		span = int(sl)
		if span < int(NumLevels) {
			dom = c.gpuPath[j.GPUs[ref*g]][span]
		}
	}
	model := c.nodeMdl[j.Nodes[ref]]
	f.nodes = append(f.nodes[:0], j.Nodes...)
	f.gpus = append(f.gpus[:0], j.GPUs...)
	f.picked = f.picked[:0]
	f.moved = f.moved[:0]
	var spares []NodeID
	for r := range j.Nodes {
		if !failed(r) {
			continue
		}
		f.moved = append(f.moved, r)
		n, isSpare := e.findReplacement(j, r, span, dom, model)
		if n < 0 {
			return false, nil
		}
		if isSpare && !slices.Contains(spares, n) {
			spares = append(spares, n)
		}
		f.nodes[r] = n
		k0 := len(f.picked)
		f.picked = e.pickGPUs(f.picked, n, isSpare, span, dom, int(sp.ReplicaGPUs(r)))
		copy(ReplicaSlice(f.gpus, r, g), f.picked[k0:])
	}
	// Apply in place: the healthy replicas keep their GPUs; the failed ones
	// release theirs and take the replacements (spares join the service); the
	// run is cut into a new segment that starts with the rebuild pause and keeps
	// all the work. Observers see a preempt and a start, as for a requeue.
	e.record(EvPreempt, j.Ref, 0)
	el := Duration(e.now - j.LastStart)
	done, _, ovh := e.runProgress(j, el)
	j.Overhead += ovh
	j.Wasted += max(0, el-Duration(float64(done-j.runDone)/j.speed))
	j.Done = done
	for _, r := range f.moved {
		e.chargeReplica(j.Nodes[r], ReplicaSlice(j.GPUs, r, g), sp.GPUMilli, sp.CPUMilli, sp.MemoryMiB, -1)
	}
	for _, n := range spares {
		e.changeNode(n, func() { f.spare[n] = false })
		f.nSpare--
		f.stats.SparesUsed++
	}
	for _, r := range f.moved {
		n := f.nodes[r]
		if !c.fitsNode(n, sp.CPUMilli, sp.MemoryMiB) {
			return false, fmt.Errorf("fault-tolerant recovery of job %s at t=%s: node %s lacks CPU or memory", sp.ID, e.now, c.nodes[n].Name)
		}
		gs := ReplicaSlice(f.gpus, r, g)
		for _, gg := range gs {
			if c.gpuUsed[gg] != 0 {
				return false, fmt.Errorf("fault-tolerant recovery of job %s at t=%s: GPU %d is in use", sp.ID, e.now, gg)
			}
		}
		e.chargeReplica(n, gs, sp.GPUMilli, sp.CPUMilli, sp.MemoryMiB, +1)
		j.Nodes[r] = n
		copy(ReplicaSlice(j.GPUs, r, g), gs)
	}
	if e.cfg.Speed != nil {
		j.speed = e.cfg.Speed.Speed(c, j)
		if !(j.speed > 0) || math.IsInf(j.speed, 0) {
			return false, fmt.Errorf("fault-tolerant recovery of job %s: speed model returned %v", sp.ID, j.speed)
		}
	}
	j.usedWall += el
	j.LastStart, j.runDone, j.runRestore = e.now, done, f.cfg.RebuildCost
	if e.tel != nil {
		e.telRecovered(j, e.cfg.Speed != nil)
	}
	e.queueEnd(j) // the old end event becomes stale
	e.record(EvStart, j.Ref, 0)
	f.stats.Recovered++
	e.chargeLost(j, f.cfg.RebuildCost)
	return true, nil
}

// pickGPUs appends to picked up to g GPUs of node n that can take a
// replacement replica (free in service, or not failed on a spare), inside
// domain dom of level span, and not in picked already.
func (e *Engine) pickGPUs(picked []GPUID, n NodeID, onSpare bool, span int, dom int32, g int) []GPUID {
	f, c := e.fail, e.cluster
	k0 := len(picked)
	for gg := c.first[n]; gg < c.first[n+1] && len(picked)-k0 < g; gg++ {
		if onSpare && f.gpuDown(c, gg) || !onSpare && c.gpuUsed[gg] != 0 {
			continue
		}
		if span < int(NumLevels) && c.gpuPath[gg][span] != dom || slices.Contains(picked[:k0], gg) {
			continue
		}
		picked = append(picked, gg)
	}
	return picked
}

// findReplacement finds a node for replica r of j: a spare first, then (with
// UseFreeNodes) a free in-service node, of the gang's GPU model, with the
// replica's GPUs (inside domain dom of level span), CPU and memory free.
func (e *Engine) findReplacement(j *Job, r, span int, dom int32, model int16) (NodeID, bool) {
	f, c := e.fail, e.cluster
	sp := &j.Spec
	g := int(sp.GPUsPerReplica)
	fits := func(n NodeID, onSpare bool) bool {
		if f.mark[n] || g > 0 && (c.nodeMdl[n] != model || !sp.AllowsModel(c.nodes[n].GPUModel)) {
			return false
		}
		cpu, mem := c.cpuFree[n], c.memFree[n]
		if onSpare {
			cpu, mem = f.heldCPU[n], f.heldMem[n]
		}
		for _, rr := range f.moved[:len(f.moved)-1] { // replicas of this gang moved onto n already
			if f.nodes[rr] == n {
				cpu -= sp.CPUMilli
				mem -= sp.MemoryMiB
			}
		}
		if cpu < sp.CPUMilli || mem < sp.MemoryMiB {
			return false
		}
		k0 := len(f.picked)
		ok := len(e.pickGPUs(f.picked, n, onSpare, span, dom, g))-k0 >= g
		f.picked = f.picked[:k0]
		return ok
	}
	for n := range f.spare {
		if f.spare[n] && f.nfail[n] == 0 && fits(NodeID(n), true) {
			return NodeID(n), true
		}
	}
	if f.cfg.UseFreeNodes {
		for n := range c.nodes {
			if !f.nodeHeld(NodeID(n)) && fits(NodeID(n), false) {
				return NodeID(n), false
			}
		}
	}
	return -1, false
}

// finishFailures completes the stats at the end of a run.
func (e *Engine) finishFailures(end Time) *FailureStats {
	f := e.fail
	f.integrate(end)
	var useful float64
	for i := range e.jobs {
		j := &e.jobs[i]
		done := j.Done
		switch j.State {
		case StateCompleted:
			done = j.Spec.Duration
		case StateRunning:
			done, _, _ = e.runProgress(j, Duration(end-j.LastStart))
		}
		useful += done.Seconds() * float64(j.Spec.TotalGPUs()) * float64(j.Spec.GPUMilli) / 1000
	}
	f.stats.UsefulGPUSeconds = useful
	st := f.stats
	return &st
}
