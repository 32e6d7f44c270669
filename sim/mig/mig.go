// Package mig holds NVIDIA's Multi-Instance GPU (MIG) geometry for the GPU
// models gpusim simulates with MIG: the GPU-instance profiles of each model (name,
// compute slices, memory slices, memory), where on the GPU each profile may be
// placed, and a small value type, Layout, that records which memory slices of one
// GPU are taken. It uses only the standard library.
//
// # The placement model
//
// A MIG-capable GPU (A100, H100, H200, B200) has 8 memory slices and 7 compute
// slices. A GPU instance of a profile occupies Span consecutive memory slices
// starting at one of the profile's valid starts — exactly what
// `nvidia-smi mig -lgipp` prints as "{starts}:size" and what NVML returns from
// nvmlDeviceGetGpuInstancePossiblePlacements. Two instances fit together exactly
// when their memory slices do not overlap; on top of that a GPU has one set of
// media engines, so at most one "+me" instance exists at a time. Because the
// starts are restricted (a 4g instance only at slice 0, a 3g at 0 or 4, a 2g at
// 0, 2 or 4, a 1g.20gb-style instance at 0, 2, 4 or 6, a 1g at 0..6), not every
// set of profiles whose compute slices add up to 7 or less fits: {3g, 3g, 1g}
// needs 9 memory slices, and {4g, 2g, 2g} has only one start left for a 2g.
// ValidCombination searches every assignment of starts, so the answer does not
// depend on the order in which profiles are listed.
//
// # Sources
//
//   - Placements: the A100 table of NVIDIA's go-nvml mock DGX A100
//     (github.com/NVIDIA/go-nvml v0.13.0-1, pkg/nvml/mock/dgxa100/mig-profile.go,
//     MIGPlacements.GpuInstancePossiblePlacements), which equals the
//     `nvidia-smi mig -lgipp` output published for A100 and H100 80GB GPUs:
//     1g {0..6}:1, 1g+me {0..6}:1, 1g.2x {0,2,4,6}:2, 2g {0,2,4}:2, 3g {0,4}:4,
//     4g {0}:4, 7g {0}:8. H200 and B200 use the same placement table (NVIDIA MIG
//     User Guide, "Supported MIG Profiles": the same 7-slice/8-slice layout and
//     instance counts per profile).
//   - Profiles and instance counts: NVIDIA MIG User Guide, "Supported MIG
//     Profiles" (A100, H100, H200, B200 tables).
//   - Memory: A100-40GB from the go-nvml mock (MemorySizeMB); H100-80GB from a
//     published `nvidia-smi mig -lgip` of an H100 80GB HBM3 (9.75 / 19.62 / 39.50
//     / 79.25 GiB); A100-80GB from published `nvidia-smi mig -lgip` listings (9.50
//     / 19.50 / 39.25 / 79.25 GiB); H200 from the `nvidia-smi mig -lgip` in
//     NVIDIA/mig-parted issue 120 (16.00 / 32.25 / 69.50 / 139.75 GiB). HGX B200
//     memory is the profile name's nominal size in GB converted to MiB (an
//     approximation until a listing from such a GPU is recorded; the geometry
//     does not depend on it).
package mig

import (
	"math/bits"
	"slices"
	"strings"
)

// Slots is the number of memory slices (placement slots) of a MIG GPU.
const Slots = 8

// ComputeSlices is the number of compute slices (GPCs available to MIG) of a MIG
// GPU: a 7g instance has them all.
const ComputeSlices = 7

// Profile is one GPU-instance profile of a GPU model.
type Profile struct {
	Name          string // NVIDIA's name, e.g. "1g.10gb", "1g.10gb+me", "3g.40gb"
	ComputeSlices int    // compute slices, 1..7
	MemorySlices  int    // memory slices of 8 (equals Span)
	MemoryMiB     int64  // instance memory
	MediaExt      bool   // the +me variant: takes the GPU's media engines (one per GPU)
	Starts        []int  // valid start slots, in NVIDIA's placement order
	Span          int    // memory slices an instance occupies
	MaxInstances  int    // instances of this profile alone on one GPU
}

// mask returns the memory-slice bits of an instance of p at start.
func (p *Profile) mask(start int) uint8 { return uint8((1<<p.Span)-1) << start }

// Geometry is one GPU model's MIG geometry. Its methods do not allocate.
type Geometry struct {
	Model    string // canonical name, e.g. "A100-80GB"
	Profiles []Profile
}

// Layout is the state of one GPU's memory slices (bit i = slice i taken) and
// whether its media engines are taken. The zero Layout is an empty GPU.
type Layout struct {
	Used  uint8
	Media bool
}

// Free reports whether no instance is placed.
func (l Layout) Free() bool { return l.Used == 0 && !l.Media }

// Lookup returns the geometry of a GPU model, matching case-insensitively the
// canonical names (Models), gpusim's template names ("A100-SXM-80GB",
// "H100-SXM-80GB", "H200", "B200") and names as NVML reports them ("NVIDIA
// A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"). ok is false for GPUs without MIG
// (T4, L40S, V100, …) and unknown names.
func Lookup(gpuModel string) (g *Geometry, ok bool) {
	k := canonical(gpuModel)
	for i := range geometries {
		if geometries[i].Model == k {
			return &geometries[i], true
		}
	}
	return nil, false
}

