package reports

import (
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/gpusim/gpusim/sim"
)

// Failure and recovery outputs (docs/failures.md, docs/outputs.md). They exist
// only in runs with failures configured (sim.Result.Failures != nil): without
// them every file is byte-identical to a build without the feature.

// FailureJobColumns are the extra columns of jobs.csv and jobs.parquet in
// failure runs, after JobColumns.
var FailureJobColumns = []string{"interruptions", "failure_lost_s", "failure_lost_gpu_hours"}

// JobFail is a job's failure metrics (JobRow.Fail; nil without failures).
type JobFail struct {
	Interruptions int32   // times its hardware failed under it
	LostS         float64 // wall time lost: work since the last checkpoint + restore or rebuild
	LostGPUHours  float64 // LostS × GPUs × share / 3600
}

// FailureSummary is summary.json's "failures" block.
type FailureSummary struct {
	Incidents            int64 `json:"incidents"`         // unexpected hardware incidents
	PlannedIncidents     int64 `json:"planned_incidents"` // maintenance windows
	Interruptions        int64 `json:"interruptions"`     // job interruptions by unexpected incidents
	PlannedInterruptions int64 `json:"planned_interruptions"`
	Recovered            int64 `json:"recovered"` // fault-tolerant recoveries in place
	Fallbacks            int64 `json:"fallbacks"` // fault-tolerant recoveries that restarted
	SparesUsed           int64 `json:"spares_used"`
	// LostGPUHours: Σ lost wall time × GPUs (work since checkpoint + restore/rebuild).
	LostGPUHours float64 `json:"lost_gpu_hours"`
	// UsefulGPUHours: work kept at reference speed × GPUs; AllocatedGPUHours:
	// allocated GPU time over [0, end]; Goodput = useful / allocated.
	UsefulGPUHours    float64 `json:"useful_gpu_hours"`
	AllocatedGPUHours float64 `json:"allocated_gpu_hours"`
	Goodput           float64 `json:"goodput"`
	// MTBFH: run length / unexpected incidents (cluster-wide, hours; 0 if none).
	// MTBIH: run length / job interruptions (hours; 0 if none).
	MTBFH float64 `json:"mtbf_h"`
	MTBIH float64 `json:"mtbi_h"`
	// MTTRH: mean repair time of the repairs completed in the run (hours).
	MTTRH        float64 `json:"mttr_h"`
	Repairs      int64   `json:"repairs"`
	DownGPUHours float64 `json:"down_gpu_hours"`
	Availability float64 `json:"availability"` // 1 − down GPU time / capacity time
}

func summarizeFailures(res *sim.Result, s *Summary) {
	st := res.Failures
	if st == nil {
		return
	}
	fs := &FailureSummary{Incidents: st.Incidents, PlannedIncidents: st.PlannedIncidents,
		Interruptions: st.Interruptions, PlannedInterruptions: st.PlannedInterrupt,
		Recovered: st.Recovered, Fallbacks: st.Fallbacks, SparesUsed: st.SparesUsed, Repairs: st.Repairs,
		LostGPUHours:      round(st.LostGPUSeconds / 3600),
		UsefulGPUHours:    round(st.UsefulGPUSeconds / 3600),
		AllocatedGPUHours: round(res.BusyMilliSeconds / 1000 / 3600),
		DownGPUHours:      round(st.DownGPUSeconds / 3600)}
	if res.BusyMilliSeconds > 0 {
		fs.Goodput = round(st.UsefulGPUSeconds / (res.BusyMilliSeconds / 1000))
	}
	end := res.End.Seconds() / 3600
	if st.Incidents > 0 {
		fs.MTBFH = round(end / float64(st.Incidents))
	}
	if st.Interruptions > 0 {
		fs.MTBIH = round(end / float64(st.Interruptions))
	}
	if st.Repairs > 0 {
		fs.MTTRH = round(st.RepairSeconds / float64(st.Repairs) / 3600)
	}
	if end > 0 && s.GPUCapacity > 0 {
		fs.Availability = round(1 - st.DownGPUSeconds/3600/(end*float64(s.GPUCapacity)))
	}
	s.Failures = fs
}

func jobFail(res *sim.Result, i int) *JobFail {
	st := res.Failures
	sp := &res.Jobs[i].Spec
	lost := st.JobLost[i].Seconds()
	return &JobFail{Interruptions: st.JobInterruptions[i], LostS: lost,
		LostGPUHours: round(lost * float64(sp.TotalGPUs()) * float64(sp.GPUMilli) / 1000 / 3600)}
}

func appendJobFailCSV(b []byte, r *JobRow) []byte {
	if r.Fail == nil {
		return b
	}
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(r.Fail.Interruptions), 10)
	b = append(b, ',')
	b = appendSecs(b, r.Fail.LostS)
	b = append(b, ',')
	return appendSecs(b, r.Fail.LostGPUHours)
}

var jobsFailureSchema = arrow.NewSchema(append(jobsSchema.Fields(),
	arrow.Field{Name: "interruptions", Type: arrow.PrimitiveTypes.Int32},
	arrow.Field{Name: "failure_lost_s", Type: arrow.PrimitiveTypes.Float64},
	arrow.Field{Name: "failure_lost_gpu_hours", Type: arrow.PrimitiveTypes.Float64},
), nil)

// failureJobColumns append the extra jobs.parquet columns of failure runs
// (jobsFailureSchema after jobsSchema).
var failureJobColumns = [...]func(b array.Builder, rows []JobRow){
	i32Col(func(r *JobRow) int32 { return r.Fail.Interruptions }),
	f64Col(func(r *JobRow) float64 { return r.Fail.LostS }),
	f64Col(func(r *JobRow) float64 { return r.Fail.LostGPUHours }),
}

func appendJobFailParquet(b *array.RecordBuilder, r *JobRow) {
	if r.Fail == nil {
		return
	}
	n := r.extraField(extraFail)
	b.Field(n).(*array.Int32Builder).Append(r.Fail.Interruptions)
	b.Field(n + 1).(*array.Float64Builder).Append(r.Fail.LostS)
	b.Field(n + 2).(*array.Float64Builder).Append(r.Fail.LostGPUHours)
}
