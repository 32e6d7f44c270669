package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// MIG (Multi-Instance GPU) in the engine.
//
// A GPU in mode ShareMIG is split into GPU instances by a layout: a list of
// profiles (NodeSpec.MIGProfiles, from the pool), placed in order at the first
// valid start NVIDIA's placement table allows (MIGGeometry.Place). A job that
// accepts mig takes one free instance: the profile it asks for (mig_profile), or
// else the free instance with the least memory that holds its gpu_mem_mib
// (ties: the fewest compute slices, then the lowest start). Instances are
// isolated: a job's speed is its placement speed x its instance's compute-slice
// share (slices / 7), with no interference. A MIG-mode GPU is never free for
// whole-GPU jobs.
//
// A policy changes a GPU's layout with Plan.AddReconfigure: the GPU must be empty
// (every instance free: drain it first), and it is unusable for the node's
// MIGReconfigureCost; then the new instances are free. The engine wakes the
// policy when a reconfiguration completes.

// MIGLayout is the occupied memory slices of one GPU (bit i = slice i) and
// whether its one media-extension instance is taken.
type MIGLayout struct {
	Used  uint8
	Media bool
}

// MIGGeometry is one GPU model's MIG geometry (the profiles and their valid
// placements). The scenarios wiring adapts package sim/mig to it.
type MIGGeometry interface {
	// Profile returns the index of a profile by name (e.g. "3g.40gb").
	Profile(name string) (int, bool)
	// ProfileName, ComputeSlices and MemoryMiB describe profile p.
	ProfileName(p int) string
	ComputeSlices(p int) int
	MemoryMiB(p int) int64
	// Place reserves profile p at its first valid start in l.
	Place(l MIGLayout, p int) (next MIGLayout, start int, ok bool)
}

// MIGLookup returns the MIG geometry of a GPU model (ok false: no MIG).
type MIGLookup func(gpuModel string) (MIGGeometry, bool)

// MIGInstance is one GPU instance of a MIG-mode GPU.
type MIGInstance struct {
	Profile int16
	Start   int8
	Job     JobRef // occupant, -1 when free
}

// migState is the cluster's MIG state (nil without MIG-mode GPUs).
type migState struct {
	geo   []MIGGeometry   // per model index (nil: no MIG)
	inst  [][]MIGInstance // per GPU
	busy  []bool          // GPU being reconfigured
	total int64           // reconfigurations so far
}

// MIGInstances returns GPU g's instances (nil unless in MIG mode). Do not modify.
func (c *Cluster) MIGInstances(g GPUID) []MIGInstance {
	if c.mig == nil {
		return nil
	}
	return c.mig.inst[g]
}

// MIGReconfiguring reports whether GPU g is being reconfigured.
func (c *Cluster) MIGReconfiguring(g GPUID) bool { return c.mig != nil && c.mig.busy[g] }

// MIGGeometryOf returns the geometry of GPU g's model (nil without MIG).
func (c *Cluster) MIGGeometryOf(g GPUID) MIGGeometry {
	if c.mig == nil {
		return nil
	}
	return c.mig.geo[c.nodeMdl[c.gpuNode[g]]]
}

// migPick returns the index of the free instance of GPU g that a job with spec s
// would take, or -1.
func (c *Cluster) migPick(s *JobSpec, g GPUID) int {
	if c.mig == nil || c.mig.busy[g] {
		return -1
	}
	geo := c.mig.geo[c.nodeMdl[c.gpuNode[g]]]
	want := -1
	if s.MIGProfile != "" {
		p, ok := geo.Profile(s.MIGProfile)
		if !ok {
			return -1
		}
		want = p
	}
	best := -1
	for i, in := range c.mig.inst[g] {
		if in.Job >= 0 {
			continue
		}
		p := int(in.Profile)
		if want >= 0 && p != want || want < 0 && geo.MemoryMiB(p) < s.GPUMemMiB {
			continue
		}
		if s.Serving != nil && c.migInstSpeed(g, geo, p) < s.Serving.MinSpeed() {
			continue // too slow for the serving job's P99 SLA (docs/serving.md)
		}
		if best < 0 {
			best = i
			continue
		}
		bp := int(c.mig.inst[g][best].Profile)
		if m, bm := geo.MemoryMiB(p), geo.MemoryMiB(bp); m < bm || m == bm && geo.ComputeSlices(p) < geo.ComputeSlices(bp) {
			best = i
		}
	}
	return best
}

// migLayout builds the instances of a layout (profile names, placed in order).
func migLayout(geo MIGGeometry, profiles []string) ([]MIGInstance, error) {
	var l MIGLayout
	out := make([]MIGInstance, 0, len(profiles))
	for _, name := range profiles {
		p, ok := geo.Profile(name)
		if !ok {
			return nil, fmt.Errorf("unknown MIG profile %q", name)
		}
		next, start, ok := geo.Place(l, p)
		if !ok {
			return nil, fmt.Errorf("MIG layout [%s]: %s does not fit after the profiles before it (NVIDIA's placement table)", strings.Join(profiles, ", "), name)
		}
		l = next
		out = append(out, MIGInstance{Profile: int16(p), Start: int8(start), Job: -1})
	}
	return out, nil
}

