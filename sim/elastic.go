package sim

import (
	"errors"
	"fmt"
	"math"
)

// Elastic gangs (issue 14 §3, docs/elastic.md).
//
// An elastic job (JobSpec.Elastic != nil) is a gang whose replica count may
// change while it runs, between ElasticSpec.Min and Max in multiples of Step
// above Min. JobSpec.Replicas is its preferred count: the size a policy that
// knows nothing about elasticity starts it with, and the size at which
// JobSpec.Duration was measured. Progress is kept in work units (µs of work at
// the preferred size): on n replicas the job does Rate(placement) units per µs
// (n/Replicas by default), times the scenario's speed model.
//
// A policy resizes a running elastic job with Plan.AddResize. A resize happens
// at a safe point: the job checkpoints on demand at an iteration boundary (as
// AdaptDL's elastic jobs do when they are rescaled), so no work is lost, then
// spends Config.RescaleDelay restarting on its new replicas before it makes
// progress again. The instants at which a job is in its start-up restore or in
// a rescale delay are not safe points: a resize requested then is refused
// (PlanError; check Job.Resizable first).

// ElasticSpec makes a job elastic. Its sizes are Min, Min+Step, ... up to Max;
// JobSpec.Replicas (the preferred size) must be one of them.
type ElasticSpec struct {
	Min, Max, Step int32
	// Rate is the job's throughput on a placement relative to its preferred size
	// (nil: linear, replicas/preferred).
	Rate ElasticRate
}

// ElasticRate is an elastic job's throughput model: how many work units (µs
// at the preferred size) one µs of wall time does on a placement. It must
// return a finite value > 0 and be deterministic. nodes lists each replica's
// node (len(nodes) replicas).
type ElasticRate interface {
	Rate(nodes []NodeID) float64
}

// Valid reports whether n replicas is one of the spec's sizes.
func (e *ElasticSpec) Valid(n int32) bool {
	return n >= e.Min && n <= e.Max && (n-e.Min)%e.Step == 0
}

// validate checks the spec against its job (preferred = replicas).
func (e *ElasticSpec) validate(s *JobSpec) []string {
	var errs []string
	if e.Min < 1 {
		errs = append(errs, "elastic.min: must be >= 1")
	}
	if e.Step < 1 {
		errs = append(errs, "elastic.step: must be >= 1")
	}
	if e.Max < e.Min {
		errs = append(errs, "elastic.max: must be >= elastic.min")
	}
	if len(errs) == 0 && !e.Valid(s.Replicas) {
		errs = append(errs, fmt.Sprintf("elastic.preferred: %d replicas is not one of the sizes min + k*step <= max (%d..%d step %d)", s.Replicas, e.Min, e.Max, e.Step))
	}
	if s.GPUsPerReplica < 1 || s.GPUMilli != WholeGPU || s.LastReplicaGPUs != 0 || s.Sharing != AcceptExclusive || s.Serving != nil {
		errs = append(errs, "elastic: an elastic job needs equal replicas of whole, exclusive GPUs (not serving)")
	}
	return errs
}

// ElasticSeg is one stretch of an elastic job's life: from At it held
// Replicas replicas (0: not running).
type ElasticSeg struct {
	At       Time
	Replicas int32
}

// ElasticStats is the elastic jobs' record (Result.Elastic; nil when no job
// is elastic). The slices are indexed by JobRef; rigid jobs have nil
// segments and 0 resizes and rate changes.
type ElasticStats struct {
	// Resizes counts each job's resizes (Plan.AddResize).
	Resizes []int32
	// Rerates counts each job's rate changes (Plan.AddRate).
	Rerates []int32
	// Segs is each job's size over time: a new segment at every start, resize
	// and stop (several may share an instant); the last is at the job's end
	// (Replicas 0), or the job was still running at the end of the run.
	Segs [][]ElasticSeg
}

