package placement

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpusim/gpusim/policies/placement/fgd"
	"github.com/gpusim/gpusim/sim"
)

// Preparer is implemented by placements that must see the run before their
// first Place: the FGD family builds its target workload from the run's jobs and
// a mirror of the cluster. A policy calls Prepare (through the package function
// of that name) once per run, at its first scheduling point, before any Place.
type Preparer interface {
	Prepare(v *sim.View) error
}

// Prepare calls p.Prepare when p is a Preparer; other placements need nothing.
func Prepare(p Placer, v *sim.View) error {
	if pr, ok := p.(Preparer); ok {
		return pr.Prepare(v)
	}
	return nil
}

// fgdPlacer runs one scorer of the FGD paper (package fgd: fgd, best-fit,
// dot-product, gpu-packing, gpu-clustering, random) as an ordinary placement of a
// time replay, on the engine's live cluster:
//
//   - The target workload of the fragmentation measure is built from every job
//     of the run (the authors' typical pods of the trace: each replica a pod,
//     shapes covering popularity % of the pods). It is a statistical assumption
//     about the workload, not knowledge of any job's arrival or duration. In a
//     live run, whose jobs are submitted as they come (sim.Live.Submit), it is
//     built from the jobs submitted so far and rebuilt before a Place whenever
//     more have been submitted (retarget).
//   - The fgd.Placer keeps a mirror of the free resources; before each Place it
//     re-reads the nodes whose sim.Cluster.NodeVersion moved (jobs the engine
//     started or ended since).
//   - A gang is placed replica by replica (fgd.Placer.PlaceGang), each scored
//     with the earlier ones counted as used.
//   - Device-level sharing (docs/sharing.md): New wraps it in coLocating, so a job
//     that accepts sharing on a cluster with shared-mode GPUs is first
//     co-located as best-fit does; MIG-mode GPUs are never offered to FGD. FGD's
//     own milli-GPU shares (gpu_milli < 1000) are scored by FGD itself.
type fgdPlacer struct {
	scorer string
	cfg    fgd.TargetConfig
	tw     *fgd.TargetWorkload
	seed   uint64
	p      *fgd.Placer
	c      *sim.Cluster
	v      *sim.View // the view Prepare saw
	nTW    int       // jobs of v the target workload counts
}

func newFGD(a *placerArgs) (Placer, error) {
	f := &fgdPlacer{scorer: fgd.FGD}
	if v, ok := a.str("scorer"); ok {
		known := false
		for _, n := range fgd.Policies() {
			known = known || n == v
		}
		if !known {
			return nil, fmt.Errorf("scorer: unknown %q (want one of %s)", v, strings.Join(fgd.Policies(), ", "))
		}
		f.scorer = v
	}
	if v, ok := a.str("popularity"); ok {
		p, err := strconv.ParseFloat(v, 64)
		if err != nil || !(p > 0 && p <= 100) {
			return nil, fmt.Errorf("popularity: must be a percentage in (0, 100], got %q", v)
		}
		f.cfg.PopularityPct = p
	}
	if v, ok := a.str("step"); ok {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			return nil, fmt.Errorf("step: must be an integer >= 1, got %q", v)
		}
		f.cfg.Step = k
	}
	cpuPods, err := a.boolean("cpuPods", true)
	if err != nil {
		return nil, err
	}
	f.cfg.ExcludeCPUOnly = !cpuPods
	if f.cfg.GPUWeight, err = a.weight("gpuWeight", 0); err != nil {
		return nil, err
	}
	return f, a.done()
}

func (f *fgdPlacer) Name() string {
	if f.scorer == fgd.FGD {
		return "fgd"
	}
	return "fgd:scorer=" + f.scorer
}

// Prepare builds the target workload from the run's jobs and the scorer's mirror
// of v's cluster. The scorer's random streams derive from the run's seed. A
// second run (another cluster) prepares afresh.
func (f *fgdPlacer) Prepare(v *sim.View) error {
	if f.p != nil && f.c == v.Cluster() {
		return nil // prepared for this run
	}
	{
		tw, err := fgd.NewTargetWorkloadFunc(v.NumJobs(), func(i int) *sim.JobSpec { return &v.Job(sim.JobRef(i)).Spec }, f.cfg)
		if err != nil {
			return fmt.Errorf("placement %s: %w", f.Name(), err)
		}
		f.tw, f.seed, f.v, f.nTW = tw, v.Seed(), v, v.NumJobs()
	}
	return f.bind(v.Cluster())
}

// retarget rebuilds the target workload from every job of the prepared view
// when jobs were submitted since it was built (live runs only: a simulation's
// job table never grows). If the new workload cannot be built the former one
// stays.
func (f *fgdPlacer) retarget() {
	n := f.v.NumJobs()
	tw, err := fgd.NewTargetWorkloadFunc(n, func(i int) *sim.JobSpec { return &f.v.Job(sim.JobRef(i)).Spec }, f.cfg)
	if err != nil {
		return
	}
	if f.p != nil {
		if err := f.p.SetTarget(tw); err != nil {
			return
		}
	}
	f.tw, f.nTW = tw, n
}

func (f *fgdPlacer) bind(c *sim.Cluster) error {
	if f.p != nil && f.c == c {
		return nil
	}
	p, err := fgd.NewPlacer(c, f.scorer, f.tw, f.seed)
	if err != nil {
		return fmt.Errorf("placement %s: %w", f.Name(), err)
	}
	f.p, f.c = p, c
	return nil
}

// Place places j with the FGD scorer. Without Prepare it places nothing: the
// target workload is unknown.
func (f *fgdPlacer) Place(c *sim.Cluster, j *sim.Job, out *Placement) bool {
	out.reset()
	s := &j.Spec
	if f.tw == nil || !QuickFit(c, s) {
		return false
	}
	if f.bind(c) != nil {
		return false
	}
	if f.v != nil && f.v.NumJobs() != f.nTW {
		f.retarget()
	}
	f.p.Refresh()
	nodes, gpus, ok, err := f.p.PlaceGangWithin(s, out.Allow, out.Nodes, out.GPUs)
	out.Nodes, out.GPUs = nodes, gpus
	if !ok || err != nil {
		out.reset()
		return false
	}
	return true
}
