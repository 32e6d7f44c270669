package scenarios

import (
	"fmt"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
)

func paramsNode(p *PolicySpec) *yaml.Node {
	if p.Params.Kind == 0 {
		return nil
	}
	return &p.Params
}

// Nodes builds the cluster's node list: pools in order (node names
// "<pool>-<i>"), or the imported node list; fabric positions are assigned in that
// order. A federated scenario's are every member cluster's (federationNodes).
func (s *Scenario) Nodes() ([]sim.NodeSpec, error) {
	if s.Federation != nil {
		return s.federationNodes()
	}
	c := &s.Cluster
	var nodes []sim.NodeSpec
	if c.From != nil {
		ns, err := c.From.Load(s.dir)
		if err != nil {
			return nil, s.fieldErr("cluster.from", err)
		}
		if err := checkNodeCount(ns); err != nil {
			return nil, s.fieldErr("cluster.from", err)
		}
		nodes = ns
		for i := range nodes {
			nodes[i].NVLinkDomain = -1
		}
	} else {
		custom := map[string]NodeTemplate{}
		for _, t := range c.Templates {
			custom[t.Name] = t
		}
		domain := int32(0)
		for _, p := range c.Pools {
			t, err := s.poolTemplate(p, custom)
			if err != nil {
				return nil, err
			}
			for i := 0; i < p.Nodes; i++ {
				n := t.nodeSpec(fmt.Sprintf("%s-%d", p.Name, i), p.Name)
				poolSharing(p, &n)
				if t.NVLinkNodes > 1 {
					n.NVLinkDomain = 1 + domain + int32(i)/t.NVLinkNodes
				}
				nodes = append(nodes, n)
			}
			if t.NVLinkNodes > 1 {
				domain += int32((p.Nodes + int(t.NVLinkNodes) - 1) / int(t.NVLinkNodes))
			}
		}
	}
	if c.From != nil && c.From.NodesPerLeaf > 0 {
		return nodes, nil // the node list's own grouping (cluster.from.nodesPerLeaf)
	}
	for i := range nodes {
		leaf := i / c.Fabric.NodesPerLeaf
		nodes[i].Leaf = int32(leaf)
		nodes[i].Spine = 0
		if c.Fabric.LeavesPerSpine > 0 {
			nodes[i].Spine = int32(leaf / c.Fabric.LeavesPerSpine)
		}
	}
	return nodes, nil
}

func (s *Scenario) fieldErr(path string, err error) error {
	return &Error{File: s.file, Problems: []Problem{{Line: lineOf(s.root, path), Path: path, Msg: err.Error()}}}
}

// Jobs produces the workload for a cluster: the synthetic generator (seeded from
// the scenario seed) or the trace (with its filters and transforms). Every job is
// checked against the empty cluster: a job that can never run is an error.
func (s *Scenario) Jobs(c *sim.Cluster) ([]sim.JobSpec, *traces.ImportReport, error) {
	if err := s.enableMIG(c); err != nil {
		return nil, nil, err
	}
	var jobs []sim.JobSpec
	var rep *traces.ImportReport
	var path string
	switch {
	case s.Workload.Synthetic != nil:
		path = "workload.synthetic"
		var err error
		jobs, err = s.Workload.Synthetic.Generate(s.SeedValue(), c.NumGPUs(), c.MaxGPUsPerNode())
		if err != nil {
			return nil, nil, s.fieldErr(path, err)
		}
	case s.Workload.Trace != nil:
		path = "workload.trace"
		tt, ref, err := s.throughputs()
		if err != nil {
			return nil, nil, err
		}
		s.Workload.Trace.Options.Throughputs, s.Workload.Trace.Options.ThroughputRef = tt, ref
		s.Workload.Trace.Options.NodeGPUs = c.MaxGPUsPerNode()
		jobs, rep, err = s.Workload.Trace.LoadOn(s.dir, s.SeedValue(), c.NumGPUs())
		if err != nil {
			return nil, nil, s.fieldErr(path, err)
		}
	}
	jobs = s.applyWorkflows(jobs)
	if len(jobs) == 0 {
		return nil, rep, s.fieldErr(path, fmt.Errorf("the workload has no jobs"))
	}
	if err := checkDeps(jobs); err != nil {
		return nil, rep, s.fieldErr(path, err)
	}
	if err := s.applySharingDefaults(jobs); err != nil {
		return nil, rep, err
	}
	if err := s.applyServing(jobs); err != nil {
		return nil, rep, err
	}
	var bad []string
	for i := range jobs {
		if err := c.Feasible(&jobs[i]); err != nil {
			if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("job %q %v", jobs[i].ID, err))
			} else if len(bad) == 5 {
				bad = append(bad, "...")
			}
		}
	}
	if len(bad) > 0 {
		return nil, rep, s.fieldErr(path, fmt.Errorf("jobs that can never run on this cluster:\n  %s", strings.Join(bad, "\n  ")))
	}
	return jobs, rep, nil
}

