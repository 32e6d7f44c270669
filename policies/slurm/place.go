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
	// distinct: the replicas of a gang go to distinct nodes (sbatch -N
	// replicas --ntasks-per-node=1; params.gangNodes).
	distinct bool
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
		if r*g <= len(j.GPUs) {
			for _, gpu := range sim.ReplicaSlice(j.GPUs, r, g) {
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

// placeNow places job j to start now on the live cluster c: with
// params.placement the named placement, restricted to the partition's nodes that
// ok admits (a suspended job resumes on its own nodes, so Slurm's rule places
// it); else Slurm's own node selection (place). The overlay must be clean (no
// projected releases): a placement sees only the live cluster.
func (s *Slurm) placeNow(c *sim.Cluster, j *sim.Job, pt *partition, ok func(sim.NodeID) bool, pl *placement) bool {
	if s.placer == nil || j.Suspended() || len(s.ov.list) > 0 {
		return s.placeSel(j, pt.nodes, ok, pl)
	}
	s.xpart, s.xok = pt, ok
	found := s.placer.Place(c, j, &s.xpl)
	s.xpart, s.xok = nil, nil
	pl.reset()
	if !found {
		return false
	}
	pl.nodes = append(pl.nodes, s.xpl.Nodes...)
	pl.gpus = append(pl.gpus, s.xpl.GPUs...)
	return true
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
// job allows. With tree non-nil (topology/tree) the job is first confined to
// one switch (see treeDomain).
func place(o *overlay, j *sim.Job, cand []sim.NodeID, ok func(sim.NodeID) bool, pl *placement, tree *treeSel) bool {
	if !placeEqual(o, j, cand, ok, pl, tree) {
		return false
	}
	if s := &j.Spec; s.Unequal() {
		// An unequal gang (docs/shapes.md) is placed as full replicas; the
		// remainder gives back the last GPUs of its replica.
		pl.gpus = pl.gpus[:len(pl.gpus)-int(s.GPUsPerReplica-s.LastReplicaGPUs)]
	}
	return true
}

// placeEqual is place for a gang of Replicas full replicas.
func placeEqual(o *overlay, j *sim.Job, cand []sim.NodeID, ok func(sim.NodeID) bool, pl *placement, tree *treeSel) bool {
	s := &j.Spec
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
	if tree != nil && !treeDomain(o, j, cand, ok, tree) {
		return false
	}
	rem := s.Replicas
	for _, n := range cand {
		if rem == 0 {
			break
		}
		if tree != nil && !tree.in(o.c, n) {
			continue
		}
		k := min(hostable(o, s, n, ok), int64(rem))
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

// hostable is how many replicas of s node n can take in state o (0 when ok
// rejects it or its GPU model is not allowed).
func hostable(o *overlay, s *sim.JobSpec, n sim.NodeID, ok func(sim.NodeID) bool) int64 {
	spec := o.c.Node(n)
	g := s.GPUsPerReplica
	if g > 0 && (spec.GPUs == 0 || !s.AllowsModel(spec.GPUModel)) || !ok(n) {
		return 0
	}
	k := int64(s.Replicas)
	if o.distinct {
		k = 1
	}
	if s.CPUMilli > 0 {
		k = min(k, o.cpuFree(n)/s.CPUMilli)
	}
	if s.MemoryMiB > 0 {
		k = min(k, o.memFree(n)/s.MemoryMiB)
	}
	if g > 0 && !s.Fractional() {
		k = min(k, int64(o.freeWhole(n)/g))
	} else if g > 0 {
		first, end := o.c.NodeGPUs(n)
		spare := false
		for gpu := first; gpu < end && !spare; gpu++ {
			spare = o.gpuUsed(gpu)+s.GPUMilli <= sim.WholeGPU
		}
		if !spare {
			k = 0
		}
	}
	return max(k, 0)
}

// treeSel is topology/tree's choice: the switch (leaf, or spine block) a job
// is confined to; level 0 means no restriction.
type treeSel struct {
	level sim.Level // sim.LevelLeaf, sim.LevelSpine, or 0 = anywhere
	spine int32
	leaf  int32
	// scratch: hostable replicas per switch
	sums map[[2]int32]int64
}

func (t *treeSel) in(c *sim.Cluster, n sim.NodeID) bool {
	spec := c.Node(n)
	switch t.level {
	case sim.LevelLeaf:
		return spec.Spine == t.spine && spec.Leaf == t.leaf
	case sim.LevelSpine:
		return spec.Spine == t.spine
	}
	return true
}

// treeDomain implements topology/tree: the lowest-level switch whose subtree
// can hold the whole job (a leaf switch, else a spine block), best fit (the
// fewest hostable replicas that suffice, then the lowest switch); a job that no
// spine block can hold may span blocks (the fabric has no modelled core switch).
// It reports false when the job does not fit at all.
func treeDomain(o *overlay, j *sim.Job, cand []sim.NodeID, ok func(sim.NodeID) bool, t *treeSel) bool {
	s := &j.Spec
	need := int64(s.Replicas)
	var total int64
	for _, lvl := range []sim.Level{sim.LevelLeaf, sim.LevelSpine} {
		clear(t.sums)
		total = 0
		for _, n := range cand {
			h := hostable(o, s, n, ok)
			if h == 0 {
				continue
			}
			spec := o.c.Node(n)
			key := [2]int32{spec.Spine, spec.Leaf}
			if lvl == sim.LevelSpine {
				key[1] = 0
			}
			t.sums[key] += h
			total += h
		}
		if total < need {
			return false
		}
		best, bestSum := [2]int32{}, int64(-1)
		for key, sum := range t.sums { // a minimum with a total tie-break: order-independent
			if sum < need {
				continue
			}
			if bestSum < 0 || sum < bestSum || sum == bestSum && (key[0] < best[0] || key[0] == best[0] && key[1] < best[1]) {
				best, bestSum = key, sum
			}
		}
		if bestSum >= 0 {
			t.level, t.spine, t.leaf = lvl, best[0], best[1]
			return true
		}
	}
	t.level = 0
	return true
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
