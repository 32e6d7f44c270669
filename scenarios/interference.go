package scenarios

import (
	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/sim"
)

// tableInterference adapts calibrate.Table (the measured interference matrix
// with its fallback model; docs/sharing.md) to sim.Interference. One adapter
// serves one engine (its solo scratch buffer is not shared); the Table itself is
// immutable and safe for concurrent use.
type tableInterference struct {
	t    *calibrate.Table
	solo []float64
}

// newTableInterference builds the Table from the matrices (none: every
// co-location uses the fallback) with the scenario's fallback settings.
func newTableInterference(spec InterferenceSpec, ms ...*calibrate.InterferenceMatrix) (*tableInterference, error) {
	t, err := calibrate.NewTable(calibrate.FallbackModel{Default: spec.Default, UseUtilisation: spec.UseUtilisation, SwitchOverhead: spec.SwitchOverhead}, ms...)
	if err != nil {
		return nil, err
	}
	return &tableInterference{t: t}, nil
}

// WorkloadID implements sim.Interference.
func (a *tableInterference) WorkloadID(name string) (int32, bool) { return a.t.WorkloadID(name) }

// Factors implements sim.Interference. The engine's unknown solo utilisation is
// 0; the Table's is negative.
func (a *tableInterference) Factors(gpuModel string, mode sim.SharingMode, ws []int32, solo []float64, out []float64) bool {
	if cap(a.solo) < len(solo) {
		a.solo = make([]float64, len(solo), max(len(solo), 8))
	}
	s := a.solo[:len(solo)]
	for i, u := range solo {
		if u > 0 {
			s[i] = u
		} else {
			s[i] = -1
		}
	}
	return a.t.Factors(gpuModel, mode.String(), ws, s, out)
}

func init() {
	loadInterference = func(path string, spec InterferenceSpec) (sim.Interference, error) {
		m, err := calibrate.LoadInterference(path)
		if err != nil {
			return nil, err
		}
		return newTableInterference(spec, m)
	}
}
