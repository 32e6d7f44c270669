package kueue

import "github.com/gpusim/gpusim/sim"

// Request vector indexes: the only resources a gpusim job requests (requests).
const (
	riGPU = iota
	riCPU
	riMem
	nRes
)

// reqVec is a workload's total request per resource, indexed riGPU, riCPU, riMem:
// requests(s) without the map, for the scheduling hot path.
type reqVec [nRes]int64

// resIndex returns the request vector index of a resource name, or -1 for a
// resource gpusim jobs never request.
func resIndex(name string) int8 {
	switch name {
	case ResGPU:
		return riGPU
	case ResCPU:
		return riCPU
	case ResMemory:
		return riMem
	}
	return -1
}

// requestVec is requests(s) as a vector.
func requestVec(s *sim.JobSpec) reqVec {
	var r reqVec
	if s.GPUsPerReplica > 0 {
		r[riGPU] = int64(s.TotalGPUs())
	}
	if s.CPUMilli > 0 {
		r[riCPU] = int64(s.Replicas) * s.CPUMilli
	}
	if s.MemoryMiB > 0 {
		r[riMem] = int64(s.Replicas) * s.MemoryMiB
	}
	return r
}

// groupTab is a resource group's lookup table for nominate: per covered resource
// (in coveredResources order) its request vector index, and per flavor (in the
// group's order) the flavor-resource index of each covered resource (k.fr).
type groupTab struct {
	ri  []int8
	frs [][]int
	gpu bool // the group covers ResGPU
}

// nomTab is a ClusterQueue's lookup table for nominate, built on first use.
type nomTab struct {
	groups  []groupTab
	covered [nRes]bool // resources some resource group covers
}

// nomTable returns cq's nominate table, building it on first use.
func (k *Kueue) nomTable(cq *clusterQueue) *nomTab {
	if cq.nom != nil {
		return cq.nom
	}
	t := &nomTab{groups: make([]groupTab, len(cq.groups))}
	for gi, g := range cq.groups {
		gt := &t.groups[gi]
		for _, r := range g.covered {
			ri := resIndex(r)
			gt.ri = append(gt.ri, ri)
			if ri >= 0 {
				t.covered[ri] = true
			}
			gt.gpu = gt.gpu || r == ResGPU
		}
		for _, fl := range g.flavors {
			frs := make([]int, len(g.covered))
			for ci, r := range g.covered {
				frs[ci] = k.fr(fl, r)
			}
			gt.frs = append(gt.frs, frs)
		}
	}
	cq.nom = t
	return t
}

// cand is one flavor's assignment for one resource group in nominate.
type cand struct {
	m      mode
	borrow int
	assign []frQ
	need   []frQ
	fl     int
}

func (c *cand) reset(fl int) {
	c.m, c.borrow, c.fl = modeFit, 0, fl
	c.assign, c.need = c.assign[:0], c.need[:0]
}

// newEntry returns a cleared entry for w from the cycle's entry pool (k.nEnt is
// reset at the start of every cycle; no entry outlives its cycle), keeping the
// entry's assign and need buffers.
func (k *Kueue) newEntry(w *workload) *entry {
	if k.nEnt == len(k.entPool) {
		k.entPool = append(k.entPool, &entry{})
	}
	e := k.entPool[k.nEnt]
	k.nEnt++
	ab, nb := e.ab, e.nb
	*e = entry{w: w, mode: modeFit, assign: ab[:0], need: nb[:0], ab: ab, nb: nb}
	return e
}

// keepBufs records e's (possibly grown) assign and need buffers for reuse; call
// it before e.need may be aliased to e.assign.
func (e *entry) keepBufs() {
	e.ab, e.nb = e.assign[:0], e.need[:0]
}
