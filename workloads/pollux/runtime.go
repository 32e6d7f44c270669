package pollux

import (
	"math"
)

// FixedBatch is the fixed-batch rule of simulator.py:Job.update_local_bsz for a
// total batch on `replicas` GPUs: local = ceil(batch/replicas), accumulation
// steps s = ceil(local/MaxLocalBsz) − 1 (at least 1 on one GPU above B0), atomic
// = ceil(local/(s+1)) capped at MaxBatchSize/(replicas·(s+1)).
func (a *App) FixedBatch(batch, replicas int) (atomic, accum int) {
	const eps = 1e-8
	local := int(math.Ceil(float64(batch)/float64(replicas) - eps))
	accum = int(math.Ceil(float64(local)/float64(a.MaxLocalBsz)-eps)) - 1
	if replicas == 1 && batch > a.InitBatchSize {
		accum = max(1, accum)
	}
	atomic = int(math.Ceil(float64(local)/float64(accum+1) - eps))
	atomic = min(atomic, a.MaxBatchSize/(replicas*(accum+1)))
	return atomic, accum
}

// PackedPlacement is `replicas` GPUs packed perNode to a node (the last node
// holds the rest), the placement optimus.py:predict_step_time assumes.
func PackedPlacement(replicas, perNode int) []int {
	var p []int
	for s := 0; s < replicas; s += min(replicas-s, perNode) {
		p = append(p, min(replicas-s, perNode))
	}
	return p
}

// TunedRunTime is the run time of a job that holds its TunedJobs configuration
// (job.Replicas GPUs packed perNode to a node, total batch job.BatchSize) from
// start to its last epoch without interruption: Σ over epochs of the epoch's
// progress / (gain / T_step), each epoch's end rounded to a whole second as
// simulator.py:Job.step does. The restart delay is not included.
func TunedRunTime(job Job, perNode int) (Seconds, error) {
	ep, err := tunedEpochs(job, perNode)
	total := 0.0
	for _, d := range ep {
		total += d
	}
	return total, err
}

// tunedEpochs is the run time of each epoch of TunedRunTime.
func tunedEpochs(job Job, perNode int) ([]Seconds, error) {
	a, err := appOf(job)
	if err != nil {
		return nil, err
	}
	t, batch, err := fixedStepTime(a, job.BatchSize, PackedPlacement(job.Replicas, perNode))
	if err != nil {
		return nil, err
	}
	scale := batch / float64(a.InitBatchSize)
	out := make([]Seconds, a.MaxEpochs)
	for e := range out {
		sqr, vr, err := a.GradStats(batch, e)
		if err != nil {
			return nil, err
		}
		gain := (vr + sqr) / (vr/scale + sqr)
		out[e] = math.RoundToEven((a.Progress(e+1) - a.Progress(e)) * t / gain)
	}
	return out, nil
}

// fixedStepTime is the optimizer step time T = step + accum·(step − sync) of
// total batch `batch` of app a on placement (GPUs per node) under the
// fixed-batch rule, and the total batch the rule actually runs.
func fixedStepTime(a *App, batch int, placement []int) (t, actual float64, err error) {
	reps := 0
	for _, v := range placement {
		reps += v
	}
	atomic, accum := a.FixedBatch(batch, reps)
	st, sy, err := a.Throughput(placement, atomic)
	if err != nil {
		return 0, 0, err
	}
	return st + (st-sy)*float64(accum), float64(reps * atomic * (accum + 1)), nil
}
