package placement

import "github.com/gpusim/gpusim/sim"

// CellChain exposes the HiveD cell chain of c to the external tests.
func CellChain(c *sim.Cluster) []sim.Level { return newTopoIndex(c).chain }

// BinpackScore exposes the binpack placer's node score to the external tests.
func BinpackScore(p Placer, c *sim.Cluster, n sim.NodeID, s *sim.JobSpec) float64 {
	return p.(*coLocating).Placer.(*binpackPlacer).score(c, n, s, 0)
}

// Hostable exposes hostable to the external tests.
var Hostable = hostable

// PackDecisions exposes the pack placement's decision counters.
func PackDecisions(p Placer) (decisions, timedOut, fallbacks int64) {
	q := p.(*packPlacer)
	return q.Decisions, q.TimedOut, q.Fallbacks
}
