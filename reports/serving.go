package reports

import (
	"io"
	"math"
	"strconv"

	"github.com/gpusim/gpusim/sim"
)

// Serving outputs (docs/serving.md, docs/outputs.md "Serving"): they exist only
// in runs with serving jobs (sim.Result.Serving != nil); other runs write no new
// file and no new summary field.

// File names of the serving outputs inside a run directory.
const (
	ServingFile    = "serving.csv"
	ServingP99File = "serving_p99.csv"
)

// ServingColumns are serving.csv's columns (one row per serving job).
var ServingColumns = []string{"job_id", "rate_peak_rps", "service_ms", "sla_ms", "min_speed_bound",
	"running_s", "sla_violation_s", "min_speed", "max_p99_ms"}

// ServingP99Columns are serving_p99.csv's columns (one row per change of a
// serving job's speed or request rate, and one when it stops).
var ServingP99Columns = []string{"time_s", "job_id", "rate_rps", "speed", "rho", "p99_ms", "sla_ms"}

// ServingSummary is summary.json's "serving" block.
type ServingSummary struct {
	// Jobs is the number of serving jobs; JobsViolating of them spent some
	// running time over their SLA.
	Jobs          int `json:"jobs"`
	JobsViolating int `json:"jobs_violating"`
	// ViolationHours is their summed running time with the predicted P99 over
	// the SLA; RunningHours their summed running time.
	ViolationHours float64 `json:"sla_violation_hours"`
	RunningHours   float64 `json:"running_hours"`
	// ColocatedTrainingGPUHours is the work (GPU-hours at reference speed) that
	// other jobs did on GPUs shared with serving jobs: the training throughput
	// gained by co-location with serving. ColocatedTrainingGPUs is the same
	// divided by the makespan (mean GPUs' worth of training).
	ColocatedTrainingGPUHours float64 `json:"colocated_training_gpu_hours"`
	ColocatedTrainingGPUs     float64 `json:"colocated_training_gpus"`
}

func summarizeServing(res *sim.Result, s *Summary) {
	sv := res.Serving
	if sv == nil {
		return
	}
	ss := &ServingSummary{Jobs: len(sv.Jobs), ColocatedTrainingGPUHours: round(sv.ColocatedTrainingGPUSeconds / 3600)}
	var viol, run sim.Duration
	for _, j := range sv.Jobs {
		if j.Violation > 0 {
			ss.JobsViolating++
		}
		viol += j.Violation
		run += j.Running
	}
	ss.ViolationHours, ss.RunningHours = round(viol.Seconds()/3600), round(run.Seconds()/3600)
	if ms := res.Makespan.Seconds(); ms > 0 {
		ss.ColocatedTrainingGPUs = round(sv.ColocatedTrainingGPUSeconds / ms)
	}
	s.Serving = ss
}

// appendMs appends seconds x as milliseconds ("inf" when infinite, empty when NaN).
func appendMs(b []byte, x float64) []byte {
	switch {
	case math.IsNaN(x):
		return b
	case math.IsInf(x, 1):
		return append(b, "inf"...)
	}
	return strconv.AppendFloat(b, math.Round(x*1e9)/1e6, 'f', -1, 64)
}

func appendNum(b []byte, x float64) []byte {
	return strconv.AppendFloat(b, math.Round(x*1e9)/1e9, 'f', -1, 64)
}

// WriteServingCSV writes serving.csv (ServingColumns) for a run with serving jobs.
func WriteServingCSV(w io.Writer, res *sim.Result) error {
	return writeCSVRows(w, ServingColumns, len(res.Serving.Jobs), func(b []byte, i int) []byte {
		st := res.Serving.Jobs[i]
		j := &res.Jobs[st.Job]
		sp := j.Spec.Serving
		b = append(b, j.Spec.ID...)
		b = append(appendNum(append(b, ','), sp.PeakRate()), ',')
		b = append(appendMs(b, sp.Service.Seconds()), ',')
		b = append(appendMs(b, sp.SLA.Seconds()), ',')
		b = append(appendNum(b, st.MinSpeedBound), ',')
		b = append(appendSecs(b, st.Running.Seconds()), ',')
		b = append(appendSecs(b, st.Violation.Seconds()), ',')
		if st.Running > 0 {
			b = append(appendNum(b, st.MinSpeed), ',')
			b = appendMs(b, st.MaxP99)
		} else {
			b = append(b, ',')
		}
		b = append(b, '\n')
		return b
	})
}

// WriteServingP99CSV writes serving_p99.csv (ServingP99Columns): the serving
// jobs' predicted-P99 time series in time order.
func WriteServingP99CSV(w io.Writer, res *sim.Result) error {
	return writeCSVRows(w, ServingP99Columns, len(res.Serving.Points), func(b []byte, i int) []byte {
		p := res.Serving.Points[i]
		j := &res.Jobs[p.Job]
		sp := j.Spec.Serving
		b = append(appendSecs(b, p.Time.Seconds()), ',')
		b = append(append(b, j.Spec.ID...), ',')
		b = append(appendNum(b, p.Rate), ',')
		b = append(appendNum(b, p.Speed), ',')
		if p.Speed > 0 {
			b = appendNum(b, p.Rate*sp.Service.Seconds()/p.Speed)
		}
		b = append(b, ',')
		b = append(appendMs(b, p.P99), ',')
		b = append(appendMs(b, sp.SLA.Seconds()), '\n')
		return b
	})
}

// writeCSVRows writes a CSV file: the header cols, then rows 0..n-1, each
// appended to the buffer by row (which may append nothing to skip a row); the
// buffer goes to w whenever it passes 64 KiB.
func writeCSVRows(w io.Writer, cols []string, n int, row func(b []byte, i int) []byte) error {
	b := appendHeader(make([]byte, 0, 80<<10), cols)
	for i := range n {
		b = row(b, i)
		if len(b) > 1<<16 {
			if _, err := w.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	_, err := w.Write(b)
	return err
}

func appendHeader(b []byte, cols []string) []byte {
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c...)
	}
	return append(b, '\n')
}
