package slurm

import "github.com/gpusim/gpusim/sim"

// overlay is a hypothetical cluster state: the live allocation with the
// resources of some running jobs given back (jobs that will have ended by a
// future time, or preemption victims).
type overlay struct {
	c       *sim.Cluster
	milli   []sim.MilliGPU // released milli per GPU
	cpu     []int64        // released CPU per node
	mem     []int64        // released memory per node
	touched []bool
	list    []sim.NodeID
}

func newOverlay(c *sim.Cluster) overlay {
	n := c.NumNodes()
	return overlay{c: c, milli: make([]sim.MilliGPU, c.NumGPUs()), cpu: make([]int64, n), mem: make([]int64, n), touched: make([]bool, n)}
}

func (o *overlay) gpuUsed(g sim.GPUID) sim.MilliGPU { return o.c.GPUUsed(g) - o.milli[g] }

func (o *overlay) freeWhole(n sim.NodeID) int32 {
	if !o.touched[n] {
		return o.c.NodeFreeGPUs(n)
	}
	var k int32
	first, end := o.c.NodeGPUs(n)
	for g := first; g < end; g++ {
		if o.gpuUsed(g) <= 0 {
			k++
		}
	}
	return k
}

func (o *overlay) cpuFree(n sim.NodeID) int64 { return o.c.NodeFreeCPU(n) + o.cpu[n] }
func (o *overlay) memFree(n sim.NodeID) int64 { return o.c.NodeFreeMemory(n) + o.mem[n] }

// release gives back (sign +1) or takes again (sign -1) running job j's
// resources; keepMem leaves its memory allocated (a suspended victim).
func (o *overlay) release(j *sim.Job, sign int64, keepMem bool) {
	s := &j.Spec
	g := int(s.GPUsPerReplica)
	for r, n := range j.Nodes {
		if !o.touched[n] {
			o.touched[n] = true
			o.list = append(o.list, n)
		}
		o.cpu[n] += sign * s.CPUMilli
		if !keepMem {
			o.mem[n] += sign * s.MemoryMiB
		}
		if r*g+g <= len(j.GPUs) {
			for _, gpu := range j.GPUs[r*g : (r+1)*g] {
				o.milli[gpu] += sim.MilliGPU(sign) * s.GPUMilli
			}
		}
	}
}

func (o *overlay) clear() {
	for _, n := range o.list {
		o.cpu[n], o.mem[n] = 0, 0
		o.touched[n] = false
		first, end := o.c.NodeGPUs(n)
		for g := first; g < end; g++ {
			o.milli[g] = 0
		}
	}
	o.list = o.list[:0]
}

// placement is a candidate placement: replica r on nodes[r] with
// gpus[r*g:(r+1)*g].
type placement struct {
	nodes []sim.NodeID
	gpus  []sim.GPUID
}

func (pl *placement) reset() {
	pl.nodes = pl.nodes[:0]
	pl.gpus = pl.gpus[:0]
}

// distinctNodes returns the placement's nodes without repeats (in replica order).
func (pl *placement) distinctNodes(dst []sim.NodeID) []sim.NodeID {
	dst = dst[:0]
outer:
	for _, n := range pl.nodes {
		for _, m := range dst {
			if m == n {
				continue outer
			}
		}
		dst = append(dst, n)
	}
	return dst
}

// place finds room for job j in state o (first fit over cand in node order,
// lowest free GPU ids first), using only nodes for which ok is true, and writes it
// into pl. A suspended job can only resume on its own nodes (its memory is still
// held there). Replicas of one gang may share a node and may mix GPU models the
// job allows.
func place(o *overlay, j *sim.Job, cand []sim.NodeID, ok func(sim.NodeID) bool, pl *placement) bool {
	s := &j.Spec
	c := o.c
	pl.reset()
	g := s.GPUsPerReplica
	if j.Suspended() && len(j.Nodes) == int(s.Replicas) {
		for r, n := range j.Nodes {
			if !ok(n) {
				return false
			}
			if s.CPUMilli > 0 {
				// CPUs of the earlier replicas on this node
				var k int64
				for _, m := range j.Nodes[:r+1] {
					if m == n {
						k++
					}
				}
				if o.cpuFree(n) < k*s.CPUMilli {
					return false
				}
			}
			if g == 0 {
				pl.nodes = append(pl.nodes, n)
				continue
			}
			if !takeGPUs(o, s, n, pl) {
				return false
			}
			pl.nodes = append(pl.nodes, n)
		}
		return true
	}
	rem := s.Replicas
	for _, n := range cand {
		if rem == 0 {
			break
		}
		spec := c.Node(n)
		if g > 0 && (spec.GPUs == 0 || !s.AllowsModel(spec.GPUModel)) || !ok(n) {
			continue
		}
		k := int64(rem)
		if s.CPUMilli > 0 {
			k = min(k, o.cpuFree(n)/s.CPUMilli)
		}
		if s.MemoryMiB > 0 {
			k = min(k, o.memFree(n)/s.MemoryMiB)
		}
		if g > 0 && !s.Fractional() {
			k = min(k, int64(o.freeWhole(n)/g))
		}
		for ; k > 0; k-- {
			if g > 0 && !takeGPUs(o, s, n, pl) {
				break
			}
			pl.nodes = append(pl.nodes, n)
			rem--
		}
	}
	return rem == 0
}

// takeGPUs appends one replica's GPUs on node n (lowest free ids not already in
// pl; a fractional replica takes the first GPU with enough spare milli).
func takeGPUs(o *overlay, s *sim.JobSpec, n sim.NodeID, pl *placement) bool {
	first, end := o.c.NodeGPUs(n)
	need := s.GPUsPerReplica
	got := 0
	for gpu := first; gpu < end && int32(got) < need; gpu++ {
		used := o.gpuUsed(gpu)
		if s.Fractional() {
			if used+s.GPUMilli > sim.WholeGPU {
				continue
			}
		} else if used > 0 {
			continue
		}
		taken := false
		for _, x := range pl.gpus {
			if x == gpu {
				taken = true
				break
			}
		}
		if taken {
			continue
		}
		pl.gpus = append(pl.gpus, gpu)
		got++
	}
	if int32(got) < need {
		pl.gpus = pl.gpus[:len(pl.gpus)-got]
		return false
	}
	return true
}
