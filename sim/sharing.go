package sim

import "fmt"

// SharingMode is how one GPU is shared between jobs (the device level of a
// two-level scheduler). It is set per node (NodeSpec.Sharing, from the scenario's
// pool) and is fixed for a run.
type SharingMode uint8

// Sharing modes.
const (
	// ShareExclusive: one job per GPU (or FGD milli-GPU bookkeeping with no
	// interference, the behaviour without sharing).
	ShareExclusive SharingMode = iota
	// ShareMIG: the GPU is split into isolated MIG instances (see mig.go).
	ShareMIG
	// ShareTimeSlice: co-located jobs take turns on the whole GPU (the NVIDIA device
	// plugin's timeSlicing replicas); their memory must fit together.
	ShareTimeSlice
	// ShareMPS: co-located jobs run concurrently under CUDA MPS, each capped by its
	// active-thread percentage; their memory limits must fit together.
	ShareMPS
	numSharingModes
)

// NumSharingModes is the number of sharing modes (for per-mode arrays).
const NumSharingModes = int(numSharingModes)

var sharingModeNames = [...]string{"exclusive", "mig", "timeslice", "mps"}

// String returns the mode's scenario name.
func (m SharingMode) String() string {
	if m < numSharingModes {
		return sharingModeNames[m]
	}
	return fmt.Sprintf("sharing(%d)", m)
}

