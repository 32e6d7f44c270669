package sim

// PhysSample is a sample's state of the physical models (Result.Phys): the
// cluster's power draw and grid intensity (with Config.Power) and its failure
// state (with Config.Failures), in effect at the sample time. The report draws
// them over time (reports/physical.go).
type PhysSample struct {
	// PowerW is the cluster's GPU draw (idle GPUs included), watts.
	PowerW float64
	// CarbonGPerKWh is the grid intensity (the power.carbon series; 0
	// without one).
	CarbonGPerKWh float64
	// GPUsDown counts GPUs out of service (failures, maintenance).
	GPUsDown int64
	// Incidents and Interruptions count unexpected incidents and the job
	// interruptions they caused since t = 0; Planned* the maintenance ones.
	Incidents, Interruptions               int64
	PlannedIncidents, PlannedInterruptions int64
}

// samplePhys appends the physical state for the sample just taken (at
// e.nextSamp).
func (e *Engine) samplePhys() {
	var s PhysSample
	if ps := e.pow; ps != nil {
		s.PowerW = float64(ps.baseMW+ps.dynSum) / 1000
		if cs := ps.cfg.Carbon; cs != nil {
			s.CarbonGPerKWh = cs.At(e.nextSamp)
		}
	}
	if f := e.fail; f != nil {
		s.GPUsDown = f.downGPUs
		s.Incidents, s.Interruptions = f.stats.Incidents, f.stats.Interruptions
		s.PlannedIncidents, s.PlannedInterruptions = f.stats.PlannedIncidents, f.stats.PlannedInterrupt
	}
	e.phys = append(e.phys, s)
}
