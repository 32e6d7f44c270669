package pack

import (
	"math"
	"slices"
)

// greedy is the greedy rule: the jobs in the problem's order; each goes to the
// GPU whose total throughput (sum of its jobs' speed factors) rises most when
// it joins, among the GPUs where it is eligible, fits (clients, memory) and
// every job of the GPU, itself included, keeps its QoS bound; ties (within
// 1e-9) go to the lowest GPU index. A job whose best gain is not positive stays
// pending. Gains are computed once per (GPU class, job kind): interchangeable
// GPUs and jobs share them, so a decision costs O(jobs x classes) lookups plus
// one Speeds call per new (class, kind) pair.
func (pk *Packer) greedy(res *Result) {
	res.Mode = Greedy
	res.Objective = res.Baseline
	res.Placed = 0
	for j := range pk.p.Jobs {
		res.GPUOf[j] = -1
	}
	// active lists the classes that have GPUs, first[c] their lowest GPU;
	// gk[k][c] memoises gainOf.
	pk.active, pk.first = pk.active[:0], pk.first[:0]
	for c := range pk.classes {
		if len(pk.classes[c].gpus) > 0 {
			pk.active = append(pk.active, int32(c))
		}
		pk.first = append(pk.first, firstOf(pk.classes[c].gpus))
	}
	for len(pk.gk) < len(pk.kinds) {
		pk.gk = append(pk.gk, nil)
	}
	for k := range pk.kinds {
		pk.gk[k] = pk.gk[k][:0]
	}
	for j := range pk.p.Jobs {
		k := pk.jobKind[j]
		best, bestGPU, bestGain := int32(-1), 0, 0.0
		gk := pk.gk[k]
		for len(gk) < len(pk.classes) {
			gk = append(gk, math.NaN())
		}
		pk.gk[k] = gk
		for _, c := range pk.active {
			g := gk[c]
			if g != g { // NaN: not computed yet
				g = pk.gainOf(c, k)
				gk[c] = g
			}
			if !(g > eps) {
				continue
			}
			if best < 0 || g > bestGain+eps || g >= bestGain-eps && pk.first[c] < bestGPU {
				best, bestGPU, bestGain = c, pk.first[c], g
			}
		}
		if best < 0 {
			continue
		}
		res.GPUOf[j] = bestGPU
		res.Objective += bestGain
		res.Placed++
		pk.move(best, k)
	}
}

// gainOf is the throughput gain of adding one job of kind k to a GPU of class
// c (-Inf when it is not allowed, does not fit or breaks a QoS bound).
func (pk *Packer) gainOf(c, k int32) float64 {
	g := math.Inf(-1)
	add := [1]int32{k}
	if pk.eligible(k, c) && pk.fits(c, add[:]) {
		g = pk.gainAdd(c, k)
	}
	return g
}

// move moves the lowest-index GPU of class c, which takes a job of kind k, to
// the class of its new occupant set.
func (pk *Packer) move(c, k int32) {
	gi := pk.classes[c].gpus[0]
	pk.classes[c].gpus = pk.classes[c].gpus[1:]
	if len(pk.classes[c].gpus) == 0 {
		i := slices.Index(pk.active, c)
		pk.active[i] = pk.active[len(pk.active)-1]
		pk.active = pk.active[:len(pk.active)-1]
	}
	pk.first[c] = firstOf(pk.classes[c].gpus)
	n := pk.next(c, k)
	for len(pk.first) < len(pk.classes) {
		pk.first = append(pk.first, -1)
	}
	l := pk.classes[n].gpus
	if len(l) == 0 {
		pk.active = append(pk.active, n)
	}
	i, _ := slices.BinarySearch(l, gi)
	pk.classes[n].gpus = slices.Insert(l, i, gi)
	pk.first[n] = pk.classes[n].gpus[0]
}

func firstOf(gpus []int) int {
	if len(gpus) == 0 {
		return -1
	}
	return gpus[0]
}

// next is the class of a GPU of class c after a job of kind k joins it.
func (pk *Packer) next(c, k int32) int32 {
	for int(k) >= len(pk.classes[c].next) {
		pk.classes[c].next = append(pk.classes[c].next, -1)
	}
	if n := pk.classes[c].next[k]; n >= 0 {
		return n
	}
	cl := &pk.classes[c]
	pk.occ = append(pk.occ[:0], cl.occ...)
	pk.occ = append(pk.occ, k)
	sortKinds(pk.occ)
	n := pk.classOf(cl.key.model, cl.key.mode, cl.key.mem, cl.key.clients, pk.occ)
	pk.classes[c].next[k] = n
	return n
}
