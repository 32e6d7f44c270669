package scenarios

import (
	"slices"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/mig"
)

// migGeometry adapts a sim/mig geometry (NVIDIA's MIG tables) to the engine's
// sim.MIGGeometry.
type migGeometry struct{ g *mig.Geometry }

func (a migGeometry) Profile(name string) (int, bool) { return a.g.Profile(name) }
func (a migGeometry) ProfileName(p int) string        { return a.g.Profiles[p].Name }
func (a migGeometry) ComputeSlices(p int) int         { return a.g.Profiles[p].ComputeSlices }
func (a migGeometry) MemoryMiB(p int) int64           { return a.g.Profiles[p].MemoryMiB }
func (a migGeometry) Place(l sim.MIGLayout, p int) (sim.MIGLayout, int, bool) {
	n, s, ok := a.g.Place(mig.Layout{Used: l.Used, Media: l.Media}, p)
	return sim.MIGLayout{Used: n.Used, Media: n.Media}, s, ok
}

func init() {
	migLookup = func(model string) (sim.MIGGeometry, bool) {
		g, ok := mig.Lookup(model)
		if !ok {
			return nil, false
		}
		return migGeometry{g}, true
	}
}

// arrangeMIG orders a GPU's MIG layout (profile names) so that placing them one
// by one at their first free valid start, as the engine does, reproduces an
// arrangement that holds them all (mig.Geometry.Arrange). First-fit in the
// listed order can fail where an arrangement exists: {3g, 2g, 2g} puts the 3g at
// slice 0 and leaves one 2g start, while 2g, 2g, 3g fits. Placing in ascending
// order of the arranged starts always succeeds (every profile placed earlier
// ends before the arranged start of every later one). Profiles listed in an
// order that already works, unknown names, GPUs without MIG and impossible sets
// are returned unchanged (the engine then reports the problem).
func arrangeMIG(gpuModel string, profiles []string) []string {
	g, ok := mig.Lookup(gpuModel)
	if !ok || len(profiles) == 0 {
		return profiles
	}
	idx := make([]int, len(profiles))
	var l mig.Layout
	firstFit := true
	for i, n := range profiles {
		p, ok := g.Profile(n)
		if !ok {
			return profiles
		}
		idx[i] = p
		if firstFit {
			if l, _, ok = g.Place(l, p); !ok {
				firstFit = false
			}
		}
	}
	if firstFit {
		return profiles
	}
	starts, ok := g.Arrange(idx)
	if !ok {
		return profiles
	}
	order := make([]int, len(profiles))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return starts[a] - starts[b] })
	out := make([]string, len(profiles))
	for i, k := range order {
		out[i] = profiles[k]
	}
	return out
}