// TimeAt returns job r's wall time at each size (index = replicas, index 0
// unused) until end (the run's end time).
func (s *ElasticStats) TimeAt(r JobRef, end Time) []Duration {
	segs := s.Segs[r]
	var out []Duration
	for i, g := range segs {
		if g.Replicas == 0 {
			continue
		}
		to := end
		if i+1 < len(segs) {
			to = segs[i+1].At
		}
		for int(g.Replicas) >= len(out) {
			out = append(out, 0)
		}
		out[g.Replicas] += Duration(to - g.At)
	}
	return out
}

// ErrElastic is wrapped by the errors of elastic jobs in runs with models
// they do not support.
var ErrElastic = errors.New("elastic jobs")

// Replicas is the job's current replica count while it runs (len(Nodes)),
// else its preferred count.
func (j *Job) Replicas() int32 {
	if j.State == StateRunning {
		return int32(len(j.Nodes))
	}
	return j.Spec.Replicas
}

// Resizable reports whether running elastic job j is at a safe point at now:
// not in its start-up restore or rescale delay.
func (j *Job) Resizable(now Time) bool {
	return j.Spec.Elastic != nil && j.State == StateRunning && now >= j.LastStart.Add(j.runRestore)
}

// initElastic prepares the elastic record when any job is elastic and
// refuses the models elastic jobs do not support.
func (e *Engine) initElastic() error {
	for i := range e.jobs {
		if e.jobs[i].Spec.Elastic == nil {
			continue
		}
		switch {
		case e.cfg.Sharing != nil:
			return fmt.Errorf("%w: not supported with device-level sharing", ErrElastic)
		case e.cfg.Storage != nil:
			return fmt.Errorf("%w: not supported with checkpoint I/O (storage)", ErrElastic)
		case e.cfg.Telemetry != nil:
			return fmt.Errorf("%w: not supported with telemetry stragglers", ErrElastic)
		case e.cfg.Failures != nil:
			return fmt.Errorf("%w: not supported with failure injection", ErrElastic)
		case e.cfg.Power != nil:
			return fmt.Errorf("%w: not supported with power accounting", ErrElastic)
		case e.cfg.RescaleDelay != nil && *e.cfg.RescaleDelay < 0:
			return fmt.Errorf("%w: negative rescale delay %s", ErrElastic, *e.cfg.RescaleDelay)
		}
		e.elastic = &ElasticStats{Resizes: make([]int32, len(e.jobs)), Rerates: make([]int32, len(e.jobs)), Segs: make([][]ElasticSeg, len(e.jobs))}
		return nil
	}
	return nil
}

// rescaleDelay is the wall time a resize costs (Config.RescaleDelay, or the
// checkpoint model's save + restore).
func (e *Engine) rescaleDelay() Duration {
	if d := e.cfg.RescaleDelay; d != nil {
		return *d
	}
	return e.cfg.CheckpointSave + e.cfg.CheckpointRestore
}

// elasticRate is j's throughput factor on its current placement.
func elasticRate(j *Job) (float64, error) {
	el := j.Spec.Elastic
	if el.Rate == nil {
		return float64(len(j.Nodes)) / float64(j.Spec.Replicas), nil
	}
	r := el.Rate.Rate(j.Nodes)
	if !(r > 0) || math.IsInf(r, 0) {
		return 0, fmt.Errorf("elastic rate model returned %v on %d replicas", r, len(j.Nodes))
	}
	return r, nil
}

// elasticSeg records that j holds n replicas from now.
func (e *Engine) elasticSeg(j *Job, n int32) {
	e.elastic.Segs[j.Ref] = append(e.elastic.Segs[j.Ref], ElasticSeg{At: e.now, Replicas: n})
}

// elasticResult is the record of the run's elastic jobs.
func (e *Engine) elasticResult() *ElasticStats { return e.elastic }