// initMIG sets up the MIG state of the MIG-mode GPUs (engine start).
func (c *Cluster) initMIG(lookup MIGLookup) error {
	if c.gpuMode == nil || c.mig != nil {
		return nil
	}
	var st *migState
	for g := range c.gpuMode {
		if c.gpuMode[g] != ShareMIG {
			continue
		}
		n := c.gpuNode[g]
		nd := &c.nodes[n]
		if st == nil {
			st = &migState{geo: make([]MIGGeometry, len(c.models)), inst: make([][]MIGInstance, c.totalGPUs), busy: make([]bool, c.totalGPUs)}
		}
		m := c.nodeMdl[n]
		if st.geo[m] == nil {
			var geo MIGGeometry
			ok := false
			if lookup != nil {
				geo, ok = lookup(nd.GPUModel)
			}
			if !ok {
				return fmt.Errorf("node %s: GPU model %q has no MIG geometry", nd.Name, nd.GPUModel)
			}
			st.geo[m] = geo
		}
		inst, err := migLayout(st.geo[m], nd.MIGProfiles)
		if err != nil {
			return fmt.Errorf("node %s: %w", nd.Name, err)
		}
		for _, name := range slices.Sorted(maps.Keys(nd.MIGSpeed)) {
			f := nd.MIGSpeed[name]
			if _, ok := st.geo[m].Profile(name); !ok || !(f > 0 && f <= 1) {
				return fmt.Errorf("node %s: migSpeed %s: %v (want a known profile and a factor in (0, 1])", nd.Name, name, f)
			}
		}
		st.inst[g] = inst
	}
	if st == nil {
		return nil
	}
	c.mig = st
	for g := range c.gpuMode {
		if c.gpuMode[g] == ShareMIG {
			c.wholeDelta(GPUID(g), -1) // never free for whole-GPU jobs
			c.updateOpen(GPUID(g))
		}
	}
	return nil
}

// migOpen reports whether MIG GPU g can take another job now.
func (c *Cluster) migOpen(g GPUID) bool {
	if c.mig.busy[g] {
		return false
	}
	for _, in := range c.mig.inst[g] {
		if in.Job < 0 {
			return true
		}
	}
	return false
}

// ---- engine ----

// AddReconfigure asks the engine to change MIG GPU g's layout to profiles
// (placed in order). The GPU must be in MIG mode, empty and not already being
// reconfigured; it is unusable for its node's MIGReconfigureCost, after which the
// engine wakes the policy. Bound to an engine it applies at once and returns a
// *PlanError if invalid.
func (p *Plan) AddReconfigure(g GPUID, profiles []string) error {
	if p.eng != nil {
		if err := p.eng.applyReconfigure(g, profiles); err != nil {
			return p.fail(fmt.Sprintf("reconfigure GPU %d", g), err)
		}
	}
	return nil
}

func (e *Engine) applyReconfigure(g GPUID, profiles []string) error {
	c := e.cluster
	if g < 0 || int64(g) >= c.totalGPUs {
		return fmt.Errorf("unknown GPU %d", g)
	}
	if c.mig == nil || c.gpuMode[g] != ShareMIG {
		return fmt.Errorf("GPU %d is not in MIG mode", g)
	}
	if c.mig.busy[g] {
		return fmt.Errorf("GPU %d is already being reconfigured", g)
	}
	if c.shrN[g] > 0 {
		return fmt.Errorf("GPU %d runs %d jobs: drain it before reconfiguring", g, c.shrN[g])
	}
	inst, err := migLayout(c.mig.geo[c.nodeMdl[c.gpuNode[g]]], profiles)
	if err != nil {
		return err
	}
	c.mig.inst[g] = inst
	c.mig.total++
	e.share.stats.MIGReconfigurations++
	cost := c.nodes[c.gpuNode[g]].MIGReconfigureCost
	if cost <= 0 {
		c.updateOpen(g)
		return nil
	}
	c.mig.busy[g] = true
	c.updateOpen(g)
	e.seq++
	e.q.push(qitem{t: e.now.Add(cost), kind: qReconf, seq: e.seq, job: JobRef(g)})
	return nil
}

// reconfDone ends GPU g's reconfiguration.
func (e *Engine) reconfDone(g GPUID) {
	e.events++
	e.cluster.mig.busy[g] = false
	e.cluster.updateOpen(g)
}

// migSpeed is the speed factor of job j's MIG instance: the node's measured
// factor for the profile if given, else its compute-slice share.
func (e *Engine) migSpeed(j *Job) float64 {
	c := e.cluster
	g := j.GPUs[0]
	return c.migInstSpeed(g, c.MIGGeometryOf(g), int(c.mig.inst[g][j.sh.migIdx].Profile))
}

// migInstSpeed is the speed of an instance of profile p on MIG GPU g: the
// node's measured MIGSpeed for it, else compute slices / 7.
func (c *Cluster) migInstSpeed(g GPUID, geo MIGGeometry, p int) float64 {
	if f := c.nodes[c.gpuNode[g]].MIGSpeed[geo.ProfileName(p)]; f > 0 {
		return f
	}
	return float64(geo.ComputeSlices(p)) / 7
}

// EnableMIG sets up the MIG layouts of the cluster's MIG-mode GPUs from their
// nodes' MIGProfiles with the geometry lookup (before a run; the engine does it
// itself from SharingConfig.MIG). It is an error for a MIG-mode node whose GPU
// model has no geometry or whose layout is not a valid placement.
func (c *Cluster) EnableMIG(lookup MIGLookup) error { return c.initMIG(lookup) }

// migProfileExists reports whether some allowed MIG-mode node's geometry knows
// s's MIG profile.
func (c *Cluster) migProfileExists(s *JobSpec) bool {
	if c.mig == nil {
		return false
	}
	for i := range c.nodes {
		n := &c.nodes[i]
		if n.Sharing != ShareMIG || !s.AllowsModel(n.GPUModel) {
			continue
		}
		if geo := c.mig.geo[c.nodeMdl[i]]; geo != nil {
			if _, ok := geo.Profile(s.MIGProfile); ok {
				return true
			}
		}
	}
	return false
}
