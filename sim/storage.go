package sim

import (
	"errors"
	"fmt"
	"math"
)

// Checkpoint I/O (docs/checkpoint-io.md).
//
// With Config.Storage, a periodic checkpoint no longer takes the fixed
// Config.CheckpointSave: it writes the job's checkpoint size into a storage
// pool (the whole cluster, or one pool per topology domain of a level, e.g.
// per leaf/rack) whose bandwidth B is shared by the saves in flight there as
// a processor-sharing queue: each of the n concurrent saves drains at B/n,
// recomputed whenever a save starts, completes or is interrupted. Saves that
// start together therefore slow each other down (the checkpoint burst).
//
// Each pool keeps a virtual clock V, the bytes served to every save in flight
// since the pool was last empty (dV/dt = B/n). A save of size S that joins at
// V0 completes when V reaches its tag V0+S; the pool keeps its saves in a heap
// by (tag, job) and has a single pending completion event, at the time V
// reaches the smallest tag (rounded up to the microsecond). Starting, ending
// or interrupting a save is O(log n); after setup only the pools' heaps grow
// (to the peak number of saves in flight).
//
// A job with checkpoints (interval > 0) then runs as a sequence of phases,
// each ended by an event: restore (after a requeue), work up to the next
// checkpoint multiple, save, work, ... and a last stretch of work that ends
// with the job's usual end event. Work is accounted exactly as in the
// closed form (runWall/runProgress): the productive wall time of a run from
// work d0 to work d is ceil((d-d0)/speed), and work done after productive time
// p is d0 + trunc(p*speed); only the saves' durations differ. Without
// Config.Storage none of this runs and every output is unchanged.

// StorageConfig is the checkpoint storage model (Config.Storage).
type StorageConfig struct {
	// BandwidthGBps is each pool's write bandwidth in GB/s (10^9 bytes/s); > 0.
	BandwidthGBps float64
	// PerDomain gives each domain of Level its own pool (e.g. LevelLeaf: one
	// storage target per rack); false means one pool for the whole cluster.
	PerDomain bool
	Level     Level
	// SizeGB is the checkpoint size of a job in GB (>= 0; 0 saves instantly).
	// Required.
	SizeGB func(*JobSpec) float64
	// Stagger shifts each job's checkpoints by its own offset in [0, interval)
	// of work (a hash of the seed and the job ID), so jobs that start together
	// do not all save together: job j checkpoints at work o_j + k·interval
	// (> 0) instead of k·interval.
	Stagger bool
}

// StorageStats summarises checkpoint I/O over a run (Result.Storage).
type StorageStats struct {
	Pools            int     // storage pools (1, or the domains of the level)
	Saves            int64   // checkpoints completed
	Interrupted      int64   // saves cut short by a preemption, failure or timeout (lost)
	GBWritten        float64 // size of the completed checkpoints
	SaveSeconds      float64 // wall time jobs spent saving, completed and interrupted saves
	SaveGPUSeconds   float64 // SaveSeconds weighted by each job's GPUs (GPUs idle while saving)
	AloneSeconds     float64 // what the completed saves would have taken alone (size/bandwidth)
	CompletedSeconds float64 // wall time of the completed saves
	MaxSlowdown      float64 // largest duration/alone ratio of a completed save (1 = never shared)
	PeakConcurrent   int     // most saves in flight in one pool at once
	PeakTotal        int     // most saves in flight in the cluster at once
	// Per job (indexed by JobRef): checkpoint size (GB), completed saves, and
	// wall time spent saving (completed and interrupted saves).
	JobSizeGB   []float64
	JobSaves    []int32
	JobSaveTime []Duration
}

// MeanSlowdown is the completed saves' total wall time over the time they
// would have taken alone (1 when no save was ever slowed; 0 without saves).
func (s *StorageStats) MeanSlowdown() float64 {
	if s.AloneSeconds <= 0 {
		return 0
	}
	return s.CompletedSeconds / s.AloneSeconds
}