// Resize asks the engine to resize running elastic job Job to Replicas
// replicas. Growing, Nodes and GPUs place the added replicas (as in Start,
// for replicas len(Job.Nodes).. in order); shrinking, they are empty and the
// last replicas are released. Either way, Nodes and GPUs may instead place
// all Replicas replicas anew (len(Nodes) == Replicas): the job's current
// GPUs are released first, so the new placement may reuse them.
type Resize struct {
	Job      JobRef
	Replicas int32
	Nodes    []NodeID
	GPUs     []GPUID
}

// AddResize resizes running elastic job j to n replicas at this safe point
// (see Resize; nodes and gpus are copied). Bound to an engine, it validates
// and applies the resize at once: work done so far is kept, the shrunk
// replicas' GPUs are free for later decisions of the same call, and the job
// spends the rescale delay before making progress on its new size. It returns
// a *PlanError if j is not a running elastic job at a safe point
// (Job.Resizable), n is not one of its sizes or equals its current size, or
// the added replicas' placement is invalid.
func (p *Plan) AddResize(j JobRef, n int32, nodes []NodeID, gpus []GPUID) error {
	r := Resize{Job: j, Replicas: n, Nodes: nodes, GPUs: gpus}
	if p.eng != nil {
		if err := p.eng.applyResize(&r); err != nil {
			return p.fail(fmt.Sprintf("resizes[%d] (job %s)", len(p.Resizes), p.eng.jobName(j)), err)
		}
	}
	n0, g0 := len(p.nodeBuf), len(p.gpuBuf)
	p.nodeBuf = append(p.nodeBuf, nodes...)
	p.gpuBuf = append(p.gpuBuf, gpus...)
	r.Nodes, r.GPUs = p.nodeBuf[n0:len(p.nodeBuf):len(p.nodeBuf)], p.gpuBuf[g0:len(p.gpuBuf):len(p.gpuBuf)]
	p.Resizes = append(p.Resizes, r)
	return nil
}

