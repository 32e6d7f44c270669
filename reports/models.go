package reports

import (
	"strconv"
)

// modelColumn is one column of the report's "Models" table: a figure from one
// of the optional summary blocks (failures, telemetry, power, checkpoint I/O,
// serving, job dependencies). get returns ok = false when the run has no such
// block.
type modelColumn struct {
	Title string
	get   func(s *Summary) (float64, bool)
	prec  int // decimals
}

// modelColumns lists every column the table can show, grouped by model.
var modelColumns = []modelColumn{
	{"failures: interruptions", func(s *Summary) (float64, bool) {
		if s.Failures == nil {
			return 0, false
		}
		return float64(s.Failures.Interruptions), true
	}, 0},
	{"failures: lost GPU-h", func(s *Summary) (float64, bool) {
		if s.Failures == nil {
			return 0, false
		}
		return s.Failures.LostGPUHours, true
	}, 1},
	{"failures: goodput", func(s *Summary) (float64, bool) {
		if s.Failures == nil {
			return 0, false
		}
		return s.Failures.Goodput, true
	}, 3},
	{"stragglers: lost GPU-h", func(s *Summary) (float64, bool) {
		if s.Telemetry == nil {
			return 0, false
		}
		return s.Telemetry.LostGPUHours, true
	}, 1},
	{"stragglers: jobs slowed", func(s *Summary) (float64, bool) {
		if s.Telemetry == nil {
			return 0, false
		}
		return float64(s.Telemetry.JobsSlowed), true
	}, 0},
	{"energy kWh", func(s *Summary) (float64, bool) {
		if s.Power == nil {
			return 0, false
		}
		return s.Power.EnergyKWh, true
	}, 1},
	{"carbon kg CO2e", func(s *Summary) (float64, bool) {
		if s.Power == nil || s.Power.CarbonKg == nil {
			return 0, false
		}
		return *s.Power.CarbonKg, true
	}, 1},
	{"peak power kW", func(s *Summary) (float64, bool) {
		if s.Power == nil {
			return 0, false
		}
		return s.Power.PeakPowerW / 1000, true
	}, 1},
	{"checkpoint save h", func(s *Summary) (float64, bool) {
		if s.CheckpointIO == nil {
			return 0, false
		}
		return s.CheckpointIO.SaveHours, true
	}, 2},
	{"save slowdown (mean)", func(s *Summary) (float64, bool) {
		if s.CheckpointIO == nil {
			return 0, false
		}
		return s.CheckpointIO.MeanSlowdown, true
	}, 2},
	{"serving: SLA violation h", func(s *Summary) (float64, bool) {
		if s.Serving == nil {
			return 0, false
		}
		return s.Serving.ViolationHours, true
	}, 2},
	{"serving: training GPU-h beside", func(s *Summary) (float64, bool) {
		if s.Serving == nil {
			return 0, false
		}
		return s.Serving.ColocatedTrainingGPUHours, true
	}, 1},
	{"workflows: mean stretch", func(s *Summary) (float64, bool) {
		if s.DAG == nil {
			return 0, false
		}
		return s.DAG.Stretch.Mean, true
	}, 2},
	{"duration prediction MAPE %", func(s *Summary) (float64, bool) {
		if s.DAG == nil {
			return 0, false
		}
		return s.DAG.PredictionMAPE, true
	}, 1},
}

// ModelsTable is the report's "Models" table: one row per run (label first),
// one column per figure of the optional models that at least one run has;
// a run without that model shows "–". It is empty (nil header) when no run
// has any optional model, so plain runs' reports do not change.
func (rep *Report) ModelsTable() (header []string, rows [][]string) {
	var cols []modelColumn
	for _, c := range modelColumns {
		for _, r := range rep.Runs {
			if _, ok := c.get(r.Summary); ok {
				cols = append(cols, c)
				break
			}
		}
	}
	if len(cols) == 0 {
		return nil, nil
	}
	header = []string{"run"}
	for _, c := range cols {
		header = append(header, c.Title)
	}
	for i, r := range rep.Runs {
		row := []string{rep.Labels[i]}
		for _, c := range cols {
			if x, ok := c.get(r.Summary); ok {
				row = append(row, strconv.FormatFloat(x, 'f', c.prec, 64))
			} else {
				row = append(row, "–")
			}
		}
		rows = append(rows, row)
	}
	return header, rows
}
