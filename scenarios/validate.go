package scenarios

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement/fgd"
	"github.com/gpusim/gpusim/sim"
)

func (s *Scenario) setDefaults() {
	if s.Seed == nil {
		v := uint64(DefaultSeed)
		s.Seed = &v
	}
	if s.Simulation.SampleInterval == nil {
		d := policies.Dur(DefaultSampleInterval)
		s.Simulation.SampleInterval = &d
	}
	if s.Simulation.EnforceWalltime == nil {
		t := true
		s.Simulation.EnforceWalltime = &t
	}
	if s.Cluster.Fabric.NodesPerLeaf == 0 {
		s.Cluster.Fabric.NodesPerLeaf = DefaultNodesPerLeaf
	}
	if s.Cluster.Fabric.Oversubscription == 0 {
		s.Cluster.Fabric.Oversubscription = 1
	}
	if s.Workload.Synthetic != nil {
		s.Workload.Synthetic.SetDefaults()
	}
}

// validate checks every field and returns all problems (paths from the root).
func (s *Scenario) validate() sim.FieldErrors {
	var fe sim.FieldErrors
	if s.APIVersion != APIVersion {
		fe.Add("apiVersion", "must be %q (got %q)", APIVersion, s.APIVersion)
	}
	if s.Kind != "Scenario" {
		fe.Add("kind", "must be \"Scenario\" (got %q)", s.Kind)
	}
	if s.Simulation.SampleInterval != nil && *s.Simulation.SampleInterval != 0 && *s.Simulation.SampleInterval < policies.Dur(sim.Second) {
		fe.Add("simulation.sampleInterval", "must be 0 (off) or at least 1s")
	}
	if d := s.Simulation.RescaleDelay; d != nil && *d < 0 {
		fe.Add("simulation.rescaleDelay", "must be >= 0")
	}
	if sm := &s.Simulation; sm.CheckpointSaveCost > 0 && sm.CheckpointInterval == 0 && !sm.CheckpointOnSignal && !s.youngDalyAnywhere() {
		fe.Add("simulation.checkpointSaveCost", "has no effect without checkpointInterval or checkpointOnSignal")
	}
	if sb := s.Showback; sb != nil {
		if sb.PricePerGPUHour < 0 {
			fe.Add("showback.pricePerGPUHour", "must not be negative")
		}
		for _, m := range slices.Sorted(maps.Keys(sb.PerModel)) {
			if sb.PerModel[m] < 0 {
				fe.Add("showback.perModel."+m, "must not be negative")
			}
		}
		if sb.Currency == "" {
			sb.Currency = "USD"
		}
	}
	// Cluster
	c := &s.Cluster
	tmpl := map[string]NodeTemplate{}
	for i, t := range c.Templates {
		p := fmt.Sprintf("cluster.templates[%d]", i)
		if t.Name == "" {
			fe.Add(p+".name", "required")
		} else if _, dup := tmpl[t.Name]; dup {
			fe.Add(p+".name", "duplicate template %q", t.Name)
		}
		checkTemplate(&fe, p, t)
		tmpl[t.Name] = t
	}
	switch {
	case len(c.Pools) == 0 && c.From == nil:
		fe.Add("cluster", "needs pools or from (an empty cluster cannot run jobs)")
	case len(c.Pools) > 0 && c.From != nil:
		fe.Add("cluster.from", "give either pools or from, not both")
	}
	if c.From != nil {
		fe = append(fe, c.From.Validate().Prefix("cluster.from")...)
	}
	names := map[string]bool{}
	for i, p := range c.Pools {
		path := fmt.Sprintf("cluster.pools[%d]", i)
		if p.Name == "" {
			fe.Add(path+".name", "required")
		} else if names[p.Name] {
			fe.Add(path+".name", "duplicate pool %q", p.Name)
		}
		names[p.Name] = true
		if p.Nodes < 1 {
			fe.Add(path+".nodes", "must be >= 1")
		} else if p.Nodes > MaxNodes {
			fe.Add(path+".nodes", "must be <= %d (the cluster size limit)", MaxNodes)
		}
		if _, err := s.poolTemplate(p, tmpl); err != nil {
			fe.Add(path+".template", "%v", err)
		} else {
			t, _ := s.poolTemplate(p, tmpl)
			checkTemplate(&fe, path, t)
		}
	}
	checkClusterSize(&fe, c.Pools, func(p PoolSpec) (int32, bool) {
		t, err := s.poolTemplate(p, tmpl)
		return t.GPUs, err == nil
	})
	if c.Fabric.NodesPerLeaf < 1 {
		fe.Add("cluster.fabric.nodesPerLeaf", "must be >= 1")
	}
	if c.Fabric.LeavesPerSpine < 0 {
		fe.Add("cluster.fabric.leavesPerSpine", "must be >= 0")
	}
	if c.Fabric.Oversubscription < 1 || math.IsInf(c.Fabric.Oversubscription, 0) || math.IsNaN(c.Fabric.Oversubscription) {
		fe.Add("cluster.fabric.oversubscription", "must be >= 1")
	}
	// Workload
	w := &s.Workload
	switch {
	case w.Synthetic == nil && w.Trace == nil:
		fe.Add("workload", "needs synthetic or trace")
	case w.Synthetic != nil && w.Trace != nil:
		fe.Add("workload.trace", "give either synthetic or trace, not both")
	}
	if w.Synthetic != nil {
		fe = append(fe, w.Synthetic.Validate().Prefix("workload.synthetic")...)
	}
	if w.Trace != nil {
		fe = append(fe, w.Trace.Validate().Prefix("workload.trace")...)
	}
	fe = append(fe, s.validateFailures()...)
	fe = append(fe, s.validateStorage()...)
	fe = append(fe, s.validateElastic()...)
	for _, b := range s.validateExperiment() {
		i := strings.IndexByte(b, '|')
		fe.Add(b[:i], "%s", b[i+1:])
	}
	// Policies
	if len(s.Policies) == 0 {
		fe.Add("policies", "at least one policy is required (see 'gpusim policies')")
	}
	labels := map[string]bool{}
	for i := range s.Policies {
		p := &s.Policies[i]
		path := fmt.Sprintf("policies[%d]", i)
		if p.Name == "" {
			fe.Add(path+".name", "required")
			continue
		}
		if s.Experiment != nil {
			if p.Params.Kind != 0 && !(p.Params.Kind == yaml.ScalarNode && p.Params.Tag == "!!null") {
				fe.Add(path+".params", "the FGD fill policies take no parameters")
			}
			if !fillPolicy(p.Name) {
				fe.Add(path+".name", "a fill experiment takes the FGD placement policies %v, not %q", fgd.Policies(), p.Name)
			}
			if labels[p.DisplayName()] {
				fe.Add(path+".label", "duplicate policy label %q", p.DisplayName())
			}
			labels[p.DisplayName()] = true
			continue
		}
		if !policies.Known(p.Name) {
			fe.Add(path+".name", "unknown policy %q (see 'gpusim policies')", p.Name)
			continue
		}
		if labels[p.DisplayName()] {
			fe.Add(path+".label", "duplicate policy label %q (set label: to tell them apart)", p.DisplayName())
		}
		labels[p.DisplayName()] = true
		if !validLabel(p.DisplayName()) {
			fe.Add(path+".label", "must use only letters, digits, '.', '_' and '-' (it names an output directory)")
		}
	}
	return fe
}