func (e *Engine) applyResize(rz *Resize) error {
	if rz.Job < 0 || int(rz.Job) >= len(e.jobs) {
		return fmt.Errorf("unknown job ref %d", rz.Job)
	}
	j := &e.jobs[rz.Job]
	sp := &j.Spec
	if sp.Elastic == nil {
		return errors.New("job is not elastic")
	}
	if j.State != StateRunning {
		return fmt.Errorf("job is %s, not running", j.State)
	}
	if !j.Resizable(e.now) {
		return fmt.Errorf("not at a safe point: restarting until t=%s", j.LastStart.Add(j.runRestore))
	}
	cur, n := int32(len(j.Nodes)), rz.Replicas
	if !sp.Elastic.Valid(n) {
		return fmt.Errorf("%d replicas is not one of the job's sizes (%d..%d step %d)", n, sp.Elastic.Min, sp.Elastic.Max, sp.Elastic.Step)
	}
	if n == cur {
		return fmt.Errorf("job already has %d replicas", n)
	}
	g := int(sp.GPUsPerReplica)
	add := max(0, int(n-cur))
	whole := len(rz.Nodes) == int(n)
	if whole && len(rz.GPUs) != int(n)*g || !whole && (len(rz.Nodes) != add || len(rz.GPUs) != add*g) {
		return fmt.Errorf("resize from %d to %d replicas needs %d nodes and %d GPUs for the added replicas (or %d and %d for a whole new placement), got %d and %d", cur, n, add, add*g, n, int(n)*g, len(rz.Nodes), len(rz.GPUs))
	}
	c := e.cluster
	if whole {
		for r := range j.Nodes {
			e.chargeReplica(j.Nodes[r], ReplicaSlice(j.GPUs, r, g), WholeGPU, sp.CPUMilli, sp.MemoryMiB, -1)
		}
	}
	for r, nd := range rz.Nodes {
		if nd < 0 || int(nd) >= c.NumNodes() {
			return fmt.Errorf("added replica %d: unknown node %d", r, nd)
		}
		if !sp.AllowsModel(c.nodes[nd].GPUModel) {
			return fmt.Errorf("added replica %d: node %s has GPU model %q, job allows %v", r, c.nodes[nd].Name, c.nodes[nd].GPUModel, sp.GPUModels)
		}
		if !c.fitsNode(nd, sp.CPUMilli, sp.MemoryMiB) {
			return fmt.Errorf("added replica %d: node %s lacks CPU or memory", r, c.nodes[nd].Name)
		}
		gs := ReplicaSlice(rz.GPUs, r, g)
		for a, gpu := range gs {
			if gpu < 0 || int64(gpu) >= c.totalGPUs || c.gpuNode[gpu] != nd {
				return fmt.Errorf("added replica %d: GPU %d is not on node %s", r, gpu, c.nodes[nd].Name)
			}
			if c.gpuUsed[gpu] != 0 || c.gpuMode != nil && c.gpuMode[gpu] == ShareMIG {
				return fmt.Errorf("added replica %d: GPU %d on node %s is not free", r, gpu, c.nodes[nd].Name)
			}
			for _, o := range gs[a+1:] {
				if o == gpu {
					return fmt.Errorf("added replica %d: GPU %d given twice", r, gpu)
				}
			}
		}
		e.chargeReplica(nd, gs, WholeGPU, sp.CPUMilli, sp.MemoryMiB, +1)
	}
	// The job checkpoints here: all work done so far is kept.
	el := Duration(e.now - j.LastStart)
	done, _, ovh := e.runProgress(j, el)
	j.Overhead += ovh
	j.Wasted += max(0, el-Duration(float64(done-j.runDone)/j.speed))
	j.Done = done
	j.usedWall += el
	switch {
	case whole:
		j.Nodes, j.GPUs = e.carveNodes(rz.Nodes), e.carveGPUs(rz.GPUs)
	case n < cur:
		for r := int(n); r < int(cur); r++ {
			e.chargeReplica(j.Nodes[r], ReplicaSlice(j.GPUs, r, g), WholeGPU, sp.CPUMilli, sp.MemoryMiB, -1)
		}
		j.Nodes, j.GPUs = j.Nodes[:n:n], j.GPUs[:int(n)*g:int(n)*g]
	default:
		nodes := e.carveNodes(append(j.Nodes, rz.Nodes...))
		gpus := e.carveGPUs(append(j.GPUs, rz.GPUs...))
		j.Nodes, j.GPUs = nodes, gpus
	}
	j.LastStart = e.now
	j.runDone = done
	j.runRestore = e.rescaleDelay()
	if err := e.elasticSpeed(j); err != nil {
		return err
	}
	e.elastic.Resizes[j.Ref]++
	e.elasticSeg(j, n)
	e.events++
	e.queueEnd(j)
	return nil
}

// elasticSpeed sets j.speed for its current placement: the speed model's
// factor times the elastic rate.
func (e *Engine) elasticSpeed(j *Job) error {
	j.speed = 1
	if e.cfg.Speed != nil {
		j.speed = e.cfg.Speed.Speed(e.cluster, j)
		if !(j.speed > 0) || math.IsInf(j.speed, 0) {
			return fmt.Errorf("speed model returned %v", j.speed)
		}
	}
	r, err := elasticRate(j)
	j.speed *= r
	return err
}

// WorkDone is job r's work done at now, in µs at its reference speed
// (JobSpec.Duration when it completes): Job.Done plus the current run's
// progress. Ground truth, like an oracle's progress report: for policies
// that model remaining work (Optimus+Oracle) and for tests.
func (v *View) WorkDone(r JobRef) Duration {
	e := v.e
	j := &e.jobs[r]
	if j.State != StateRunning || e.share != nil {
		return j.Done
	}
	d, _, _ := e.runProgress(j, Duration(e.now-j.LastStart))
	return d
}