// Policy builds the policy of spec i (a fresh instance per run).
func (s *Scenario) Policy(i int) (sim.Policy, error) {
	p := &s.Policies[i]
	pol, err := policies.NewWithEnv(p.Name, paramsNode(p), s.env())
	if err != nil {
		return nil, &Error{File: s.file, Problems: s.policyProblems(i, err)}
	}
	if p.Label != "" && p.Label != p.Name {
		return labeled{pol, p.Label}, nil
	}
	return pol, nil
}

// labeled renames a policy (several instances of one policy with other params).
type labeled struct {
	sim.Policy
	label string
}

func (l labeled) Name() string { return l.label }

// Observe forwards to the wrapped policy when it observes.
func (l labeled) Observe(v *sim.View, e sim.Event) {
	if o, ok := l.Policy.(sim.Observer); ok {
		o.Observe(v, e)
	}
}

// Config returns the engine settings of the scenario (without cluster, jobs, policy).
func (s *Scenario) Config() sim.Config {
	cfg := sim.Config{
		Seed:               s.SeedValue(),
		Oracle:             s.Oracle,
		EnforceWalltime:    *s.Simulation.EnforceWalltime,
		CheckpointInterval: sim.Duration(s.Simulation.CheckpointInterval),
		CheckpointSave:     sim.Duration(s.Simulation.CheckpointSaveCost),
		CheckpointRestore:  sim.Duration(s.Simulation.CheckpointRestoreCost),
		CheckpointOnSignal: s.Simulation.CheckpointOnSignal,
		PreemptMinRuntime:  sim.Duration(s.Simulation.PreemptMinRuntime),
		PreemptAntiChurn:   sim.Duration(s.Simulation.PreemptAntiChurn),
		SampleInterval:     sim.Duration(*s.Simulation.SampleInterval),
		Horizon:            sim.Time(s.Simulation.Horizon),
	}
	if d := s.Simulation.RescaleDelay; d != nil {
		cfg.RescaleDelay = (*sim.Duration)(d)
	}
	return cfg
}

// Dir is the directory relative paths resolve against.
func (s *Scenario) Dir() string { return s.dir }

// Resolve makes p relative to the scenario's directory (absolute paths unchanged).
func (s *Scenario) Resolve(p string) string {
	if filepath.IsAbs(p) || s.dir == "" {
		return p
	}
	return filepath.Join(s.dir, p)
}

// Warnings builds each policy once and collects what its configuration asks for
// but the simulator does not model ("policies[i] (name): ...").
func (s *Scenario) Warnings() []string {
	var out []string
	for i := range s.Policies {
		pol, err := s.Policy(i)
		if err != nil {
			continue
		}
		if l, ok := pol.(labeled); ok {
			pol = l.Policy
		}
		if w, ok := pol.(policies.Warner); ok {
			for _, m := range w.Warnings() {
				out = append(out, fmt.Sprintf("policies[%d] (%s): %s", i, s.Policies[i].DisplayName(), m))
			}
		}
	}
	return out
}