func validLabel(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func checkTemplate(fe *sim.FieldErrors, path string, t NodeTemplate) {
	if t.GPUs < 0 {
		fe.Add(path+".gpus", "must be >= 0")
	}
	if t.GPUs > 1024 {
		fe.Add(path+".gpus", "must be <= 1024")
	}
	if t.GPUs > 0 && t.GPUModel == "" {
		fe.Add(path+".gpuModel", "required when gpus > 0")
	}
	if t.CPUMilli < 0 {
		fe.Add(path+".cpuMilli", "must be >= 0")
	}
	if t.MemoryMiB < 0 {
		fe.Add(path+".memoryMiB", "must be >= 0")
	}
	if t.GPUMemoryMiB < 0 {
		fe.Add(path+".gpuMemoryMiB", "must be >= 0")
	}
	for name, v := range map[string]int32{"nvlinkSize": t.NVLinkSize, "pcieSize": t.PCIeSize, "socketSize": t.SocketSize, "nvlinkNodes": t.NVLinkNodes} {
		if v < 0 {
			fe.Add(path+"."+name, "must be >= 0")
		}
	}
}

// poolTemplate resolves a pool's template with its overrides.
func (s *Scenario) poolTemplate(p PoolSpec, custom map[string]NodeTemplate) (NodeTemplate, error) {
	var t NodeTemplate
	switch {
	case p.Template == "" || p.Template == "custom":
		if p.GPUs == nil {
			return t, fmt.Errorf("no template given: set template (one of %v) or gpus/gpuModel/cpuMilli/memoryMiB", TemplateNames())
		}
	default:
		var ok bool
		if t, ok = custom[p.Template]; !ok {
			if t, ok = builtinTemplates[p.Template]; !ok {
				return t, fmt.Errorf("unknown template %q (built-in: %v; or define it under cluster.templates)", p.Template, TemplateNames())
			}
		}
	}
	if p.GPUModel != "" {
		t.GPUModel = p.GPUModel
	}
	set32 := func(dst *int32, v *int32) {
		if v != nil {
			*dst = *v
		}
	}
	set64 := func(dst *int64, v *int64) {
		if v != nil {
			*dst = *v
		}
	}
	set32(&t.GPUs, p.GPUs)
	set64(&t.GPUMemoryMiB, p.GPUMemoryMiB)
	set64(&t.CPUMilli, p.CPUMilli)
	set64(&t.MemoryMiB, p.MemoryMiB)
	set32(&t.NVLinkSize, p.NVLinkSize)
	set32(&t.PCIeSize, p.PCIeSize)
	set32(&t.SocketSize, p.SocketSize)
	return t, nil
}
