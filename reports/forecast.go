package reports

import "github.com/gpusim/gpusim/sim"

// ForecastSummary is summary.json's "forecast" block: what a queue policy's
// demand forecast (prospective scheduling, docs/forecast.md) held and what the
// large gangs it held for waited. Present only when the policy runs with
// forecast: params.
type ForecastSummary struct {
	// MinGPUs is the forecast's large-gang threshold (GPUs per job).
	MinGPUs int `json:"min_gpus"`
	// HeldGPUHours integrates the GPUs held for predicted arrivals;
	// QueueHeldGPUHours those held for pending large gangs.
	HeldGPUHours      float64 `json:"held_gpu_hours"`
	QueueHeldGPUHours float64 `json:"queue_held_gpu_hours"`
	// Predictions made; Hits (the gang came while its hold was up), Misses
	// (the hold decayed away), Early (the gang came before its hold started)
	// and Open (still up at the end).
	Predictions int `json:"predictions"`
	Hits        int `json:"hits"`
	Misses      int `json:"misses"`
	Early       int `json:"early"`
	Open        int `json:"open"`
	// LargeJobs counts the jobs of at least MinGPUs GPUs; LargeWaitS their
	// wait (first start − submit, started jobs), seconds.
	LargeJobs  int   `json:"large_jobs"`
	LargeWaitS Stats `json:"large_wait_s"`
}

// NewForecastSummary builds the block from the forecast's totals and the
// run's jobs (the large gangs' wait).
func NewForecastSummary(res *sim.Result, minGPUs int, heldGPUSeconds, queueHeldGPUSeconds float64, predictions, hits, misses, early, open int) *ForecastSummary {
	fs := &ForecastSummary{MinGPUs: minGPUs,
		HeldGPUHours: round(heldGPUSeconds / 3600), QueueHeldGPUHours: round(queueHeldGPUSeconds / 3600),
		Predictions: predictions, Hits: hits, Misses: misses, Early: early, Open: open}
	var wait []float64
	for i := range res.Jobs {
		j := &res.Jobs[i]
		if int(j.Spec.TotalGPUs()) < minGPUs {
			continue
		}
		fs.LargeJobs++
		if j.FirstStart != sim.Never {
			wait = append(wait, j.FirstStart.Sub(j.Spec.Submit).Seconds())
		}
	}
	fs.LargeWaitS = ComputeStats(wait)
	return fs
}
