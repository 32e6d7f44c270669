package scenarios

import (
	"fmt"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
)

// validateElastic refuses elastic gangs (docs/elastic.md) together with the
// models the engine does not combine them with (sim.ErrElastic), at the
// field that makes jobs elastic.
func (s *Scenario) validateElastic() sim.FieldErrors {
	var at []string
	if w := s.Workload.Synthetic; w != nil {
		for i, c := range w.Classes {
			if c.Elastic != nil {
				at = append(at, fmt.Sprintf("workload.synthetic.classes[%d].elastic", i))
			}
		}
	}
	if t := s.Workload.Trace; t != nil && (t.Format == traces.FormatPolluxElastic || t.Format == traces.FormatPolluxAdaptive) {
		at = append(at, "workload.trace.format")
	}
	var fe sim.FieldErrors
	if len(at) == 0 {
		return fe
	}
	var with string
	switch {
	case s.Interference != nil:
		with = "interference (device-level sharing)"
	case s.Storage != nil:
		with = "storage (checkpoint I/O)"
	case s.Telemetry != nil:
		with = "telemetry"
	case s.Failures != nil:
		with = "failures"
	case s.Power != nil:
		with = "power"
	default:
		return fe
	}
	for _, p := range at {
		fe.Add(p, "elastic jobs are not supported together with %s (docs/elastic.md)", with)
	}
	return fe
}