// ParseSharingMode maps a scenario name to a SharingMode ("" = exclusive).
func ParseSharingMode(s string) (SharingMode, error) {
	if s == "" {
		return ShareExclusive, nil
	}
	for i, n := range sharingModeNames {
		if n == s {
			return SharingMode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown sharing mode %q (want exclusive, mig, timeslice or mps)", s)
}

// JobSharing is the GPU sharing a job accepts (trace column `sharing`).
type JobSharing uint8

// Accepted sharing.
const (
	AcceptExclusive JobSharing = iota // a GPU of its own (the default)
	AcceptAny                         // any shared mode
	AcceptMIG                         // a MIG instance only
	AcceptTimeSlice                   // time-slicing only
	AcceptMPS                         // MPS only
	numJobSharing
)

var jobSharingNames = [...]string{"exclusive", "any", "mig", "timeslice", "mps"}

// String returns the name as written in traces.
func (a JobSharing) String() string {
	if a < numJobSharing {
		return jobSharingNames[a]
	}
	return fmt.Sprintf("accept(%d)", a)
}

// ParseJobSharing maps a trace value to a JobSharing ("" = exclusive).
func ParseJobSharing(s string) (JobSharing, error) {
	if s == "" {
		return AcceptExclusive, nil
	}
	for i, n := range jobSharingNames {
		if n == s {
			return JobSharing(i), nil
		}
	}
	return 0, fmt.Errorf("unknown sharing %q (want exclusive, any, mig, timeslice or mps)", s)
}

// Accepts reports whether a job accepting a may share a GPU in mode m.
func (a JobSharing) Accepts(m SharingMode) bool {
	switch m {
	case ShareTimeSlice:
		return a == AcceptAny || a == AcceptTimeSlice
	case ShareMPS:
		return a == AcceptAny || a == AcceptMPS
	case ShareMIG:
		return a == AcceptAny || a == AcceptMIG
	}
	return false
}

// Interference gives the speed factors of jobs co-located on one GPU. It is the
// engine's view of a measured interference matrix (calibrate.Table, adapted in the
// scenarios package) and must be deterministic and independent of the order of
// the jobs.
type Interference interface {
	// WorkloadID interns a workload name (JobSpec.Workload); ok is false for a
	// workload the matrix does not know (its factors then come from the fallback).
	WorkloadID(name string) (id int32, ok bool)
	// Factors writes into out[i] the speed factor (1 = alone on the GPU) of the
	// i-th of len(ws) jobs co-located on one GPU of model gpuModel in mode (time
	// slicing or MPS); ws[i] is its workload ID (-1 = unknown) and solo[i] its solo
	// SM utilisation in [0, 1] (0 = unknown). measured is false when a fallback
	// model produced the factors. It must not allocate or keep the slices.
	Factors(gpuModel string, mode SharingMode, ws []int32, solo []float64, out []float64) (measured bool)
}

// SharingConfig turns on the device-level sharing model (Config.Sharing). Its
// presence switches the engine to rate-based progress (see progress.go); with it
// nil the engine behaves exactly as without sharing.
type SharingConfig struct {
	// Interference gives co-location speed factors; nil means an even split (each
	// of k time-sliced or MPS jobs runs at 1/k, minus SwitchOverhead for time
	// slicing).
	Interference Interference
	// MIG gives the MIG geometry of GPU models (needed when a node is in mode
	// ShareMIG, unless the cluster was set up with Cluster.EnableMIG).
	MIG MIGLookup
	// SwitchOverhead is the fraction of a time-sliced GPU lost to context
	// switches when no Interference is given (a measured factor already includes
	// it): each of k >= 2 jobs runs at (1-SwitchOverhead)/k. In [0, 1).
	SwitchOverhead float64
}

// Factors writes into out[i] the speed factor the engine gives the i-th of
// len(out) jobs co-located on one time-slicing or MPS GPU of model gpuModel: 1
// for a job alone; otherwise the Interference's factors, or without one an
// even split (1/k, minus SwitchOverhead in time slicing). Each factor is then
// raised to at least 0.001 and, in MPS, capped by the job's active-thread
// percentage (milli[i] / 1000 when below 1000). ws, solo and milli are the jobs'
// workload IDs (-1 = unknown), solo SM utilisations (0 = unknown) and gpu_milli.
// It reports whether the Interference answered from a measurement (true for a
// job alone). The engine uses exactly this function at every co-location change,
// so a policy that predicts speeds with it (package policies/pack) agrees with
// the engine. It does not allocate unless the Interference does.
func (sc *SharingConfig) Factors(gpuModel string, mode SharingMode, ws []int32, solo []float64, milli []MilliGPU, out []float64) (measured bool) {
	k := len(out)
	switch {
	case k == 0:
		return true
	case k == 1:
		out[0] = 1
		measured = true
	case sc.Interference != nil:
		measured = sc.Interference.Factors(gpuModel, mode, ws[:k], solo[:k], out)
	default:
		f := 1 / float64(k)
		if mode == ShareTimeSlice {
			f *= 1 - sc.SwitchOverhead
		}
		for i := range out {
			out[i] = f
		}
	}
	for i, f := range out {
		if !(f >= minFactor) { // also NaN
			f = minFactor
		}
		if mode == ShareMPS && milli[i] < WholeGPU {
			f = min(f, float64(milli[i])/float64(WholeGPU))
		}
		out[i] = f
	}
	return measured
}

// DefaultSharingClients is the most jobs a shared GPU holds when the node does not
// say (NodeSpec.SharingClients).
const DefaultSharingClients = 4

// minFactor bounds speed factors from below so that end times stay finite.
const minFactor = 1e-3

// SharingStats summarises a run's device-level sharing (Result.Sharing; nil
// without sharing).
type SharingStats struct {
	// GPUSecondsByMode is the busy GPU time (GPU x s) per SharingMode of the GPU.
	GPUSecondsByMode [NumSharingModes]float64
	// UsefulGPUSeconds is the work done, at reference speed, by running jobs
	// (sum over jobs of speed x GPUs x time): the numerator of useful utilisation.
	UsefulGPUSeconds float64
	// InterferenceLossGPUSeconds is, over shared GPUs, the integral of
	// max(0, 1 - sum of the co-located jobs' sharing factors): GPU capacity lost to
	// contention and context switches compared with one job running alone.
	InterferenceLossGPUSeconds float64
	// SharedGPUSeconds is the time GPUs held two or more jobs (GPU x s).
	SharedGPUSeconds float64
	// Measured and Fallback count the co-location changes whose factors came from
	// the matrix and from the fallback model.
	Measured, Fallback int64
	// MIGReconfigurations counts MIG layout changes (Plan.AddReconfigure).
	MIGReconfigurations int64
}

// shareState is the engine's per-GPU device-level state (allocated only with
// sharing on).
type shareState struct {
	jobs    [][]JobRef // sharers per GPU, sorted by JobRef
	factSum []float64  // sum of the sharers' sharing factors per GPU
	loss    []float64  // interference-loss rate per GPU (see setLoss)
	ws      []int32    // scratch for Interference.Factors
	solo    []float64
	milli   []MilliGPU
	out     []float64
	stats   SharingStats
	busy    [NumSharingModes]int32 // busy GPUs per mode
	shared  int32                  // GPUs with >= 2 jobs
	rateSum float64                // sum over running jobs of speed x GPUs
	lossSum float64                // sum over shared GPUs of max(0, 1 - factSum)
}

// sharer reports whether j, placed on GPU g, shares it (rather than holding it
// exclusively): a 1-GPU job that accepts the GPU's mode.
func (c *Cluster) sharer(s *JobSpec, g GPUID) bool {
	if c.gpuMode == nil || s.GPUsPerReplica != 1 || s.Replicas != 1 {
		return false
	}
	m := c.gpuMode[g]
	return m != ShareExclusive && s.Accepts().Accepts(m)
}

// GPUMode returns GPU g's sharing mode.
func (c *Cluster) GPUMode(g GPUID) SharingMode {
	if c.gpuMode == nil {
		return ShareExclusive
	}
	return c.gpuMode[g]
}

// Sharers returns the number of jobs sharing GPU g (0 for an exclusive-mode GPU).
func (c *Cluster) Sharers(g GPUID) int {
	if c.shrN == nil {
		return 0
	}
	return int(c.shrN[g])
}

// SharedMemUsed returns the GPU memory (MiB) the sharers of GPU g use.
func (c *Cluster) SharedMemUsed(g GPUID) int64 {
	if c.shrMem == nil {
		return 0
	}
	return c.shrMem[g]
}

// SharingOn reports whether any GPU of the cluster is in a shared mode.
func (c *Cluster) SharingOn() bool { return c.gpuMode != nil }

// CanShare reports whether a job with spec s may join GPU g as a sharer now (the
// engine's own test for such a start). For time slicing and MPS: g is in a mode
// the job accepts, free or already shared (not held by an exclusive job), has
// fewer than its client limit, and the memory of all its jobs fits the GPU's (a
// job that gives no gpu_mem_mib counts as 0). For MIG: g is not being
// reconfigured and has a free instance for the job (see mig.go). With serving
// jobs in the run (docs/serving.md) it also refuses a time-slicing or MPS join
// that would take a serving job's speed below its ServingMinSpeed, and a MIG
// instance too slow for a serving job's bound.
func (c *Cluster) CanShare(s *JobSpec, g GPUID) bool {
	if !c.sharer(s, g) {
		return false
	}
	if c.gpuMode[g] == ShareMIG {
		return c.migPick(s, g) >= 0
	}
	n := c.shrN[g]
	if n == 0 && c.gpuUsed[g] != 0 {
		return false // held by an exclusive job
	}
	nd := &c.nodes[c.gpuNode[g]]
	if int32(n) >= c.clients(nd) {
		return false
	}
	if nd.GPUMemMiB > 0 && c.shrMem[g]+s.GPUMemMiB > nd.GPUMemMiB {
		return false
	}
	return c.servQoS == nil || c.servQoS(s, g, nil)
}

func (c *Cluster) clients(nd *NodeSpec) int32 {
	if nd.SharingClients > 0 {
		return nd.SharingClients
	}
	return DefaultSharingClients
}

// NextOpenShared returns the lowest GPU id >= from that can take another sharer
// in principle, or -1: a time-slicing or MPS GPU that already has sharers and
// fewer than its client limit (memory not checked: see CanShare), or a MIG GPU
// with a free instance that is not being reconfigured. Placers use it to
// co-locate shareable jobs without scanning every GPU.
func (c *Cluster) NextOpenShared(from GPUID) GPUID {
	if c.shrOpen == nil {
		return -1
	}
	return GPUID(c.shrOpen.next(int(from)))
}

// initSharing sets up the per-GPU mode and share state when some node shares.
func (c *Cluster) initSharing() {
	any := false
	for i := range c.nodes {
		if c.nodes[i].Sharing != ShareExclusive {
			any = true
		}
	}
	if !any {
		return
	}
	g := c.totalGPUs
	c.gpuMode = make([]SharingMode, g)
	c.shrN = make([]int16, g)
	c.shrMem = make([]int64, g)
	c.shrOpen = make(bitset, (g+63)/64)
	for i := range c.gpuNode {
		c.gpuMode[i] = c.nodes[c.gpuNode[i]].Sharing
	}
}

// shareJoin adds a sharer with memory mem on GPU g (validated by CanShare). The
// GPU counts as fully allocated (1000 milli) while it has any sharer.
func (c *Cluster) shareJoin(g GPUID, mem int64) {
	if c.shrN[g] == 0 {
		c.setGPUUsed(g, WholeGPU)
	}
	c.shrN[g]++
	c.shrMem[g] += mem
	c.updateOpen(g)
}

func (c *Cluster) shareLeave(g GPUID, mem int64) {
	c.shrN[g]--
	c.shrMem[g] -= mem
	if c.shrN[g] < 0 || c.shrMem[g] < 0 {
		panic(fmt.Sprintf("sim: GPU %d share released below zero", g))
	}
	if c.shrN[g] == 0 {
		c.setGPUUsed(g, 0)
	}
	c.updateOpen(g)
}

func (c *Cluster) updateOpen(g GPUID) {
	if c.gpuMode[g] == ShareMIG {
		if c.mig != nil && c.migOpen(g) {
			c.shrOpen.set(int(g))
		} else {
			c.shrOpen.clear(int(g))
		}
		return
	}
	if n := int32(c.shrN[g]); n > 0 && n < c.clients(&c.nodes[c.gpuNode[g]]) {
		c.shrOpen.set(int(g))
	} else {
		c.shrOpen.clear(int(g))
	}
}

// setGPUUsed sets GPU g's allocated milli (0 or WholeGPU transitions).
func (c *Cluster) setGPUUsed(g GPUID, v MilliGPU) {
	before := c.gpuUsed[g]
	c.gpuUsed[g] = v
	c.nodeVer[c.gpuNode[g]]++
	c.allocMilli += int64(v - before)
	if c.gpuMode[g] == ShareMIG {
		return // never in the whole-free indexes
	}
	if before == 0 && v != 0 {
		c.wholeDelta(g, -1)
	} else if before != 0 && v == 0 {
		c.wholeDelta(g, +1)
	}
}

// ---- engine side ----

// isSharer reports whether running job j shares its GPU.
func (e *Engine) isSharer(j *Job) bool {
	return e.share != nil && len(j.GPUs) == 1 && e.cluster.sharer(&j.Spec, j.GPUs[0])
}

// reshare recomputes the sharing factors of every job on GPU g at now and
// reschedules the end of each job whose speed changed (a job not yet scheduled,
// the one just started, is scheduled too). Only GPU g's jobs are touched; it does
// not allocate.
func (e *Engine) reshare(g GPUID) {
	sh := e.share
	list := sh.jobs[g]
	k := len(list)
	if k == 0 {
		sh.factSum[g] = 0
		e.setLoss(g, 0, 0)
		return
	}
	c := e.cluster
	mode := c.gpuMode[g]
	out := sh.out[:k]
	switch {
	case mode == ShareMIG:
		for i, r := range list {
			out[i] = e.migSpeed(&e.jobs[r]) // isolated instances: no interference
		}
	default:
		ws, solo, milli := sh.ws[:k], sh.solo[:k], sh.milli[:k]
		for i, r := range list {
			ws[i] = e.jobs[r].sh.wl
			solo[i] = e.jobs[r].Spec.SMUtil
			milli[i] = e.jobs[r].Spec.GPUMilli
		}
		measured := e.cfg.Sharing.Factors(c.models[c.nodeMdl[c.gpuNode[g]]], mode, ws, solo, milli, out)
		switch {
		case k == 1:
		case measured:
			sh.stats.Measured++
		default:
			sh.stats.Fallback++
		}
	}
	nServe := 0
	if e.serving != nil {
		for _, r := range list {
			if e.jobs[r].Spec.Serving != nil {
				nServe++
			}
		}
	}
	sum := 0.0
	for i, r := range list {
		f := out[i]
		if !(f >= minFactor) { // also NaN
			f = minFactor
		}
		j := &e.jobs[r]
		if mode == ShareMPS && j.Spec.GPUMilli < WholeGPU {
			// active-thread percentage = gpu_milli / 10 caps the client's speed
			f = min(f, float64(j.Spec.GPUMilli)/float64(WholeGPU))
		}
		sum += f
		j.sh.factor = f
		// every change of the GPU's job set closes a speed segment (even if the
		// factor is unchanged), so the segments are a function of the set history
		e.closeSegment(j)
		j.sh.sharedSeg = k > 1
		j.sh.withServing = k > 1 && nServe > 0
		j.sh.scheduled = false
		if j.Spec.Serving != nil {
			// a service runs for its wall time; the factor stretches its requests
			e.setSpeed(j, j.sh.base)
			e.servingSpeed(j, j.sh.base*f)
			continue
		}
		e.setSpeed(j, j.sh.base*f)
	}
	sh.factSum[g] = sum
	if mode == ShareMIG {
		sum = 1 // no interference loss between isolated instances
	}
	e.setLoss(g, sum, k)
}

// setLoss sets GPU g's interference-loss rate from its sharers' factor sum: the
// capacity max(0, 1-sum) lost when two or more jobs share it, else 0.
func (e *Engine) setLoss(g GPUID, sum float64, k int) {
	sh := e.share
	l := 0.0
	if k >= 2 {
		l = max(0, 1-sum)
	}
	sh.lossSum += l - sh.loss[g]
	sh.loss[g] = l
}

// setSpeed changes running job j's speed at now: it closes the current speed
// segment and reschedules the end when the speed differs.
func (e *Engine) setSpeed(j *Job, s float64) {
	if s == j.speed && j.sh.scheduled {
		return
	}
	if j.sh.scheduled {
		e.closeSegment(j)
	}
	e.share.rateSum += (s - j.speed) * float64(len(j.GPUs))
	j.speed = s
	if j.sh.minSpeed == 0 || s < j.sh.minSpeed {
		j.sh.minSpeed = s
	}
	e.scheduleEnd(j)
}

// closeSegment advances j's run state to now at its current speed and accrues its
// speed metrics.
func (e *Engine) closeSegment(j *Job) {
	el := e.now.Sub(j.sh.rs.t0)
	if el > 0 && j.sh.scheduled {
		if e.serving != nil {
			e.servingSegment(j, j.sh.rs.t0, el)
		}
		j.sh.rs.advance(el, j.speed, j.Spec.Duration, e.cfg.CheckpointInterval, e.cfg.CheckpointSave)
		j.sh.speedInt += j.speed * float64(el)
		j.sh.speedWall += el
		if j.sh.sharedSeg {
			j.sh.sharedWall += el
		}
	}
	j.sh.rs.t0 = e.now
}

// scheduleEnd pushes j's end event from its run state (rate-based mode): the end of
// its work at its current speed or its walltime limit, whichever comes first.
func (e *Engine) scheduleEnd(j *Job) {
	sp := &j.Spec
	end := e.now.Add(j.sh.rs.wallToEnd(j.speed, sp.Duration, e.cfg.CheckpointInterval, e.cfg.CheckpointSave))
	timeout := false
	if e.cfg.EnforceWalltime && sp.Walltime > 0 {
		if lim := j.LastStart.Add(max(0, sp.Walltime-j.usedWall)); end > lim {
			end, timeout = max(lim, e.now), true
		}
	}
	j.sh.scheduled = true
	j.endTime = end
	e.seq++
	gen := j.heapIdx + 1
	j.heapIdx = gen
	if timeout {
		gen = -gen
	}
	e.q.push(qitem{t: end, kind: qEnd, seq: e.seq, job: j.Ref, gen: gen})
}
