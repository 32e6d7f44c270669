package pollux

import (
	"fmt"
	"math"
	"slices"

	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// Cluster shape and clock of the artifact's results (simulator.py:__main__
// defaults --min-nodes 16 --num-gpus 4 --interval 60) and the restart delay of
// simulator.py:Job.reallocate.
const (
	DefaultNodes       = 16
	DefaultGPUsPerNode = 4
	DefaultInterval    = 60.0
	DefaultRestart     = 30.0
)

// Config is one simulation: a cluster of Nodes × GPUsPerNode GPUs, a policy run
// every Interval seconds, and RestartDelay seconds without progress after every
// allocation change.
type Config struct {
	Nodes, GPUsPerNode int
	// NodeGPUs, when set (the engine's Pollux on nodes of different sizes),
	// is each node's GPUs; GPUsPerNode is then the largest (the dominant
	// share's and nodesOf's node size).
	NodeGPUs     []int
	Interval     pm.Seconds
	RestartDelay pm.Seconds
	// MaxTime stops a run that has not finished all jobs by then (an error).
	MaxTime pm.Seconds
}

// DefaultConfig is the artifact's configuration.
func DefaultConfig() Config {
	return Config{Nodes: DefaultNodes, GPUsPerNode: DefaultGPUsPerNode, Interval: DefaultInterval, RestartDelay: DefaultRestart, MaxTime: 30 * 86400}
}

type profKey struct{ nodes, replicas, atomic int }

// job is simulator.py:Job.
type job struct {
	idx  int
	spec pm.Job
	app  *pm.App
	// targetBsz is the fixed total batch (Tiresias, Optimus, Pollux's ncf); 0
	// lets Pollux choose it from the job's goodput model.
	targetBsz      int
	targetReplicas int
	// maxRepCap, when > 0, also bounds Pollux's max_replicas (the engine's
	// elastic sizes, ElasticSpec.Max).
	maxRepCap int

	alloc     []int // node of each replica, as the policy returned it
	placement []int // GPUs per node, in allocation order
	atomic    int
	accum     int
	rescale   pm.Seconds
	progress  float64
	epoch     int
	done      bool
	completed pm.Seconds
	attained  float64 // GPU-seconds
	restarts  int     // -1 before the first start (Python's None)

	fit        bool // keep a fitted performance model (Pollux only)
	profile    map[profKey][2]float64
	profOrder  []profKey
	perf       *pm.PerfParams
	grad       pm.GradParams
	maxProfRep int

	// gpCache memoises the best goodput per (nodes, replicas) of the current
	// model (perf, grad); it is reset when either changes.
	gpCache map[[2]int]float64
	gpPerf  pm.PerfParams
	gpGrad  pm.GradParams
}

// goodput is max over batch sizes of the job's goodput model on (nodes,
// replicas) (GoodputFunction.optimize), memoised while the model is unchanged.
func (j *job) goodput(nodes, replicas int) float64 {
	if j.gpCache == nil || j.gpPerf != *j.perf || j.gpGrad != j.grad {
		j.gpCache = map[[2]int]float64{}
		j.gpPerf, j.gpGrad = *j.perf, j.grad
	}
	k := [2]int{nodes, replicas}
	if v, ok := j.gpCache[k]; ok {
		return v
	}
	v, _, _ := j.goodputFn().Optimize(nodes, replicas, j.limits())
	j.gpCache[k] = v
	return v
}

func (j *job) replicas() int {
	s := 0
	for _, v := range j.placement {
		s += v
	}
	return s
}

// limits are the batch limits of the job's goodput model (accumulation on).
func (j *job) limits() pm.BatchLimits {
	return pm.BatchLimits{MaxBatchSize: j.app.MaxBatchSize, MinAtomic: j.app.MinLocalBsz, MaxAtomic: j.app.MaxLocalBsz, Accumulation: true}
}

func (j *job) goodputFn() pm.Goodput {
	return pm.Goodput{Perf: *j.perf, Grad: j.grad, InitBatchSize: j.app.InitBatchSize}
}

// updateLocalBsz is simulator.py:Job.update_local_bsz.
func (j *job) updateLocalBsz() {
	nodes, reps := 0, 0
	for _, v := range j.placement {
		if v > 0 {
			nodes++
			reps += v
		}
	}
	batch := j.targetBsz
	if batch == 0 && j.perf == nil {
		batch = max(j.app.InitBatchSize, j.app.MinLocalBsz*reps)
	}
	if batch == 0 {
		_, j.atomic, j.accum = j.goodputFn().Optimize(nodes, reps, j.limits())
	} else {
		j.atomic, j.accum = j.app.FixedBatch(batch, reps)
		return
	}
	count := reps * (j.accum + 1)
	j.atomic = min(j.atomic, j.app.MaxBatchSize/count)
}

// updateParams is simulator.py:Job.update_params: record the observed point and
// refit the model when the point is new.
func (j *job) updateParams(nodes, reps, atomic int, step, sync, sqr, vr float64) {
	j.grad = pm.GradParams{Sqr: sqr, Var: vr}
	if !j.fit {
		return
	}
	k := profKey{nodes, reps, atomic}
	if _, ok := j.profile[k]; ok {
		return
	}
	if j.profile == nil {
		j.profile = map[profKey][2]float64{}
	}
	j.profile[k] = [2]float64{step, sync}
	j.profOrder = append(j.profOrder, k)
	j.maxProfRep = max(j.maxProfRep, reps)
	pts := make([]pm.ProfilePoint, len(j.profOrder))
	for i, k := range j.profOrder {
		v := j.profile[k]
		pts[i] = pm.ProfilePoint{Nodes: k.nodes, Replicas: k.replicas, AtomicBsz: k.atomic, AccumTime: v[0] - v[1], StepTime: v[0]}
	}
	p := pm.FitPerfParams(pts)
	j.perf = &p
}

// step is simulator.py:Job.step: advance the job by `seconds` from time `now`.
func (j *job) step(now, seconds pm.Seconds) error {
	if len(j.placement) == 0 || j.done {
		return nil
	}
	reps := j.replicas()
	delay := min(j.rescale, seconds)
	now += delay
	j.attained += delay * float64(reps)
	j.rescale -= delay
	seconds -= delay
	for seconds > 0 && !j.done {
		nodes := 0
		for _, v := range j.placement {
			if v > 0 {
				nodes++
			}
		}
		batch := reps * j.atomic * (j.accum + 1)
		scale := float64(batch) / float64(j.app.InitBatchSize)
		st, sy, err := j.app.Throughput(j.placement, j.atomic)
		if err != nil {
			return fmt.Errorf("job %s: %w", j.spec.Name, err)
		}
		accumTime := st - sy
		sqr, vr, err := j.app.GradStats(float64(batch), j.epoch)
		if err != nil {
			return fmt.Errorf("job %s: %w", j.spec.Name, err)
		}
		gain := (vr + sqr) / (vr/scale + sqr)
		j.updateParams(nodes, reps, j.atomic, st, sy, sqr, vr)
		total := st + accumTime*float64(j.accum)
		goodput := gain / total
		next := j.app.Progress(j.epoch + 1)
		if j.progress+goodput*seconds < next {
			j.progress += goodput * seconds
			now += seconds
			j.attained += seconds * float64(reps)
			seconds = 0
		} else {
			j.epoch++
			delta := math.RoundToEven((next - j.progress) / goodput)
			if j.epoch > j.app.CompletionEpoch() {
				j.done = true
				j.completed = now + delta
			}
			j.progress = next
			now += delta
			j.attained += delta * float64(reps)
			seconds -= delta
		}
		j.updateLocalBsz()
	}
	return nil
}

// reallocate is simulator.py:Job.reallocate.
func (j *job) reallocate(alloc []int, restart pm.Seconds) {
	j.alloc = slices.Clone(alloc)
	if len(alloc) == 0 {
		j.placement = nil
		j.atomic = 0
		return
	}
	var p []int
	for i, n := range alloc {
		if i == 0 || n != alloc[i-1] {
			p = append(p, 1)
		} else {
			p[len(p)-1]++
		}
	}
	j.placement = p
	j.updateLocalBsz()
	j.rescale = restart
	j.restarts++
}

// policy decides the allocations of one round: for every active job (in
// workload order) the node of each of its replicas; nil or empty means none.
// prev holds the current allocations of the active jobs.
type policy interface {
	optimize(now pm.Seconds, active []*job, prev [][]int, cfg Config) ([][]int, error)
}

// Result is one simulated workload.
type Result struct {
	Policy string
	// JCT of every job, in workload order (seconds from submission to the end
	// of its last epoch).
	JCT []pm.Seconds
	// Names are the job names, in workload order.
	Names []string
	// Restarts counts allocation changes after each job's first start.
	Restarts []int
	// End is the simulated time of the last round.
	End pm.Seconds
	// Rounds is the number of policy rounds.
	Rounds int
}

// MeanJCT is the average JCT.
func (r *Result) MeanJCT() pm.Seconds {
	s := 0.0
	for _, v := range r.JCT {
		s += v
	}
	return s / float64(len(r.JCT))
}

// Simulate runs the workload under the named policy (tiresias, optimus or
// pollux) with simulator.py's Cluster.step loop: every round all jobs advance by
// the interval under the previous allocations, the clock advances, and the
// policy reallocates among the submitted, unfinished jobs. It is deterministic.
func Simulate(jobs []pm.Job, policyName string, cfg Config) (*Result, error) {
	var pol policy
	switch policyName {
	case "tiresias":
		pol = newTiresias()
	case "optimus":
		pol = &optimus{}
	case "pollux":
		pol = newPolluxPolicy()
	default:
		return nil, fmt.Errorf("pollux: unknown policy %q (want tiresias, optimus or pollux)", policyName)
	}
	return simulateWith(jobs, policyName, pol, cfg)
}

// simulateWith is Simulate with the policy object given (policyName still
// selects the jobs' batch-size mode).
func simulateWith(jobs []pm.Job, policyName string, pol policy, cfg Config) (*Result, error) {
	apps, err := pm.Apps()
	if err != nil {
		return nil, err
	}
	if cfg.Nodes < 1 || cfg.GPUsPerNode < 1 || cfg.GPUsPerNode > 9 || cfg.Interval <= 0 || cfg.RestartDelay < 0 {
		return nil, fmt.Errorf("pollux: invalid cluster config %+v", cfg)
	}
	js := make([]*job, len(jobs))
	for i, s := range jobs {
		a := apps[s.App]
		if a == nil {
			return nil, fmt.Errorf("pollux: job %s: unknown application %q", s.Name, s.App)
		}
		j := &job{idx: i, spec: s, app: a, restarts: -1}
		switch policyName {
		case "tiresias":
			j.targetBsz, j.targetReplicas = s.BatchSize, s.Replicas
		case "optimus":
			j.targetBsz = s.BatchSize
		case "pollux":
			j.fit = true
			if a.Name == "ncf" {
				j.targetBsz = 32768
			}
		}
		if j.targetReplicas > cfg.Nodes*cfg.GPUsPerNode {
			return nil, fmt.Errorf("pollux: job %s needs %d GPUs, the cluster has %d", s.Name, j.targetReplicas, cfg.Nodes*cfg.GPUsPerNode)
		}
		js[i] = j
	}
	res := &Result{Policy: policyName}
	now := 0.0
	remaining := len(js)
	var active []*job
	var prev [][]int
	for remaining > 0 {
		if cfg.MaxTime > 0 && now > cfg.MaxTime {
			return nil, fmt.Errorf("pollux: %d jobs unfinished at %.0f s", remaining, now)
		}
		for _, j := range js {
			if err := j.step(now, cfg.Interval); err != nil {
				return nil, err
			}
		}
		now += cfg.Interval
		active, prev = active[:0], prev[:0]
		remaining = 0
		for _, j := range js {
			if !j.done {
				remaining++
			}
			if j.spec.Submit <= now && !j.done {
				active = append(active, j)
				prev = append(prev, j.alloc)
			}
		}
		// Finished jobs hand back their GPUs at this boundary.
		for _, j := range js {
			if j.done && j.alloc != nil {
				j.alloc = nil
			}
		}
		if len(active) == 0 {
			continue
		}
		res.Rounds++
		next, err := pol.optimize(now, active, prev, cfg)
		if err != nil {
			return nil, err
		}
		if err := checkAlloc(active, next, cfg); err != nil {
			return nil, fmt.Errorf("pollux: %s at %.0f s: %w", policyName, now, err)
		}
		for i, j := range active {
			if !slices.Equal(next[i], prev[i]) && !(len(next[i]) == 0 && len(prev[i]) == 0) {
				j.reallocate(next[i], cfg.RestartDelay)
			}
		}
	}
	res.End = now
	for _, j := range js {
		res.JCT = append(res.JCT, j.completed-j.spec.Submit)
		res.Names = append(res.Names, j.spec.Name)
		res.Restarts = append(res.Restarts, max(j.restarts, 0))
	}
	return res, nil
}

func checkAlloc(active []*job, next [][]int, cfg Config) error {
	if len(next) != len(active) {
		return fmt.Errorf("%d allocations for %d jobs", len(next), len(active))
	}
	used := make([]int, cfg.Nodes)
	for _, a := range next {
		for _, n := range a {
			if n < 0 || n >= cfg.Nodes {
				return fmt.Errorf("node %d out of range", n)
			}
			used[n]++
			if used[n] > cfg.GPUsPerNode {
				return fmt.Errorf("node %d over capacity", n)
			}
		}
	}
	return nil
}

// mostFree is Python's Counter.most_common(1)[0] over the free GPUs of nodes
// (ties: the lowest node index, the Counter's insertion order).
func mostFree(free []int) int {
	best := -1
	for n, f := range free {
		if best < 0 || f > free[best] {
			best = n
		}
	}
	return best
}

// takeGPUs appends count replicas to alloc, each time from the node with the
// most free GPUs (tiresias.py / optimus.py allocation loop).
func takeGPUs(alloc []int, free []int, count int) []int {
	for count > 0 {
		n := mostFree(free)
		k := min(free[n], count)
		if k <= 0 {
			return alloc // cannot happen when count <= Σ free
		}
		for range k {
			alloc = append(alloc, n)
		}
		free[n] -= k
		count -= k
	}
	return alloc
}
