package reports

import (
	"math"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/gpusim/gpusim/sim"
)

// Device-level GPU sharing outputs (docs/sharing.md, "Metrics"). They exist only
// in runs with sharing configured (sim.Result.Sharing != nil): without it every
// file is byte-identical to a build without the feature.

// SharingJobColumns are the extra columns of jobs.csv / jobs.parquet in sharing
// runs, after JobColumns.
var SharingJobColumns = []string{"mean_speed", "min_speed", "shared_s"}

// SharingTimeseriesColumns are the extra columns of timeseries.parquet in sharing
// runs, after TimeseriesColumns.
var SharingTimeseriesColumns = []string{"useful_gpus", "useful_utilization", "shared_gpus"}

// JobShare is a job's sharing metrics (JobRow.Share; nil without sharing).
type JobShare struct {
	MeanSpeed float64 // time-weighted mean speed over its runs; NaN if it never ran
	MinSpeed  float64 // lowest speed it ran at; NaN if it never ran
	SharedS   float64 // seconds it ran on a GPU with other jobs
}

// SharingSummary is summary.json's "sharing" block.
type SharingSummary struct {
	// GPUHoursByMode is busy GPU time per GPU sharing mode (exclusive, timeslice, mps).
	GPUHoursByMode map[string]float64 `json:"gpu_hours_by_mode"`
	// AllocatedUtilization is allocated GPU-time / capacity over [0, end]; it counts
	// a shared GPU as one busy GPU.
	AllocatedUtilization float64 `json:"allocated_utilization"`
	// UsefulUtilization is the work done at reference speed (GPU-time a job
	// alone on a whole GPU would need) / capacity over [0, end]; it can exceed the
	// allocated one when co-located jobs together beat one job alone.
	UsefulUtilization float64 `json:"useful_utilization"`
	// SharedGPUHours is GPU time with two or more jobs on the GPU.
	SharedGPUHours float64 `json:"shared_gpu_hours"`
	// InterferenceLossGPUHours is, over shared GPUs, the integral of
	// max(0, 1 - sum of the co-located jobs' factors).
	InterferenceLossGPUHours float64 `json:"interference_loss_gpu_hours"`
	// MeasuredColocations and FallbackColocations count co-location changes whose
	// factors came from the measured matrix and from the fallback model.
	MeasuredColocations int64 `json:"measured_colocations"`
	FallbackColocations int64 `json:"fallback_colocations"`
	MIGReconfigurations int64 `json:"mig_reconfigurations"`
}

func summarizeSharing(res *sim.Result, s *Summary) {
	st := res.Sharing
	if st == nil {
		return
	}
	ss := &SharingSummary{GPUHoursByMode: map[string]float64{},
		SharedGPUHours:           round(st.SharedGPUSeconds / 3600),
		InterferenceLossGPUHours: round(st.InterferenceLossGPUSeconds / 3600),
		MeasuredColocations:      st.Measured, FallbackColocations: st.Fallback,
		MIGReconfigurations: st.MIGReconfigurations}
	for m, v := range st.GPUSecondsByMode {
		if v > 0 {
			ss.GPUHoursByMode[sim.SharingMode(m).String()] = round(v / 3600)
		}
	}
	if end := res.End.Seconds(); end > 0 && s.GPUCapacity > 0 {
		c := float64(s.GPUCapacity) * end
		ss.AllocatedUtilization = round(res.BusyMilliSeconds / 1000 / c)
		ss.UsefulUtilization = round(st.UsefulGPUSeconds / c)
	}
	s.Sharing = ss
}

func jobShare(j *sim.Job) *JobShare {
	js := &JobShare{MeanSpeed: math.NaN(), MinSpeed: math.NaN(), SharedS: secs(int64(j.SharedTime()))}
	if m := j.MeanSpeed(); m > 0 {
		js.MeanSpeed = math.Round(m*1e6) / 1e6
		js.MinSpeed = math.Round(j.MinSpeed()*1e6) / 1e6
	}
	return js
}

func appendJobShareCSV(b []byte, r *JobRow) []byte {
	if r.Share == nil {
		return b
	}
	for _, x := range [...]float64{r.Share.MeanSpeed, r.Share.MinSpeed, r.Share.SharedS} {
		b = append(b, ',')
		b = appendSecs(b, x)
	}
	return b
}

var jobsSharingSchema = arrow.NewSchema(append(jobsSchema.Fields(),
	arrow.Field{Name: "mean_speed", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	arrow.Field{Name: "min_speed", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	arrow.Field{Name: "shared_s", Type: arrow.PrimitiveTypes.Float64},
), nil)

var timeseriesSharingSchema = arrow.NewSchema(append(timeseriesSchema.Fields(),
	arrow.Field{Name: "useful_gpus", Type: arrow.PrimitiveTypes.Float64},
	arrow.Field{Name: "useful_utilization", Type: arrow.PrimitiveTypes.Float64},
	arrow.Field{Name: "shared_gpus", Type: arrow.PrimitiveTypes.Int32},
), nil)

func appendJobShareParquet(b *array.RecordBuilder, r *JobRow) {
	if r.Share == nil {
		return
	}
	n := len(jobsSchema.Fields())
	appendOptFloat(b.Field(n).(*array.Float64Builder), r.Share.MeanSpeed)
	appendOptFloat(b.Field(n+1).(*array.Float64Builder), r.Share.MinSpeed)
	b.Field(n + 2).(*array.Float64Builder).Append(r.Share.SharedS)
}

func appendSampleShareParquet(b *array.RecordBuilder, s *sim.Sample, gpus float64) {
	n := len(timeseriesSchema.Fields())
	b.Field(n).(*array.Float64Builder).Append(s.UsefulGPUs)
	u := 0.0
	if gpus > 0 {
		u = s.UsefulGPUs / gpus
	}
	b.Field(n + 1).(*array.Float64Builder).Append(u)
	b.Field(n + 2).(*array.Int32Builder).Append(s.SharedGPUs)
}
