package reports

import "github.com/gpusim/gpusim/sim"

// Checkpoint I/O outputs (docs/checkpoint-io.md, docs/outputs.md). They exist
// only in runs with a storage: block (sim.Result.Storage != nil): without it
// every file is byte-identical to a build without the feature.

// CheckpointIOSummary is summary.json's "checkpoint_io" block.
type CheckpointIOSummary struct {
	// Pools is the number of storage pools (1 cluster-wide, or the domains of
	// the storage scope's level).
	Pools int `json:"pools"`
	// Saves counts completed checkpoints; Interrupted the saves lost to a
	// preemption, failure or time limit before they completed.
	Saves       int64 `json:"saves"`
	Interrupted int64 `json:"interrupted_saves"`
	// GBWritten is the size of the completed checkpoints, in GB.
	GBWritten float64 `json:"gb_written"`
	// SaveHours is the wall time jobs spent saving (completed and interrupted
	// saves); SaveGPUHours weights it by each job's GPUs (GPUs held idle).
	SaveHours    float64 `json:"save_hours"`
	SaveGPUHours float64 `json:"save_gpu_hours"`
	// MeanSlowdown is the completed saves' wall time over the time they would
	// have taken alone (size / bandwidth); MaxSlowdown the worst single save.
	// 1 means no save was ever slowed by another.
	MeanSlowdown float64 `json:"save_slowdown_mean"`
	MaxSlowdown  float64 `json:"save_slowdown_max"`
	// PeakConcurrent is the most saves in flight in one pool at once;
	// PeakTotal in the whole cluster.
	PeakConcurrent int `json:"peak_concurrent_saves"`
	PeakTotal      int `json:"peak_concurrent_saves_cluster"`
}

func summarizeStorage(res *sim.Result, s *Summary) {
	st := res.Storage
	if st == nil {
		return
	}
	s.CheckpointIO = &CheckpointIOSummary{
		Pools: st.Pools, Saves: st.Saves, Interrupted: st.Interrupted,
		GBWritten:      round(st.GBWritten),
		SaveHours:      round(st.SaveSeconds / 3600),
		SaveGPUHours:   round(st.SaveGPUSeconds / 3600),
		MeanSlowdown:   round(st.MeanSlowdown()),
		MaxSlowdown:    round(st.MaxSlowdown),
		PeakConcurrent: st.PeakConcurrent,
		PeakTotal:      st.PeakTotal,
	}
}
