package scenarios

import (
	"errors"
	"fmt"
	"sort"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// engineConfig is the engine configuration of one policy's run: the one run
// uses and the one Preflight checks.
func (s *Scenario) engineConfig(pol sim.Policy, cluster *sim.Cluster, jobs []sim.JobSpec) (sim.Config, error) {
	cfg := s.Config()
	var err error
	if cfg.Speed, err = s.Speed(); err != nil {
		return cfg, err
	}
	if cfg.Speed, err = s.throughputSpeed(cfg.Speed); err != nil {
		return cfg, err
	}
	if cfg.Sharing, err = s.SharingConfig(); err != nil {
		return cfg, err
	}
	if cfg.Power, err = s.PowerConfig(cluster); err != nil {
		return cfg, err
	}
	cfg.Storage = s.StorageConfig()
	if cfg.Telemetry, err = s.TelemetryConfig(cluster); err != nil {
		return cfg, err
	}
	cfg.Cluster = cluster
	cfg.Jobs = jobs
	cfg.Policy = pol
	return cfg, nil
}

// Preflight checks that every policy starts on this cluster and workload (as
// built by Nodes and Jobs): what Run checks before it starts, then for each
// policy a fresh instance and an engine built exactly as Run builds them, and
// the policy's own start-up checks (policies.Preflighter) against that engine's
// view at time 0. It schedules nothing. All problems come back in one *Error,
// located at the policy's params field ("policies[1].params.partitions[0].nodes")
// or at the policy when no field is at fault. For a fill experiment (no engine)
// it runs RunFill's start-up checks (fgd.CheckFill) on the pods RunFill uses.
func (s *Scenario) Preflight(cluster *sim.Cluster, jobs []sim.JobSpec) error {
	if cluster.NumGPUs() == 0 {
		return s.fieldErr("cluster", errors.New("the cluster has no GPUs"))
	}
	if s.Experiment != nil {
		return s.preflightFill()
	}
	e := &Error{File: s.file}
	for i := range s.Policies {
		pol, err := s.Policy(i)
		if err != nil {
			return err
		}
		if l, ok := pol.(labeled); ok {
			pol = l.Policy
		}
		cfg, err := s.engineConfig(pol, cluster, jobs)
		if err != nil {
			return err
		}
		if cfg.Failures, err = s.FailureConfig(i, cluster); err != nil {
			return err
		}
		eng, err := sim.NewEngine(cfg)
		if err != nil {
			path := fmt.Sprintf("policies[%d]", i)
			e.Problems = append(e.Problems, Problem{Line: lineOf(s.root, path), Path: path, Msg: err.Error()})
			continue
		}
		if pf, ok := pol.(policies.Preflighter); ok {
			if err := pf.Preflight(eng.View()); err != nil {
				e.Problems = append(e.Problems, s.policyProblems(i, err)...)
			}
		}
	}
	if len(e.Problems) == 0 {
		return nil
	}
	sort.SliceStable(e.Problems, func(a, b int) bool { return e.Problems[a].Line < e.Problems[b].Line })
	return e
}
