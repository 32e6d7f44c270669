package scenarios

import (
	"fmt"
	"strings"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
	"github.com/gpusim/gpusim/workloads"
)

// ThroughputsSpec is the scenario block `throughputs:`: a per-(job type, GPU
// type) throughput table in Gavel's format (docs/gavel.md). With it,
//
//   - a job whose workload the table knows runs on each GPU type at that
//     type's throughput relative to the reference type (the engine's speed
//     model, multiplied into speedModel's when both are set);
//   - the gavel trace format turns steps into reference-GPU time;
//   - heterogeneity-aware policies (gavel) read the table.
type ThroughputsSpec struct {
	// Path is the table (Gavel's simulation_throughputs.json format), relative
	// to the scenario; empty = the built-in copy of Gavel's own file.
	Path string `yaml:"path"`
	// Reference is the GPU type the jobs' durations are measured on (default
	// v100, Gavel's reference type).
	Reference string `yaml:"reference"`
}

// throughputs loads the table once (nil, -1 when the scenario has no block).
func (s *Scenario) throughputs() (*workloads.ThroughputTable, int, error) {
	if s.Throughputs == nil {
		return nil, -1, nil
	}
	if s.tput != nil {
		return s.tput, s.tputRef, nil
	}
	path := s.Throughputs.Path
	if path != "" {
		path = traces.ResolvePath(s.dir, path)
	}
	t, err := workloads.LoadThroughputTable(path)
	if err != nil {
		return nil, -1, s.fieldErr("throughputs.path", err)
	}
	ref := s.Throughputs.Reference
	if ref == "" {
		ref = "v100"
	}
	ri := -1
	for i, g := range t.GPUTypes() {
		if strings.EqualFold(g, ref) {
			ri = i
		}
	}
	if ri < 0 {
		return nil, -1, s.fieldErr("throughputs.reference", fmt.Errorf("GPU type %q is not in the table (it has %s)", ref, strings.Join(t.GPUTypes(), ", ")))
	}
	s.tput, s.tputRef = t, ri
	return t, ri, nil
}

// throughputSpeed wraps next in the table's speed model (next when the scenario
// has no throughputs block).
func (s *Scenario) throughputSpeed(next sim.SpeedModel) (sim.SpeedModel, error) {
	t, ref, err := s.throughputs()
	if err != nil || t == nil {
		return next, err
	}
	return &workloads.ThroughputSpeed{Table: t, Reference: ref, Next: next}, nil
}
