package scenarios

import (
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/workloads"
)

// SpeedModelSpec is the optional scenario block `speedModel:` that turns on the
// placement-dependent speed model (workloads.SpeedModel) as the engine's ground
// truth. Without the block, or with enabled: false, every job runs at speed 1.
// The other fields are workloads.SpeedConfig (referenceModel, throughput, links,
// classes; see docs/workloads.md); entries given replace the defaults of the same
// key. Unless links.spine is given, the spine link is derived from the fabric:
// links.leaf bandwidth / cluster.fabric.oversubscription (default 1:1), with the
// default spine latency.
type SpeedModelSpec struct {
	Enabled               bool `yaml:"enabled"`
	workloads.SpeedConfig `yaml:",inline"`
}

// validateSpeed checks the speedModel block (paths from the scenario root).
func (s *Scenario) validateSpeed() sim.FieldErrors {
	if s.SpeedModel == nil {
		return nil
	}
	cfg := s.SpeedModel.SpeedConfig
	cfg = workloads.SpeedConfig{ReferenceModel: cfg.ReferenceModel, Throughput: cfg.Throughput, Links: cfg.Links, Classes: cfg.Classes}
	cfg.SetDefaults()
	return cfg.Validate().Prefix("speedModel")
}

// Speed returns the scenario's speed model, or nil when the block is absent or
// disabled (every job then runs at speed 1). A SpeedModel holds no mutable state,
// so one instance serves every policy run.
func (s *Scenario) Speed() (sim.SpeedModel, error) {
	if s.SpeedModel == nil || !s.SpeedModel.Enabled {
		return nil, nil
	}
	cfg := s.SpeedModel.SpeedConfig
	if _, ok := cfg.Links["spine"]; !ok {
		// The fabric's leaf-to-spine oversubscription sets the per-GPU bandwidth
		// of crossing the spine: the leaf link's divided by the ratio.
		links := make(map[string]workloads.Link, len(cfg.Links)+1)
		for k, v := range cfg.Links {
			links[k] = v
		}
		leaf, ok := links["leaf"]
		if !ok {
			leaf = workloads.DefaultLinks()["leaf"]
		}
		links["spine"] = workloads.Link{GBps: leaf.GBps / max(s.Cluster.Fabric.Oversubscription, 1), LatencyUS: workloads.DefaultLinks()["spine"].LatencyUS}
		cfg.Links = links
	}
	m, err := workloads.NewSpeedModel(cfg)
	if err != nil {
		return nil, s.fieldErr("speedModel", err)
	}
	return m, nil
}
