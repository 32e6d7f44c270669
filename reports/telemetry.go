package reports

import "github.com/gpusim/gpusim/sim"

// Telemetry straggler outputs (docs/telemetry.md, docs/outputs.md). They exist
// only in runs with a telemetry: block (sim.Result.Telemetry != nil): without
// it every file is byte-identical to a build without the feature.

// TelemetrySummary is summary.json's "telemetry" block.
type TelemetrySummary struct {
	Episodes int64 `json:"episodes"` // degradation episodes that began within the run
	// DegradedNodeHours integrates the nodes running slow over [0, end].
	DegradedNodeHours float64 `json:"degraded_node_hours"`
	// SlowedGPUHours is the GPU time (× share) of running jobs whose gang ran
	// below full clock; LostGPUHours the part of it that produced no work
	// (Σ GPUs × (1 − gang factor) × time).
	SlowedGPUHours float64 `json:"slowed_gpu_hours"`
	LostGPUHours   float64 `json:"lost_gpu_hours"`
	// LostFraction is LostGPUHours / allocated GPU-hours.
	LostFraction float64 `json:"lost_fraction"`
	// JobsSlowed counts the jobs that ran slowed at some time; Resegments the
	// clock changes applied to running jobs.
	JobsSlowed int64 `json:"jobs_slowed"`
	Resegments int64 `json:"resegments"`
	// ECCFailures counts the node failures eccHazard added.
	ECCFailures int64 `json:"ecc_failures"`
}

func summarizeTelemetry(res *sim.Result, s *Summary) {
	st := res.Telemetry
	if st == nil {
		return
	}
	ts := &TelemetrySummary{Episodes: st.Episodes, JobsSlowed: st.JobsSlowed, Resegments: st.Resegments, ECCFailures: st.ECCFailures,
		DegradedNodeHours: round(st.DegradedNodeSeconds / 3600),
		SlowedGPUHours:    round(st.SlowedGPUSeconds / 3600),
		LostGPUHours:      round(st.LostGPUSeconds / 3600)}
	if res.BusyMilliSeconds > 0 {
		ts.LostFraction = round(st.LostGPUSeconds / (res.BusyMilliSeconds / 1000))
	}
	s.Telemetry = ts
}
