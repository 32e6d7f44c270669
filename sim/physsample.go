package sim

// PhysSample is a sample's state of the physical models (Sample.Phys): the
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

func (e *Engine) samplePhys(s *Sample) {
	if ps := e.pow; ps != nil {
		s.Phys.PowerW = float64(ps.baseMW+ps.dynSum) / 1000
		if cs := ps.cfg.Carbon; cs != nil {
			s.Phys.CarbonGPerKWh = cs.At(s.Time)
		}
	}
	if f := e.fail; f != nil {
		s.Phys.GPUsDown = f.downGPUs
		s.Phys.Incidents, s.Phys.Interruptions = f.stats.Incidents, f.stats.Interruptions
		s.Phys.PlannedIncidents, s.Phys.PlannedInterruptions = f.stats.PlannedIncidents, f.stats.PlannedInterrupt
	}
}
