package sim

import "slices"

// The engine's rate-based paths (Config.Sharing set): start, stop and preempt a
// job whose progress is a runState (see progress.go) and whose speed is its
// placement speed times its sharing factor.

func (e *Engine) initShare() error {
	c := e.cluster
	clients := int32(7) // a MIG GPU holds up to 7 instances
	for i := range c.nodes {
		if c.nodes[i].Sharing != ShareExclusive {
			clients = max(clients, c.clients(&c.nodes[i]))
		}
	}
	g := c.totalGPUs
	e.share = &shareState{
		jobs:    make([][]JobRef, g),
		factSum: make([]float64, g),
		loss:    make([]float64, g),
		ws:      make([]int32, clients),
		solo:    make([]float64, clients),
		milli:   make([]MilliGPU, clients),
		out:     make([]float64, clients),
	}
	if c.mig == nil && c.gpuMode != nil && slices.Contains(c.gpuMode, ShareMIG) {
		if err := c.EnableMIG(e.cfg.Sharing.MIG); err != nil {
			return err
		}
	}
	shs := make([]jobShare, len(e.jobs))
	for i := range e.jobs {
		shs[i].wl = -1
		e.jobs[i].sh = &shs[i]
	}
	if in := e.cfg.Sharing.Interference; in != nil {
		for i := range e.jobs {
			if w := e.jobs[i].Spec.Workload; w != "" {
				if id, ok := in.WorkloadID(w); ok {
					e.jobs[i].sh.wl = id
				}
			}
		}
	}
	return nil
}

// integrate accrues the sharing metrics over dt seconds of unchanged state.
func (sh *shareState) integrate(dt float64) {
	st := &sh.stats
	for m, n := range sh.busy {
		st.GPUSecondsByMode[m] += float64(n) * dt
	}
	st.UsefulGPUSeconds += sh.rateSum * dt
	st.InterferenceLossGPUSeconds += sh.lossSum * dt
	st.SharedGPUSeconds += float64(sh.shared) * dt
}

// chargeShare charges (sign > 0) or releases a sharer's node CPU/memory and its
// share of GPU g.
func (e *Engine) chargeShare(n NodeID, g GPUID, j *Job, mem int64, sign int) {
	c := e.cluster
	sp := &j.Spec
	if c.gpuMode[g] == ShareMIG {
		if sign > 0 {
			j.sh.migIdx = int16(c.migPick(sp, g)) // validated by CanShare
			c.mig.inst[g][j.sh.migIdx].Job = j.Ref
		} else {
			c.mig.inst[g][j.sh.migIdx].Job = -1
		}
	}
	if sign > 0 {
		c.allocate(n, nil, 0, sp.CPUMilli, mem)
		if c.gpuUsed[g] == 0 {
			e.busyGPUs++
			e.share.busy[c.gpuMode[g]]++
		}
		c.shareJoin(g, sp.GPUMemMiB)
		return
	}
	c.release(n, nil, 0, sp.CPUMilli, mem)
	c.shareLeave(g, sp.GPUMemMiB)
	if c.gpuUsed[g] == 0 {
		e.busyGPUs--
		e.share.busy[c.gpuMode[g]]--
	}
}

// startRated sets up a started job's run state and speed and schedules its end;
// for a sharer, every co-runner's speed is recomputed.
func (e *Engine) startRated(j *Job) {
	j.sh.base = j.speed // placement speed from the SpeedModel (1 without one)
	j.speed = 0
	j.sh.factor = 1
	j.sh.scheduled, j.sh.sharedSeg, j.sh.withServing = false, false, false
	j.sh.rs = newRunState(e.now, j.Done, j.runRestore)
	if !e.isSharer(j) {
		e.setSpeed(j, j.sh.base)
		if j.Spec.Serving != nil {
			e.servingSpeed(j, j.sh.base)
		}
		return
	}
	g := j.GPUs[0]
	sh := e.share
	l := sh.jobs[g]
	i, _ := slices.BinarySearch(l, j.Ref)
	sh.jobs[g] = slices.Insert(l, i, j.Ref)
	if len(sh.jobs[g]) == 2 {
		sh.shared++
	}
	e.reshare(g)
}

// stopRated closes j's run state at now, releases its resources and, for a
// sharer, recomputes the speeds of the jobs left on its GPU.
func (e *Engine) stopRated(j *Job, mem int64) {
	e.closeSegment(j)
	if j.Spec.Serving != nil {
		e.servingSpeed(j, 0)
	}
	sh := e.share
	sh.rateSum -= j.speed * float64(len(j.GPUs))
	sp := &j.Spec
	g := int(sp.GPUsPerReplica)
	sharer := e.isSharer(j)
	if sharer {
		gpu := j.GPUs[0]
		e.chargeShare(j.Nodes[0], gpu, j, mem, -1)
		l := sh.jobs[gpu]
		if i, ok := slices.BinarySearch(l, j.Ref); ok {
			sh.jobs[gpu] = slices.Delete(l, i, i+1)
		}
		if len(sh.jobs[gpu]) == 1 {
			sh.shared--
		}
	} else {
		for r, n := range j.Nodes {
			e.chargeReplica(n, ReplicaSlice(j.GPUs, r, g), sp.GPUMilli, sp.CPUMilli, mem, -1)
		}
	}
	e.removeRunning(j)
	j.sh.scheduled = false
	if sharer {
		e.reshare(j.GPUs[0])
	}
}

// preemptRated is applyPreempt's rate-based tail (after the checks).
func (e *Engine) preemptRated(j *Job, p *Preempt) error {
	pre, preSpeed := j.sh.rs, j.speed
	e.stop(j, p.Mode == PreemptSuspend)
	el := Duration(e.now - j.LastStart)
	st := &j.sh.rs
	j.Preempted++
	j.lastPreempt = e.now
	switch p.Mode {
	case PreemptKill:
		e.killed(j, st.done, el, st.ovh)
		return nil
	case PreemptSuspend, PreemptLease, PreemptMigrate:
		switch p.Mode {
		case PreemptSuspend:
			j.usedWall += el
			j.suspended = true
			j.GPUs = nil
		case PreemptMigrate:
			j.restore, j.migrated, j.migDelay = true, true, p.Delay
			j.Nodes, j.GPUs = nil, nil
		default:
			j.restore = true
			j.Nodes, j.GPUs = nil, nil
		}
		j.Overhead += st.ovh
		j.Wasted += max(0, el-st.prod)
		j.Done = st.done
	default:
		ckpt, prodKept, ovh := st.ckpt, st.prodCkpt, st.ovh
		if c := e.cfg.CheckpointSave; e.cfg.CheckpointOnSignal && p.Grace >= c && p.Grace > 0 && el >= c {
			// saved in the last c of the grace period: the work done when the save
			// began survives. If the speed changed within that window, the state
			// at the last speed change (earlier) is used.
			at := e.now.Add(-c)
			if at > pre.t0 {
				pre.advance(at.Sub(pre.t0), preSpeed, j.Spec.Duration, e.cfg.CheckpointInterval, c)
			}
			if pre.done > ckpt {
				ckpt, prodKept = pre.done, pre.prod
			}
			ovh = pre.ovh + c
		}
		j.restore = true
		j.Nodes, j.GPUs = nil, nil
		j.Overhead += ovh
		j.Wasted += max(0, el-prodKept)
		j.Done = ckpt
	}
	e.repend(j, p.Mode)
	return nil
}
