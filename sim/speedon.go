package sim

// SpeedOn returns the scenario speed model's factor (Config.Speed) for job j
// if it held gpus (one replica per GPU, on the GPUs' nodes): what a
// heterogeneity-aware policy (Sia) reads as a job's relative throughput on a
// GPU type. It is 1 without a speed model. j itself is not changed.
func (v *View) SpeedOn(j *Job, gpus []GPUID) float64 {
	m := v.e.cfg.Speed
	if m == nil || len(gpus) == 0 {
		return 1
	}
	c := v.e.cluster
	p := *j
	p.GPUs = gpus
	p.Nodes = make([]NodeID, len(gpus))
	for i, g := range gpus {
		p.Nodes[i] = c.GPUNode(g)
	}
	return m.Speed(c, &p)
}