// canonical maps a GPU model name to a canonical geometry name, or "".
func canonical(name string) string {
	s := strings.ToUpper(strings.TrimSpace(name))
	s = strings.TrimPrefix(s, "NVIDIA ")
	has := func(sub ...string) bool {
		for _, x := range sub {
			if !strings.Contains(s, x) {
				return false
			}
		}
		return true
	}
	switch {
	case has("A100") && (has("80G") || has("80 G")):
		return "A100-80GB"
	case has("A100"):
		return "A100-40GB" // the A100's other memory size
	case has("H100") && (has("94G") || has("96G") || has("NVL")):
		return "" // H100 NVL / 94-96 GB profiles differ (1g.12gb …): not tabulated
	case has("H100"):
		return "H100-80GB"
	case has("H200"):
		return "H200-141GB"
	case has("B200"):
		return "B200-180GB"
	}
	return ""
}

// Models lists the canonical names of the tabulated geometries, sorted.
func Models() []string {
	out := make([]string, len(geometries))
	for i := range geometries {
		out[i] = geometries[i].Model
	}
	slices.Sort(out)
	return out
}

// Profile returns the index of a profile by name (case-insensitive; an optional
// "MIG " prefix, as nvidia-smi prints it, is accepted).
func (g *Geometry) Profile(name string) (int, bool) {
	n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(name)), "mig ")
	for i := range g.Profiles {
		if g.Profiles[i].Name == n {
			return i, true
		}
	}
	return -1, false
}

// ProfileNames lists the profile names in table order.
func (g *Geometry) ProfileNames() []string {
	out := make([]string, len(g.Profiles))
	for i := range g.Profiles {
		out[i] = g.Profiles[i].Name
	}
	return out
}

// fits reports whether profile p can be placed at start in l.
func (g *Geometry) fits(l Layout, p *Profile, start int) bool {
	return l.Used&p.mask(start) == 0 && !(p.MediaExt && l.Media)
}

// Place places profile p at its first valid start (in NVIDIA's order) that is
// free in l, returning the new layout and the start; ok is false when no start is
// free (or p is a +me profile and the media engines are taken).
func (g *Geometry) Place(l Layout, p int) (next Layout, start int, ok bool) {
	pr := &g.Profiles[p]
	for _, s := range pr.Starts {
		if g.fits(l, pr, s) {
			return Layout{Used: l.Used | pr.mask(s), Media: l.Media || pr.MediaExt}, s, true
		}
	}
	return l, -1, false
}

// PlaceAt places profile p at start; ok is false when start is not a valid start
// of p or its slices (or the media engines) are taken.
func (g *Geometry) PlaceAt(l Layout, p, start int) (Layout, bool) {
	pr := &g.Profiles[p]
	if !slices.Contains(pr.Starts, start) || !g.fits(l, pr, start) {
		return l, false
	}
	return Layout{Used: l.Used | pr.mask(start), Media: l.Media || pr.MediaExt}, true
}

// Release removes an instance of profile p at start from l.
func (g *Geometry) Release(l Layout, p, start int) Layout {
	pr := &g.Profiles[p]
	l.Used &^= pr.mask(start)
	if pr.MediaExt {
		l.Media = false
	}
	return l
}

// Speed is the instance's compute share of the whole GPU: compute slices / 7.
func (g *Geometry) Speed(p int) float64 {
	return float64(g.Profiles[p].ComputeSlices) / ComputeSlices
}

// ComputeUsed returns the compute slices that the instances recorded in a
// placement list take; used by tests and invariants.
func (g *Geometry) ComputeUsed(profiles []int) int {
	n := 0
	for _, p := range profiles {
		n += g.Profiles[p].ComputeSlices
	}
	return n
}

// ValidCombination reports whether instances of all the named profiles can exist
// on one GPU at the same time (unknown names are invalid). It searches every
// assignment of valid starts (see Arrange), so the order of names does not
// matter.
func (g *Geometry) ValidCombination(names []string) bool {
	idx := make([]int, 0, len(names))
	for _, n := range names {
		p, ok := g.Profile(n)
		if !ok {
			return false
		}
		idx = append(idx, p)
	}
	_, ok := g.Arrange(idx)
	return ok
}

// Arrange finds a start for every profile of a GPU layout (a list of profile
// indexes) so that all fit at once, and returns them in the order of profiles;
// ok is false when no arrangement exists. Placing the profiles one by one at
// their first free start is not enough: for {3g, 2g, 2g} first-fit puts the 3g
// at slice 0 and leaves one 2g start, while the 3g at slice 4 fits all three.
// Arrange searches: profiles by decreasing span (stable), each at its starts in
// NVIDIA's order, backtracking on failure (at most 7 instances, so the search is
// tiny). The result is deterministic.
func (g *Geometry) Arrange(profiles []int) (starts []int, ok bool) {
	compute := 0
	for _, p := range profiles {
		if p < 0 || p >= len(g.Profiles) {
			return nil, false
		}
		compute += g.Profiles[p].ComputeSlices
	}
	if compute > ComputeSlices || len(profiles) > Slots {
		return nil, false
	}
	order := make([]int, len(profiles))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return g.Profiles[profiles[b]].Span - g.Profiles[profiles[a]].Span })
	starts = make([]int, len(profiles))
	if !g.search(Layout{}, profiles, order, starts) {
		return nil, false
	}
	return starts, true
}

func (g *Geometry) search(l Layout, profiles, order, starts []int) bool {
	if len(order) == 0 {
		return true
	}
	k := order[0]
	pr := &g.Profiles[profiles[k]]
	for _, s := range pr.Starts {
		if g.fits(l, pr, s) {
			starts[k] = s
			if g.search(Layout{Used: l.Used | pr.mask(s), Media: l.Media || pr.MediaExt}, profiles, order[1:], starts) {
				return true
			}
		}
	}
	return false
}

// FreeSlices is the number of free memory slices of l.
func FreeSlices(l Layout) int { return Slots - bits.OnesCount8(l.Used) }
