package pollux

import (
	"math"
	"sort"

	pm "github.com/gpusim/gpusim/workloads/pollux"
)

// optimus is the artifact's Optimus+Oracle+TunedJobs (simulator/optimus.py:
// OptimusPolicy.optimize): the batch size is the workload's; every active job
// first gets one GPU in job order while GPUs last, then GPUs go one at a time to
// the job with the largest marginal gain (t(k) − t(k+1)) × remaining iterations,
// where t(k) is the true step time with k GPUs packed 4 per node
// (predict_step_time). A job's cap is batch_size // min_local_bsz GPUs (ncf: 1).
// Jobs whose GPU count is unchanged keep their placement; the others are placed
// in ascending GPU count, each from the node with the most free GPUs.
type optimus struct{}

// OptimusStepTime is optimus.py:predict_step_time: seconds per optimizer step
// of total batch `batch` of app a on k GPUs packed perNode to a node, with at
// least one accumulation step on one GPU. The standalone reproduction and the
// engine policy (engine.go) both use it.
func OptimusStepTime(a *pm.App, batch, k, perNode int) (float64, error) {
	const eps = 1e-8
	placement := pm.PackedPlacement(k, perNode)
	local := int(math.Ceil(float64(batch)/float64(k) - eps))
	accum := int(math.Ceil(float64(local)/float64(a.MaxLocalBsz)-eps)) - 1
	if k == 1 {
		accum = max(1, accum)
	}
	atomic := int(math.Ceil(float64(local)/float64(accum+1) - eps))
	count := k * (accum + 1)
	atomic = min(atomic, a.MaxBatchSize/count)
	st, sy, err := a.Throughput(placement, atomic)
	if err != nil {
		return 0, err
	}
	return st + (st-sy)*float64(accum), nil
}

// OptimusRemaining is the remaining iterations of optimus.py: iterations at
// total batch `batch` to app a's completion epoch minus those to `epoch` (1
// once the completion epoch is reached).
func OptimusRemaining(a *pm.App, batch, epoch int) (float64, error) {
	ce := a.CompletionEpoch()
	if ce <= epoch {
		return 1, nil
	}
	x, err := a.Iteration(float64(batch), ce)
	if err != nil {
		return 0, err
	}
	y, err := a.Iteration(float64(batch), epoch)
	if err != nil {
		return 0, err
	}
	return x - y, nil
}

// OptimusMaxReplicas is Optimus's GPU cap of a job of app a with total batch
// `batch`: batch // min_local_bsz (ncf: 1).
func OptimusMaxReplicas(a *pm.App, batch int) int {
	if a.Name == "ncf" {
		return 1
	}
	return batch / a.MinLocalBsz
}

// OptimusJob is what Optimus's allocation knows of a job: its application,
// fixed total batch and current epoch (Optimus+Oracle).
type OptimusJob struct {
	App   *pm.App
	Batch int
	Epoch int
}

// OptimusCounts is the GPU-count part of OptimusPolicy.optimize: one GPU per
// job in order while GPUs last, then one GPU at a time to the job with the
// largest marginal gain (t(k) − t(k+1)) × remaining iterations (the first job
// wins ties), up to OptimusMaxReplicas.
func OptimusCounts(active []OptimusJob, gpus, perNode int) ([]int, error) {
	n := len(active)
	reps := make([]int, n)
	gain := make([]float64, n)
	remaining := make([]float64, n)
	marginal := func(i int) (float64, error) {
		j := &active[i]
		if reps[i]+1 > OptimusMaxReplicas(j.App, j.Batch) || gpus < 1 {
			return 0, nil
		}
		a, err := OptimusStepTime(j.App, j.Batch, reps[i], perNode)
		if err != nil {
			return 0, err
		}
		b, err := OptimusStepTime(j.App, j.Batch, reps[i]+1, perNode)
		if err != nil {
			return 0, err
		}
		return (a - b) * remaining[i], nil
	}
	var err error
	for i := range active {
		j := &active[i]
		if remaining[i], err = OptimusRemaining(j.App, j.Batch, j.Epoch); err != nil {
			return nil, err
		}
		if gpus < 1 {
			continue // 0 GPUs, gain 0
		}
		reps[i] = 1
		gpus--
		if gain[i], err = marginal(i); err != nil {
			return nil, err
		}
	}
	for gpus > 0 {
		best := 0
		for i := range gain {
			if gain[i] > gain[best] {
				best = i
			}
		}
		if gain[best] <= 0 {
			break
		}
		reps[best]++
		if gain[best], err = marginal(best); err != nil {
			return nil, err
		}
		gpus--
	}
	return reps, nil
}

func (o *optimus) optimize(now pm.Seconds, active []*job, prev [][]int, cfg Config) ([][]int, error) {
	oj := make([]OptimusJob, len(active))
	for i, j := range active {
		oj[i] = OptimusJob{App: j.app, Batch: j.targetBsz, Epoch: j.epoch}
	}
	reps, err := OptimusCounts(oj, cfg.Nodes*cfg.GPUsPerNode, cfg.GPUsPerNode)
	if err != nil {
		return nil, err
	}
	alloc := make([][]int, len(active))
	free := make([]int, cfg.Nodes)
	for i := range free {
		free[i] = cfg.GPUsPerNode
	}
	for i, a := range prev {
		if len(a) == reps[i] {
			alloc[i] = a
			for _, n := range a {
				free[n]--
			}
		}
	}
	order := make([]int, len(active))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return reps[order[a]] < reps[order[b]] })
	for _, i := range order {
		if reps[i] > 0 && len(alloc[i]) == 0 {
			alloc[i] = takeGPUs(nil, free, reps[i])
		}
	}
	return alloc, nil
}
