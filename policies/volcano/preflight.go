package volcano

import "github.com/gpusim/gpusim/sim"

// Preflight runs the set-up of the first session (init): queue guarantees are
// checked against the cluster's capacity.
func (s *Volcano) Preflight(v *sim.View) error {
	if !s.inited {
		s.err = s.init(v)
	}
	return s.err
}
