package reports

import (
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/gpusim/gpusim/sim"
)

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

// CheckpointJobColumns are the extra columns of jobs.csv / jobs.parquet in
// runs with checkpoint I/O, after JobColumns and the sharing, failure and
// power groups that are on.
var CheckpointJobColumns = []string{"ckpt_saves", "ckpt_gb", "ckpt_save_s"}

// JobCkpt is a job's checkpoint I/O metrics (JobRow.Ckpt; nil without storage).
type JobCkpt struct {
	Saves int32   // checkpoints it completed
	GB    float64 // Saves × its checkpoint size
	SaveS float64 // wall time it spent saving, interrupted saves included
}

func jobCkpt(st *sim.StorageStats, i int) *JobCkpt {
	n := st.JobSaves[i]
	return &JobCkpt{Saves: n, GB: round(float64(n) * st.JobSizeGB[i]), SaveS: secs(int64(st.JobSaveTime[i]))}
}

func appendJobCkptCSV(b []byte, r *JobRow) []byte {
	if r.Ckpt == nil {
		return b
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Ckpt.Saves), 10)
	b = append(b, ',')
	b = strconv.AppendFloat(b, r.Ckpt.GB, 'f', -1, 64)
	b = append(b, ',')
	return appendSecs(b, r.Ckpt.SaveS)
}

// jobsCkptSchema is jobs.parquet's schema with checkpoint I/O (its extra
// fields follow jobsSchema's).
var jobsCkptSchema = arrow.NewSchema(append(jobsSchema.Fields(),
	arrow.Field{Name: "ckpt_saves", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "ckpt_gb", Type: arrow.PrimitiveTypes.Float64},
	arrow.Field{Name: "ckpt_save_s", Type: arrow.PrimitiveTypes.Float64},
), nil)

func appendJobCkptParquet(b *array.RecordBuilder, r *JobRow) {
	if r.Ckpt == nil {
		return
	}
	n := r.extraField(extraCkpt)
	b.Field(n).(*array.Int32Builder).Append(r.Ckpt.Saves)
	b.Field(n + 1).(*array.Float64Builder).Append(r.Ckpt.GB)
	b.Field(n + 2).(*array.Float64Builder).Append(r.Ckpt.SaveS)
}

// ckptJobColumns append the extra jobs.parquet columns of runs with
// checkpoint I/O (jobsCkptSchema after jobsSchema).
var ckptJobColumns = [...]func(b array.Builder, rows []JobRow){
	i32Col(func(r *JobRow) int32 { return r.Ckpt.Saves }),
	f64Col(func(r *JobRow) float64 { return r.Ckpt.GB }),
	f64Col(func(r *JobRow) float64 { return r.Ckpt.SaveS }),
}
