package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/policies/placement/fgd"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

// Experiment selects a run mode other than the event-driven replay.
type Experiment struct {
	// Kind "fill" runs the FGD paper's protocol (ATC'23): pods are resampled with
	// replacement (seeded) until the GPU request reaches Load x capacity, shuffled
	// and placed one at a time with no departures; the policies are the paper's
	// placement policies (random, dot-product, gpu-clustering, gpu-packing,
	// best-fit, fgd).
	Kind string  `yaml:"kind"`
	Load float64 `yaml:"load"` // target GPU demand as a multiple of capacity (default 1.3)
}

// DefaultFillLoad is the FGD paper's target load.
const DefaultFillLoad = 1.3

// FillSummary is summary.json of a fill experiment.
type FillSummary struct {
	Schema     string             `json:"schema"`
	Policy     string             `json:"policy"`
	Scenario   string             `json:"scenario"`
	Experiment string             `json:"experiment"`
	Fill       FillMetrics        `json:"fill"`
	Wall       float64            `json:"wall_seconds"`
	Provenance reports.Provenance `json:"provenance"`
}

// FillMetrics are the fill experiment's results (percent of cluster GPU capacity).
type FillMetrics struct {
	Load               float64         `json:"load"`
	GPUAllocationRatio float64         `json:"gpu_allocation_ratio"`
	FragmentedGPURatio float64         `json:"fragmented_gpu_ratio"`
	Pods               int             `json:"pods"`
	UnscheduledPods    int             `json:"unscheduled_pods"`
	Curve              []fgd.FillPoint `json:"curve"`
}

func (s *Scenario) validateExperiment() []string {
	e := s.Experiment
	if e == nil {
		return nil
	}
	var bad []string
	if e.Kind != "fill" {
		bad = append(bad, fmt.Sprintf("experiment.kind|unknown experiment %q (want fill)", e.Kind))
	}
	if e.Load < 0 || e.Load > 100 || math.IsNaN(e.Load) {
		bad = append(bad, "experiment.load|must be in (0, 100]")
	}
	return bad
}

// FillRun is one policy's fill result.
type FillRun struct {
	Label   string
	Summary *FillSummary
	Dir     string
}

// RunFill runs the fill experiment for the selected policies (in parallel; each
// result identical to running it alone) and writes DIR/<policy>/summary.json.
func RunFill(ctx context.Context, s *Scenario, opts RunOptions) ([]FillRun, error) {
	idx, err := s.Select(opts.Policies)
	if err != nil {
		return nil, err
	}
	nodes, err := s.Nodes()
	if err != nil {
		return nil, err
	}
	pods, err := s.fillPods(nodes)
	if err != nil {
		return nil, err
	}
	keep, err := s.openOutDir(opts.OutDir, opts.SharedOutDir)
	if err != nil {
		return nil, err
	}
	out := make([]FillRun, len(idx))
	err = parallel(len(idx), opts.Parallel, func(k int) error {
		i := idx[k]
		p := &s.Policies[i]
		var t0 time.Time
		if opts.Now != nil {
			t0 = opts.Now()
		}
		res, err := fgd.RunFill(nodes, pods, s.fillConfig(i))
		if err != nil {
			return s.fieldErr(fmt.Sprintf("policies[%d]", i), err)
		}
		var wall float64
		if opts.Now != nil {
			wall = opts.Now().Sub(t0).Seconds()
		}
		sum := &FillSummary{Schema: "gpusim/fill-summary/v1", Policy: p.DisplayName(), Scenario: s.Name, Experiment: "fill",
			Fill: FillMetrics{Load: s.fillConfig(i).Load, GPUAllocationRatio: round6(res.GPUAllocationRatio), FragmentedGPURatio: round6(res.FragmentedGPURatio),
				Pods: res.Pods, UnscheduledPods: res.Unscheduled, Curve: res.Curve}, Wall: wall,
			Provenance: reports.Provenance{Version: opts.Version, GoVersion: runtime.Version(), Seed: s.SeedValue(), Scenario: s.Name, ScenarioSHA256: s.hash}}
		run := FillRun{Label: p.DisplayName(), Summary: sum}
		if opts.OutDir != "" {
			b, err := json.MarshalIndent(sum, "", "  ")
			if err != nil {
				return err
			}
			if run.Dir, err = writePolicyDir(opts.OutDir, run.Label, func(dir string) error { return mkdirWrite(dir, b) }); err != nil {
				return err
			}
		}
		out[k] = run
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := finishRuns(s, opts, keep, out, func(r *FillRun) string { return r.Label }); err != nil {
		return nil, err
	}
	return out, nil
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

func mkdirWrite(dir string, b []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return fsutil.WriteBytesAtomic(filepath.Join(dir, "summary.json"), append(b, '\n'))
}

// fillPolicy reports whether name is one of the FGD fill policies.
func fillPolicy(name string) bool { return slices.Contains(fgd.Policies(), name) }

// fillPods builds the fill experiment's pods: the trace as read (no load
// scaling: the experiment resizes the pod list itself), or the synthetic
// workload generated for the cluster.
func (s *Scenario) fillPods(nodes []sim.NodeSpec) ([]sim.JobSpec, error) {
	var pods []sim.JobSpec
	var err error
	switch {
	case s.Workload.Trace != nil:
		pods, _, err = s.Workload.Trace.Load(s.dir, s.SeedValue())
	case s.Workload.Synthetic != nil:
		c, cerr := sim.NewCluster(nodes)
		if cerr != nil {
			return nil, s.fieldErr("cluster", cerr)
		}
		pods, err = s.Workload.Synthetic.Generate(s.SeedValue(), c.NumGPUs(), c.MaxGPUsPerNode())
	}
	if err != nil {
		return nil, s.fieldErr("workload", err)
	}
	return pods, nil
}

// fillConfig is the fill configuration of policy i.
func (s *Scenario) fillConfig(i int) fgd.FillConfig {
	load := s.Experiment.Load
	if load == 0 {
		load = DefaultFillLoad
	}
	return fgd.FillConfig{Load: load, Seed: s.SeedValue(), Policy: s.Policies[i].Name}
}

// preflightFill runs, for every policy, RunFill's start-up checks on the pods
// RunFill would use.
func (s *Scenario) preflightFill() error {
	nodes, err := s.Nodes()
	if err != nil {
		return err
	}
	pods, err := s.fillPods(nodes)
	if err != nil {
		return err
	}
	e := &Error{File: s.file}
	for i := range s.Policies {
		if err := fgd.CheckFill(nodes, pods, s.fillConfig(i)); err != nil {
			path := fmt.Sprintf("policies[%d]", i)
			e.Problems = append(e.Problems, Problem{Line: lineOf(s.root, path), Path: path, Msg: err.Error()})
		}
	}
	if len(e.Problems) == 0 {
		return nil
	}
	return e
}