// Queue kinds of the storage model (after the failure and telemetry kinds;
// the engine's loop handles kinds >= qCkpt as storage events).
const (
	qCkpt     uint8 = 9  // a job's restore or work phase ends (job = the job, gen = ckJob.gen)
	qCkptPool uint8 = 10 // a pool's next save completes (job = the pool, gen = ckPool.gen)
)

// Phases of a storage job's run.
const (
	phRestore uint8 = iota
	phWork
	phSave
)

// ckJob is one job's storage state for its current run (indexed by JobRef).
type ckJob struct {
	t0    Time     // start of the current phase
	done  Duration // work done at t0 (the checkpoint multiple being saved in phSave)
	ckpt  Duration // work kept by the latest completed checkpoint
	ovh   Duration // restore and save time spent in the run before t0
	prod  Duration // productive wall time spent in the run before t0
	size  float64  // checkpoint size, GB
	tag   float64  // phSave: completion tag in the pool's virtual clock
	gen   int32    // generation of the pending qCkpt event
	pool  int32    // pool of the current run
	hidx  int32    // index in the pool heap while saving, else -1
	phase uint8
	on    bool // the current (or last) run is under the storage model
}

// ckPool is one storage pool.
type ckPool struct {
	v    float64 // virtual clock: GB served to each save in flight
	tv   Time    // time of v
	heap []JobRef
	gen  int32
}

type storageState struct {
	cfg      StorageConfig
	bw       float64 // GB per µs
	jobs     []ckJob
	size     []float64  // per job, GB
	off      []Duration // per job checkpoint offset (Stagger), else nil
	pools    []ckPool
	nodePool []int32
	active   int
	stats    StorageStats
}

func (e *Engine) initStorage() error {
	sc := e.cfg.Storage
	if !(sc.BandwidthGBps > 0) || math.IsInf(sc.BandwidthGBps, 0) {
		return fmt.Errorf("sim: storage: bandwidth must be a finite value > 0, got %v", sc.BandwidthGBps)
	}
	if sc.SizeGB == nil {
		return errors.New("sim: storage: no checkpoint size function")
	}
	if e.cfg.Sharing != nil {
		return errors.New("sim: storage: checkpoint I/O does not support device-level GPU sharing yet")
	}
	if e.cfg.CheckpointSave > 0 {
		return errors.New("sim: storage: CheckpointSave must be 0 (the save time follows from the checkpoint size and bandwidth)")
	}
	if e.cfg.CheckpointOnSignal {
		return errors.New("sim: storage: CheckpointOnSignal is not supported with checkpoint I/O yet")
	}
	if f := e.cfg.Failures; f != nil && f.Recovery == RecoverFaultTolerant {
		// in-place recovery restarts a run's closed-form accounting; the drain
		// checkpoint of planned incidents (PlannedCheckpoint) is not taken
		// under storage: a drained job keeps its last periodic checkpoint
		return errors.New("sim: storage: checkpoint I/O supports failures with restart recovery only")
	}
	c := e.cluster
	st := &storageState{cfg: *sc, bw: sc.BandwidthGBps / 1e6}
	st.nodePool = make([]int32, c.NumNodes())
	np := 1
	if sc.PerDomain {
		if sc.Level >= NumLevels {
			return fmt.Errorf("sim: storage: unknown level %d", sc.Level)
		}
		np = max(1, len(c.Domains(sc.Level)))
		for n := range st.nodePool {
			if f, end := c.NodeGPUs(NodeID(n)); f < end {
				st.nodePool[n] = c.GPUDomain(f, sc.Level)
			}
		}
	}
	st.pools = make([]ckPool, np)
	st.stats.Pools = np
	st.jobs = make([]ckJob, len(e.jobs))
	st.size = make([]float64, len(e.jobs))
	st.stats.JobSizeGB = st.size
	st.stats.JobSaves = make([]int32, len(e.jobs))
	st.stats.JobSaveTime = make([]Duration, len(e.jobs))
	for i := range e.jobs {
		s := sc.SizeGB(&e.jobs[i].Spec)
		if !(s >= 0) || math.IsInf(s, 0) {
			return fmt.Errorf("sim: storage: job %q: checkpoint size %v GB", e.jobs[i].Spec.ID, s)
		}
		st.size[i] = s
		st.jobs[i].hidx = -1
	}
	if sc.Stagger {
		st.off = make([]Duration, len(e.jobs))
		for i := range e.jobs {
			if iv := e.ivOf(&e.jobs[i]); iv > 0 {
				st.off[i] = Duration(staggerHash(e.cfg.Seed, string(e.jobs[i].Spec.ID)) % uint64(iv))
			}
		}
	}
	e.sto = st
	return nil
}

