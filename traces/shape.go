package traces

import (
	"fmt"

	"github.com/gpusim/gpusim/sim"
)

// Shape values of TraceSource.Shape.
const (
	ShapeImporter = ""      // the importer's own equal replicas
	ShapeSplit    = "split" // full nodes plus a remainder (SplitShape)
)

// SplitShape reshapes a whole-GPU, exclusive job of T = j.TotalGPUs() GPUs the
// way Philly's and Helios's schedulers split an "N GPUs" request over nodes of
// nodeGPUs GPUs: T <= nodeGPUs is one replica of T GPUs; a larger T is
// floor(T/nodeGPUs) full replicas of nodeGPUs GPUs plus, when T is not a
// multiple, a last replica of the T mod nodeGPUs GPUs left
// (sim.JobSpec.LastReplicaGPUs): 20 GPUs on 8-GPU nodes are 8+8+4, 16 are 8+8.
// The job's total CPU and memory (per replica x replicas) are spread evenly over
// the new replicas, rounded up. CPU-only, fractional and GPU-sharing jobs, and
// nodeGPUs <= 0, leave j unchanged. It never allocates.
func SplitShape(j *sim.JobSpec, nodeGPUs int32) {
	if nodeGPUs <= 0 || j.GPUsPerReplica == 0 || j.GPUMilli != sim.WholeGPU || j.Sharing != sim.AcceptExclusive {
		return
	}
	t := j.TotalGPUs()
	cpu, mem := j.CPUMilli*int64(j.Replicas), j.MemoryMiB*int64(j.Replicas)
	if t <= nodeGPUs {
		j.Replicas, j.GPUsPerReplica, j.LastReplicaGPUs = 1, t, 0
	} else {
		full, rem := t/nodeGPUs, t%nodeGPUs
		j.Replicas, j.GPUsPerReplica, j.LastReplicaGPUs = full, nodeGPUs, rem
		if rem > 0 {
			j.Replicas++
		}
	}
	j.CPUMilli = ceilDiv(cpu, int64(j.Replicas))
	j.MemoryMiB = ceilDiv(mem, int64(j.Replicas))
}

func (t *TraceSource) validateShape() sim.FieldErrors {
	var fe sim.FieldErrors
	switch t.Shape {
	case ShapeImporter, ShapeSplit:
	default:
		fe.Add("shape", "unknown shape %q (want %q or leave it out for the importer's equal replicas)", t.Shape, ShapeSplit)
	}
	if t.NodeGPUs < 0 {
		fe.Add("nodeGPUs", "must be >= 0 (0 = the cluster's largest node), got %d", t.NodeGPUs)
	} else if t.NodeGPUs > 0 && t.Shape != ShapeSplit {
		fe.Add("nodeGPUs", "applies to shape %q only", ShapeSplit)
	}
	return fe
}

// splitGPUs is the full-node size for shape split (0 when the shape is the
// importer's).
func (t *TraceSource) splitGPUs() (int32, error) {
	if t.Shape != ShapeSplit {
		return 0, nil
	}
	n := t.NodeGPUs
	if n == 0 {
		n = t.Options.NodeGPUs
	}
	if n <= 0 {
		return 0, fmt.Errorf("shape %q needs nodeGPUs (the GPUs of a full node) when no cluster gives it", ShapeSplit)
	}
	return n, nil
}
