package slurm

import "github.com/gpusim/gpusim/sim"

// Preflight runs the set-up of the first scheduling point (setup): node
// expressions of partitions and reservations are matched against the cluster
// and every job of the run is mapped to its partition, QOS and association and
// checked against the partition's nodes. The instance then starts as if it had
// been scheduled once (init is idempotent).
func (s *Slurm) Preflight(v *sim.View) error { return s.init(v) }