// staggerHash mixes the seed and a job ID (FNV-1a, then a splitmix64
// finaliser): the job's checkpoint offset does not depend on the input order.
func staggerHash(seed uint64, id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	x := h ^ seed*0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// next is job r's first checkpoint position (work) after done: the next
// multiple of iv, shifted by the job's offset under Stagger.
func (st *storageState) next(r JobRef, done, iv Duration) Duration {
	if st.off == nil {
		return (done/iv + 1) * iv
	}
	o := st.off[r]
	if done < o {
		return o
	}
	return o + ((done-o)/iv+1)*iv
}

// stoStart starts j's run under the storage model if it checkpoints, and
// schedules its first phase event; it reports whether it did (otherwise the
// closed form applies: no checkpoint before the end means no save).
func (e *Engine) stoStart(j *Job) bool {
	iv := e.ivOf(j)
	if iv <= 0 || e.sto.next(j.Ref, j.runDone, iv) >= j.Spec.Duration {
		e.sto.jobs[j.Ref].on = false
		return false
	}
	sp := &j.Spec
	k := &e.sto.jobs[j.Ref]
	*k = ckJob{t0: e.now, done: j.runDone, ckpt: j.runDone, size: e.sto.size[j.Ref], gen: k.gen, hidx: -1, on: true}
	if len(j.Nodes) > 0 {
		k.pool = e.sto.nodePool[j.Nodes[0]]
	}
	e.runIdx[j.Ref] = int32(len(e.running))
	e.running = append(e.running, j)
	gen := j.heapIdx + 1
	j.heapIdx = gen
	j.endTime = Never
	if e.cfg.EnforceWalltime && sp.Walltime > 0 {
		// the time limit: a timeout end event, made stale by any earlier end
		lim := e.now.Add(max(0, sp.Walltime-j.usedWall))
		j.endTime = lim
		e.seq++
		e.q.push(qitem{t: lim, kind: qEnd, seq: e.seq, job: j.Ref, gen: -gen})
	}
	if j.runRestore > 0 {
		k.phase = phRestore
		e.stoEvent(j, k, e.now.Add(j.runRestore))
		return true
	}
	e.stoWork(j, k)
	return true
}

// stoEvent schedules the end of j's current phase at t.
func (e *Engine) stoEvent(j *Job, k *ckJob, t Time) {
	k.gen++
	e.seq++
	e.q.push(qitem{t: t, kind: qCkpt, seq: e.seq, job: j.Ref, gen: k.gen})
}

// prodFor is the productive wall time a run from work d0 needs to reach work d.
func prodFor(d0, d Duration, s float64) Duration {
	if s == 1 {
		return d - d0
	}
	return Duration(math.Ceil(float64(d-d0) / s))
}

// stoWork starts a work phase at now: up to the next checkpoint multiple, or
// to the end (then the job's end event, unless its time limit comes first).
func (e *Engine) stoWork(j *Job, k *ckJob) {
	k.phase, k.t0 = phWork, e.now
	iv, total := e.ivOf(j), j.Spec.Duration
	nx := e.sto.next(j.Ref, k.done, iv)
	if nx < total {
		e.stoEvent(j, k, e.now.Add(prodFor(j.runDone, nx, j.speed)-k.prod))
		return
	}
	end := e.now.Add(prodFor(j.runDone, total, j.speed) - k.prod)
	if j.endTime != Never && end > j.endTime {
		return // the time limit comes first
	}
	// at the limit the job completes (as in the closed form): the new
	// generation makes the timeout event stale
	j.heapIdx++
	j.endTime = end
	e.seq++
	e.q.push(qitem{t: end, kind: qEnd, seq: e.seq, job: j.Ref, gen: j.heapIdx})
}

// stoPhaseEnd handles a qCkpt event.
func (e *Engine) stoPhaseEnd(it qitem) {
	j := &e.jobs[it.job]
	k := &e.sto.jobs[it.job]
	if j.State != StateRunning || !k.on || it.gen != k.gen {
		return // stale
	}
	e.events++
	switch k.phase {
	case phRestore:
		k.ovh += Duration(e.now - k.t0)
		e.stoWork(j, k)
	case phWork:
		iv := e.ivOf(j)
		k.prod += Duration(e.now - k.t0)
		k.done = e.sto.next(j.Ref, k.done, iv)
		if k.size <= 0 {
			k.ckpt = k.done
			e.sto.stats.Saves++
			e.sto.stats.JobSaves[it.job]++
			e.stoWork(j, k)
			return
		}
		k.phase, k.t0 = phSave, e.now
		e.poolJoin(j.Ref, k)
	}
}

// poolAdvance moves pool p's virtual clock to now.
func (st *storageState) poolAdvance(p *ckPool, now Time) {
	if n := len(p.heap); n > 0 && now > p.tv {
		p.v += float64(now-p.tv) * st.bw / float64(n)
	}
	p.tv = now
}

// poolSchedule (re)schedules pool pi's next completion.
func (e *Engine) poolSchedule(pi int32) {
	st := e.sto
	p := &st.pools[pi]
	p.gen++
	if len(p.heap) == 0 {
		p.v = 0 // restart the clock: keeps it small and exact
		return
	}
	left := st.jobs[p.heap[0]].tag - p.v
	dt := Duration(0)
	if left > 0 {
		dt = Duration(math.Ceil(left * float64(len(p.heap)) / st.bw))
	}
	e.seq++
	e.q.push(qitem{t: e.now.Add(dt), kind: qCkptPool, seq: e.seq, job: JobRef(pi), gen: p.gen})
}

// poolJoin starts the save of job r (phase phSave at now) in its pool.
func (e *Engine) poolJoin(r JobRef, k *ckJob) {
	st := e.sto
	p := &st.pools[k.pool]
	st.poolAdvance(p, e.now)
	k.tag = p.v + k.size
	st.heapPush(p, r)
	st.active++
	st.stats.PeakConcurrent = max(st.stats.PeakConcurrent, len(p.heap))
	st.stats.PeakTotal = max(st.stats.PeakTotal, st.active)
	e.poolSchedule(k.pool)
}

// stoPoolEnd handles a qCkptPool event: the saves whose tag is reached complete.
func (e *Engine) stoPoolEnd(it qitem) {
	st := e.sto
	pi := int32(it.job)
	p := &st.pools[pi]
	if it.gen != p.gen || len(p.heap) == 0 {
		return // stale
	}
	e.events++
	st.poolAdvance(p, e.now)
	// the event was due when v reached the smallest tag: float rounding must
	// not leave that save behind
	p.v = max(p.v, st.jobs[p.heap[0]].tag)
	for len(p.heap) > 0 && st.jobs[p.heap[0]].tag <= p.v {
		r := st.heapPop(p)
		st.active--
		j, k := &e.jobs[r], &st.jobs[r]
		w := Duration(e.now - k.t0)
		k.ovh += w
		k.ckpt = k.done
		s := &st.stats
		s.Saves++
		s.JobSaves[r]++
		s.JobSaveTime[r] += w
		s.GBWritten += k.size
		sec := w.Seconds()
		alone := k.size / st.cfg.BandwidthGBps
		s.SaveSeconds += sec
		s.SaveGPUSeconds += sec * float64(j.Spec.TotalGPUs())
		s.CompletedSeconds += sec
		s.AloneSeconds += alone
		if alone > 0 {
			s.MaxSlowdown = max(s.MaxSlowdown, sec/alone)
		}
		e.stoWork(j, k)
	}
	e.poolSchedule(pi)
}

// stoStop closes j's storage run at now (it stops: finish, preemption,
// failure, timeout): a save in flight is lost and leaves its pool. The phase
// state stays, so stoProgress still answers for the run.
func (e *Engine) stoStop(j *Job) {
	st := e.sto
	k := &st.jobs[j.Ref]
	if !k.on {
		return
	}
	k.gen++ // the pending phase event is stale
	if k.phase != phSave || k.hidx < 0 {
		return
	}
	p := &st.pools[k.pool]
	st.poolAdvance(p, e.now)
	st.heapRemove(p, k.hidx)
	st.active--
	w := Duration(e.now - k.t0)
	sec := w.Seconds()
	st.stats.JobSaveTime[j.Ref] += w
	st.stats.Interrupted++
	st.stats.SaveSeconds += sec
	st.stats.SaveGPUSeconds += sec * float64(j.Spec.TotalGPUs())
	e.poolSchedule(k.pool)
}

// stoProgress is runProgress for a run under the storage model, at el after
// its start (el >= the start of its current phase).
func (e *Engine) stoProgress(j *Job, el Duration) (done, ckpt, overhead Duration) {
	k := &e.sto.jobs[j.Ref]
	t := max(0, Duration(j.LastStart.Add(el)-k.t0))
	switch k.phase {
	case phRestore, phSave:
		return k.done, k.ckpt, k.ovh + t
	}
	p := k.prod + t
	done = j.runDone + p
	if j.speed != 1 {
		done = j.runDone + Duration(float64(p)*j.speed)
	}
	iv := e.ivOf(j)
	return min(done, e.sto.next(j.Ref, k.done, iv), j.Spec.Duration), k.ckpt, k.ovh
}

// Heap of a pool's saves by (tag, JobRef).

func (st *storageState) less(a, b JobRef) bool {
	ta, tb := st.jobs[a].tag, st.jobs[b].tag
	if ta != tb {
		return ta < tb
	}
	return a < b
}

func (st *storageState) set(p *ckPool, i int, r JobRef) {
	p.heap[i] = r
	st.jobs[r].hidx = int32(i)
}

func (st *storageState) up(p *ckPool, i int) {
	for i > 0 {
		q := (i - 1) / 2
		if !st.less(p.heap[i], p.heap[q]) {
			break
		}
		a, b := p.heap[i], p.heap[q]
		st.set(p, i, b)
		st.set(p, q, a)
		i = q
	}
}

func (st *storageState) down(p *ckPool, i int) {
	n := len(p.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && st.less(p.heap[r], p.heap[l]) {
			m = r
		}
		if !st.less(p.heap[m], p.heap[i]) {
			return
		}
		a, b := p.heap[i], p.heap[m]
		st.set(p, i, b)
		st.set(p, m, a)
		i = m
	}
}

func (st *storageState) heapPush(p *ckPool, r JobRef) {
	p.heap = append(p.heap, r)
	st.set(p, len(p.heap)-1, r)
	st.up(p, len(p.heap)-1)
}

func (st *storageState) heapPop(p *ckPool) JobRef {
	r := p.heap[0]
	st.heapRemove(p, 0)
	return r
}

func (st *storageState) heapRemove(p *ckPool, i32 int32) {
	i := int(i32)
	r := p.heap[i]
	last := len(p.heap) - 1
	if i != last {
		st.set(p, i, p.heap[last])
	}
	p.heap = p.heap[:last]
	st.jobs[r].hidx = -1
	if i < last {
		st.down(p, i)
		st.up(p, i)
	}
}
