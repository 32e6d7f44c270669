package reports

import (
	"math"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/gpusim/gpusim/sim"
)

// Power and carbon outputs (docs/power.md, docs/outputs.md). They exist only in
// runs with a power: block (sim.Result.Power != nil): without it every file is
// byte-identical to a build without the feature.

// PowerJobColumns are the extra columns of jobs.csv / jobs.parquet in runs
// with power accounting, after JobColumns.
var PowerJobColumns = []string{"energy_kwh", "carbon_kg", "peak_power_w"}

// JobPower is a job's power metrics (JobRow.Power; nil without power).
type JobPower struct {
	EnergyKWh  float64 // energy attributed to the job over all its runs
	CarbonKg   float64 // its emissions (NaN without a carbon series)
	PeakPowerW float64 // its highest attributed draw; 0 if it never ran
}

// PowerSummary is summary.json's "power" block.
type PowerSummary struct {
	// EnergyKWh is the whole cluster's GPU energy over [0, end], idle GPUs
	// included; JobsEnergyKWh the part attributed to jobs.
	EnergyKWh     float64 `json:"energy_kwh"`
	JobsEnergyKWh float64 `json:"jobs_energy_kwh"`
	// CarbonKg and JobsCarbonKg are the same in kg CO2e (absent without a
	// carbon series); CarbonIntensity is CarbonKg/EnergyKWh in g/kWh.
	CarbonKg        *float64 `json:"carbon_kg,omitempty"`
	JobsCarbonKg    *float64 `json:"jobs_carbon_kg,omitempty"`
	CarbonIntensity *float64 `json:"carbon_intensity_g_per_kwh,omitempty"`
	// PeakPowerW is the highest cluster draw; IdlePowerW the draw with nothing
	// running; MeanPowerW the energy over [0, end] divided by end.
	PeakPowerW float64 `json:"peak_power_w"`
	IdlePowerW float64 `json:"idle_power_w"`
	MeanPowerW float64 `json:"mean_power_w"`
	// CapW and CapMode describe the power cap (absent without one);
	// ThrottledStarts counts starts given less than full power.
	CapW            float64 `json:"cap_w,omitempty"`
	CapMode         string  `json:"cap_mode,omitempty"`
	ThrottledStarts int64   `json:"throttled_starts"`
	// PerQueue sums the jobs' energy and carbon per queue ("default" for jobs
	// without one), with the queue's highest attributed draw.
	PerQueue map[string]QueuePower `json:"per_queue"`
}

// QueuePower is one queue's entry of PowerSummary.PerQueue.
type QueuePower struct {
	EnergyKWh  float64  `json:"energy_kwh"`
	CarbonKg   *float64 `json:"carbon_kg,omitempty"`
	PeakPowerW float64  `json:"peak_power_w"`
}

// jPerKWh is joules per kWh.
const jPerKWh = 3.6e6

func jobPower(ps *sim.PowerStats, r int) *JobPower {
	jp := &JobPower{EnergyKWh: roundTo(ps.JobEnergyJ[r]/jPerKWh, 9), CarbonKg: math.NaN(), PeakPowerW: roundTo(ps.JobPeakW[r], 3)}
	if ps.HasCarbon {
		jp.CarbonKg = roundTo(ps.JobCarbonG[r]/1000, 9)
	}
	return jp
}

func roundTo(x float64, dec int) float64 {
	f := math.Pow10(dec)
	return math.Round(x*f) / f
}

func summarizePower(res *sim.Result, s *Summary) {
	ps := res.Power
	if ps == nil {
		return
	}
	opt := func(x float64) *float64 {
		if !ps.HasCarbon {
			return nil
		}
		v := round(x)
		return &v
	}
	var jobsE, jobsC float64
	type acc struct{ e, c float64 }
	per := map[string]*acc{}
	for i := range res.Jobs {
		q := QueueName(res.Jobs[i].Spec.Queue)
		a := per[q]
		if a == nil {
			a = &acc{}
			per[q] = a
		}
		a.e += ps.JobEnergyJ[i]
		a.c += ps.JobCarbonG[i]
		jobsE += ps.JobEnergyJ[i]
		jobsC += ps.JobCarbonG[i]
	}
	out := &PowerSummary{EnergyKWh: round(ps.EnergyJ / jPerKWh), JobsEnergyKWh: round(jobsE / jPerKWh),
		CarbonKg: opt(ps.CarbonG / 1000), JobsCarbonKg: opt(jobsC / 1000),
		PeakPowerW: round(ps.PeakW), IdlePowerW: round(ps.IdleW), ThrottledStarts: ps.Throttled,
		PerQueue: map[string]QueuePower{}}
	if ps.HasCarbon && ps.EnergyJ > 0 {
		out.CarbonIntensity = opt(ps.CarbonG / (ps.EnergyJ / jPerKWh))
	}
	if end := res.End.Seconds(); end > 0 {
		out.MeanPowerW = round(ps.EnergyJ / end)
	}
	if ps.CapW > 0 {
		out.CapW, out.CapMode = ps.CapW, ps.CapMode.String()
	}
	peak := map[string]float64{}
	for k, q := range ps.Queues {
		n := QueueName(q)
		peak[n] = max(peak[n], ps.QueuePeakW[k])
	}
	for q, a := range per {
		out.PerQueue[q] = QueuePower{EnergyKWh: round(a.e / jPerKWh), CarbonKg: opt(a.c / 1000), PeakPowerW: round(peak[q])}
	}
	s.Power = out
}

func appendJobPowerCSV(b []byte, r *JobRow) []byte {
	if r.Power == nil {
		return b
	}
	for _, x := range [...]float64{r.Power.EnergyKWh, r.Power.CarbonKg, r.Power.PeakPowerW} {
		b = append(b, ',')
		if !math.IsNaN(x) {
			b = strconv.AppendFloat(b, x, 'f', -1, 64)
		}
	}
	return b
}

// jobsPowerSchema is jobs.parquet's schema with power accounting.
var jobsPowerSchema = arrow.NewSchema(append(jobsSchema.Fields(),
	arrow.Field{Name: "energy_kwh", Type: arrow.PrimitiveTypes.Float64},
	arrow.Field{Name: "carbon_kg", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	arrow.Field{Name: "peak_power_w", Type: arrow.PrimitiveTypes.Float64},
), nil)

func appendJobPowerParquet(b *array.RecordBuilder, r *JobRow) {
	if r.Power == nil {
		return
	}
	n := r.extraField(extraPower)
	b.Field(n).(*array.Float64Builder).Append(r.Power.EnergyKWh)
	appendOptFloat(b.Field(n+1).(*array.Float64Builder), r.Power.CarbonKg)
	b.Field(n + 2).(*array.Float64Builder).Append(r.Power.PeakPowerW)
}

// powerJobColumns append the extra jobs.parquet columns of runs with power
// (jobsPowerSchema after jobsSchema).
var powerJobColumns = [...]func(b array.Builder, rows []JobRow){
	f64Col(func(r *JobRow) float64 { return r.Power.EnergyKWh }),
	optF64Col(func(r *JobRow) float64 { return r.Power.CarbonKg }),
	f64Col(func(r *JobRow) float64 { return r.Power.PeakPowerW }),
}
