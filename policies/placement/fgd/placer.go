package fgd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// Policy names accepted by NewPlacer.
const (
	Random        = "random"
	DotProduct    = "dot-product"
	GPUClustering = "gpu-clustering"
	GPUPacking    = "gpu-packing"
	BestFit       = "best-fit"
	FGD           = "fgd"
)

// Policies lists the policy names in the paper's order.
func Policies() []string {
	return []string{Random, DotProduct, GPUClustering, GPUPacking, BestFit, FGD}
}

type policyKind uint8

const (
	kRandom policyKind = iota
	kDot
	kClustering
	kPacking
	kBestFit
	kFGD
)

func parsePolicy(name string) (policyKind, error) {
	for i, n := range Policies() {
		if n == name {
			return policyKind(i), nil
		}
	}
	return 0, fmt.Errorf("fgd: unknown policy %q (want one of %s)", name, strings.Join(Policies(), ", "))
}

// Normalisation constants of the authors' scorers (open-gpu-share utils const.go).
const (
	maxSpecCPU = 128000 // milli-CPU
	maxSpecGPU = 8000   // milli-GPU
	maxScore   = 100    // framework.MaxNodeScore
)

// Placement is where one pod goes: a node and, for GPU pods, the GPUs it uses
// (one GPU for a fractional pod).
type Placement struct {
	Node sim.NodeID
	GPUs []sim.GPUID
}

// request is a validated pod request.
type request struct {
	shape   int32 // index into Placer.shapes
	cpu     int64 // actual CPU request (feasibility, accounting)
	cpuS    int64 // CPU as scored (non-zero default)
	mem     int64
	num     int32 // GPUs
	milli   int32 // per GPU (0 for CPU-only)
	allowed []bool
	tag     int // GPU affinity tag: -1 none, 0 shared, k = k whole GPUs
}

type cacheEntry struct {
	ver   uint32 // node version + 1 this entry was computed at; 0 = empty
	ok    bool   // feasible
	gpu   int16  // chosen local GPU index for fractional pods, else -1
	score int32
}

type shapeKey struct {
	cpu, mem   int64
	num, milli int32
	models     string
}

// Placer places pods one at a time on a sim.Cluster with one of the FGD paper's
// policies, reproducing the authors' simulator: a node is feasible when it has the
// CPU and memory, an allowed GPU model and enough GPUs with the per-GPU milli free
// (whole GPUs must be unused); each feasible node gets an integer score in 0..100;
// the highest score wins and ties are broken by a uniform draw from the Placer's
// seeded stream (kube-scheduler's selectHost).
//
// The Placer keeps a private mirror of the per-node free resources and a per-(node,
// shape) score cache, both kept right by Commit. If the cluster is changed by
// anything else, call Sync (all nodes) or SyncNode before the next Place.
// A Placer is not safe for concurrent use.
type Placer struct {
	c    *sim.Cluster
	kind policyKind
	meas *Measure
	rng  *rand.Rand

	// mirror of the cluster
	first   []int32 // GPU offset of each node, len nodes+1
	left    []int32 // free milli per GPU
	cpuLeft []int64
	memLeft []int64
	model   []int16
	ver     []uint32
	seen    []uint32 // cluster NodeVersion at the last read of each node
	affW    int      // affinity tags per node (maxGPUs+1)
	aff     []int32  // [node*affW+tag] pods with that tag on the node
	naff    []int32  // distinct tags present per node
	frag    []float64
	idle    []float64
	fragSum float64
	idleSum float64

	shapes  map[shapeKey]int32
	cache   [][]cacheEntry
	allowed map[string][]bool
	rank    []int32               // tie-break order: a seeded permutation of the nodes (by name)
	allow   func(sim.NodeID) bool // during PlaceGangWithin: the nodes it may use
}

// NewPlacer builds a Placer for policy on cluster c. tw is the target workload of
// the fragmentation measure; it is required by fgd and used by every policy for
// Frag (the fill experiment's metric). seed seeds the stream
// "fgd/policy/<policy>".
func NewPlacer(c *sim.Cluster, policy string, tw *TargetWorkload, seed uint64) (*Placer, error) {
	if c == nil {
		return nil, fmt.Errorf("fgd: nil cluster")
	}
	kind, err := parsePolicy(policy)
	if err != nil {
		return nil, err
	}
	meas, err := NewMeasure(c, tw)
	if err != nil {
		return nil, err
	}
	nn := c.NumNodes()
	p := &Placer{
		c: c, kind: kind, meas: meas,
		rng:     sim.Stream(seed, "fgd/policy/"+policy),
		first:   make([]int32, nn+1),
		left:    make([]int32, c.NumGPUs()),
		cpuLeft: make([]int64, nn),
		memLeft: make([]int64, nn),
		model:   make([]int16, nn),
		ver:     make([]uint32, nn),
		seen:    make([]uint32, nn),
		affW:    int(c.MaxGPUsPerNode()) + 1,
		naff:    make([]int32, nn),
		frag:    make([]float64, nn),
		idle:    make([]float64, nn),
		shapes:  map[shapeKey]int32{},
		allowed: map[string][]bool{},
	}
	p.aff = make([]int32, nn*p.affW)
	byName := make([]int, nn)
	for i := range byName {
		byName[i] = i
	}
	sort.SliceStable(byName, func(a, b int) bool { return c.Node(sim.NodeID(byName[a])).Name < c.Node(sim.NodeID(byName[b])).Name })
	perm := sim.Stream(seed, "fgd/nodes").Perm(nn)
	p.rank = make([]int32, nn)
	for i, n := range byName {
		p.rank[n] = int32(perm[i])
	}
	for n := 0; n < nn; n++ {
		f, e := c.NodeGPUs(sim.NodeID(n))
		p.first[n], p.first[n+1] = int32(f), int32(e)
		p.model[n] = int16(c.NodeModel(sim.NodeID(n)))
	}
	p.Sync()
	return p, nil
}

// SetTarget replaces the target workload of the fragmentation measure (a live
// run's workload grows as jobs are submitted) and re-reads every node, so
// that no score of the former measure stays cached. The random streams and
// the gpu-clustering affinity counts are kept.
func (p *Placer) SetTarget(tw *TargetWorkload) error {
	meas, err := NewMeasure(p.c, tw)
	if err != nil {
		return err
	}
	p.meas = meas
	p.Sync()
	return nil
}

// Sync re-reads every node's free resources from the cluster and drops all cached
// scores. GPU-affinity counts (gpu-clustering) are kept: the cluster does not
// record which pod shapes run where, so only Commit maintains them.
func (p *Placer) Sync() {
	p.fragSum, p.idleSum = 0, 0
	for n := range p.cpuLeft {
		p.syncNode(sim.NodeID(n))
		p.fragSum += p.frag[n]
		p.idleSum += p.idle[n]
	}
}

// SyncNode re-reads node n from the cluster and drops its cached scores.
func (p *Placer) SyncNode(n sim.NodeID) {
	if n < 0 || int(n) >= len(p.cpuLeft) {
		return
	}
	p.fragSum -= p.frag[n]
	p.idleSum -= p.idle[n]
	p.syncNode(n)
	p.fragSum += p.frag[n]
	p.idleSum += p.idle[n]
}

func (p *Placer) syncNode(n sim.NodeID) {
	p.seen[n] = p.c.NodeVersion(n)
	p.cpuLeft[n] = p.c.NodeFreeCPU(n)
	p.memLeft[n] = p.c.NodeFreeMemory(n)
	for g := p.first[n]; g < p.first[n+1]; g++ {
		p.left[g] = int32(sim.WholeGPU - p.c.GPUUsed(sim.GPUID(g)))
		if p.c.GPUMode(sim.GPUID(g)) == sim.ShareMIG {
			p.left[g] = 0 // MIG instances are placed by the device level, never by FGD
		}
	}
	p.ver[n]++
	p.frag[n], p.idle[n] = p.meas.nodeFrag(int(p.model[n]), p.cpuLeft[n], p.left[p.first[n]:p.first[n+1]])
}

// Refresh re-reads the nodes whose sim.Cluster.NodeVersion moved since the Placer
// last read them: use it before Place when something other than Commit changes
// the cluster (an engine starting and ending jobs in a time replay). O(nodes),
// and only changed nodes lose their cached scores.
func (p *Placer) Refresh() {
	for n := range p.seen {
		if p.seen[n] != p.c.NodeVersion(sim.NodeID(n)) {
			p.SyncNode(sim.NodeID(n))
		}
	}
}

// Frag returns the cluster fragmentation as the Placer's mirror sees it (kept
// incrementally; equal to Measure.Cluster on the synced cluster up to rounding).
func (p *Placer) Frag() Frag { return Frag{FragMilli: p.fragSum, IdleMilli: p.idleSum} }

// Measure returns the compiled fragmentation measure the Placer uses.
func (p *Placer) Measure() *Measure { return p.meas }

// request validates a pod and interns its shape.
func (p *Placer) request(j *sim.JobSpec) (request, error) {
	if j == nil {
		return request{}, fmt.Errorf("fgd: nil pod")
	}
	if j.Replicas != 1 {
		return request{}, fmt.Errorf("fgd: pod %s has %d replicas; FGD places single pods", j.ID, j.Replicas)
	}
	if j.CPUMilli < 0 || j.MemoryMiB < 0 || j.GPUsPerReplica < 0 {
		return request{}, fmt.Errorf("fgd: pod %s has a negative request", j.ID)
	}
	r := request{cpu: j.CPUMilli, cpuS: j.CPUMilli, mem: j.MemoryMiB, num: j.GPUsPerReplica, tag: -1}
	if r.cpuS == 0 {
		r.cpuS = nonZeroCPU
	}
	if r.num > 0 {
		if j.GPUMilli < 1 || j.GPUMilli > sim.WholeGPU {
			return request{}, fmt.Errorf("fgd: pod %s asks %d milli per GPU (want 1..1000)", j.ID, j.GPUMilli)
		}
		if j.GPUMilli < sim.WholeGPU && r.num != 1 {
			return request{}, fmt.Errorf("fgd: pod %s shares GPUs but asks %d of them (a fractional pod uses exactly one)", j.ID, r.num)
		}
		r.milli = int32(j.GPUMilli)
		if r.milli < int32(sim.WholeGPU) {
			r.tag = 0
		} else {
			r.tag = int(r.num)
		}
	}
	models := strings.Join(j.GPUModels, "|")
	if r.num > 0 && models != "" {
		a, ok := p.allowed[models]
		if !ok {
			sh := Shape{Models: models}
			a = make([]bool, len(p.c.Models()))
			for i, m := range p.c.Models() {
				a[i] = sh.allows(m)
			}
			p.allowed[models] = a
		}
		r.allowed = a
	}
	k := shapeKey{r.cpu, r.mem, r.num, r.milli, models}
	id, ok := p.shapes[k]
	if !ok {
		id = int32(len(p.cache))
		p.shapes[k] = id
		p.cache = append(p.cache, make([]cacheEntry, len(p.cpuLeft)))
	}
	r.shape = id
	return r, nil
}

// Place chooses a placement for pod j on the current cluster without changing it.
// ok is false when no node can hold the pod. An invalid pod (several replicas, a
// fractional share of more than one GPU, out-of-range values) gives an error.
func (p *Placer) Place(j *sim.JobSpec) (pl Placement, ok bool, err error) {
	r, err := p.request(j)
	if err != nil {
		return Placement{}, false, err
	}
	n, gpu, ok := p.choose(&r)
	if !ok {
		return Placement{}, false, nil
	}
	return Placement{Node: n, GPUs: p.pickGPUs(&r, n, gpu)}, true, nil
}

// PlaceGang places every replica of job j as a pod of j's per-replica shape, one
// after the other: a replica sees the earlier ones as used (on the Placer's mirror
// only; the cluster is not changed and the mirror is re-read from it before
// PlaceGang returns). Replica r goes to nodes[r] with gpus[r*g:(r+1)*g], appended
// to the given slices. ok is false, with the slices truncated to their original
// length, when some replica has no feasible node. A fractional job is one 1-GPU
// replica (sim.JobSpec.Validate). Gang replicas are scored independently, as
// kube-scheduler schedules a gang's pods one by one.
func (p *Placer) PlaceGang(j *sim.JobSpec, nodes []sim.NodeID, gpus []sim.GPUID) ([]sim.NodeID, []sim.GPUID, bool, error) {
	return p.PlaceGangWithin(j, nil, nodes, gpus)
}

// PlaceGangWithin is PlaceGang using only the nodes for which allow returns true
// (all nodes when allow is nil): the scores of the other nodes are unchanged, the
// choice is the best allowed one.
func (p *Placer) PlaceGangWithin(j *sim.JobSpec, allow func(sim.NodeID) bool, nodes []sim.NodeID, gpus []sim.GPUID) ([]sim.NodeID, []sim.GPUID, bool, error) {
	p.allow = allow
	defer func() { p.allow = nil }()
	if j == nil {
		return nodes, gpus, false, fmt.Errorf("fgd: nil pod")
	}
	one := *j
	one.Replicas = 1
	r, err := p.request(&one)
	if err != nil {
		return nodes, gpus, false, err
	}
	n0, g0 := len(nodes), len(gpus)
	reps := max(j.Replicas, 1)
	ok := true
	for k := int32(0); k < reps; k++ {
		n, gpu, fits := p.choose(&r)
		if !fits {
			ok = false
			break
		}
		gs := p.pickGPUs(&r, n, gpu)
		nodes = append(nodes, n)
		gpus = append(gpus, gs...)
		if k+1 < reps {
			p.cpuLeft[n] -= r.cpu
			p.memLeft[n] -= r.mem
			for _, g := range gs {
				p.left[g] -= r.milli
			}
			p.ver[n]++ // the cached scores of n are stale until SyncNode
		}
	}
	if reps > 1 {
		for _, n := range nodes[n0:] {
			p.SyncNode(n) // undo the virtual commits (idempotent for repeats)
		}
	}
	if !ok {
		return nodes[:n0], gpus[:g0], false, nil
	}
	return nodes, gpus, true, nil
}

// PlaceAndCommit places pod j and, if it fits, commits the placement.
func (p *Placer) PlaceAndCommit(j *sim.JobSpec) (Placement, bool, error) {
	r, err := p.request(j)
	if err != nil {
		return Placement{}, false, err
	}
	n, gpu, ok := p.choose(&r)
	if !ok {
		return Placement{}, false, nil
	}
	pl := Placement{Node: n, GPUs: p.pickGPUs(&r, n, gpu)}
	return pl, true, p.commit(&r, pl)
}

// Commit allocates pl for pod j on the cluster (sim.Cluster.Allocate) and updates
// the Placer's mirror, caches and affinity counts. It fails, changing nothing, if
// the cluster refuses the allocation.
func (p *Placer) Commit(j *sim.JobSpec, pl Placement) error {
	r, err := p.request(j)
	if err != nil {
		return err
	}
	return p.commit(&r, pl)
}

func (p *Placer) commit(r *request, pl Placement) error {
	if int(len(pl.GPUs)) != int(r.num) {
		return fmt.Errorf("fgd: placement has %d GPUs, pod asks %d", len(pl.GPUs), r.num)
	}
	if err := p.c.Allocate(pl.Node, pl.GPUs, sim.MilliGPU(r.milli), r.cpu, r.mem); err != nil {
		return fmt.Errorf("fgd: %w", err)
	}
	n := pl.Node
	if r.tag >= 0 && r.tag < p.affW {
		i := int(n)*p.affW + r.tag
		if p.aff[i] == 0 {
			p.naff[n]++
		}
		p.aff[i]++
	}
	p.SyncNode(n)
	return nil
}

// choose scans all nodes (cached per shape) and returns the winner: the highest
// score, ties to the lowest rank (the authors' selectHost picks the smallest node
// name, and their node names start with a seeded random permutation index). The
// random policy instead draws uniformly among the feasible nodes (its PreScore).
func (p *Placer) choose(r *request) (sim.NodeID, int16, bool) {
	cache := p.cache[r.shape]
	best := int32(math.MinInt32)
	bestN := sim.NodeID(-1)
	feasible := 0
	for n := range cache {
		e := &cache[n]
		if e.ver != p.ver[n] {
			*e = p.evaluate(r, sim.NodeID(n))
			e.ver = p.ver[n]
		}
		if !e.ok || p.allow != nil && !p.allow(sim.NodeID(n)) {
			continue
		}
		feasible++
		if e.score > best || (e.score == best && p.rank[n] < p.rank[bestN]) {
			best, bestN = e.score, sim.NodeID(n)
		}
	}
	if bestN < 0 {
		return 0, -1, false
	}
	if p.kind == kRandom && feasible > 1 {
		k := p.rng.IntN(feasible)
		for n := range cache {
			if cache[n].ok && (p.allow == nil || p.allow(sim.NodeID(n))) {
				if k == 0 {
					return sim.NodeID(n), cache[n].gpu, true
				}
				k--
			}
		}
	}
	return bestN, cache[bestN].gpu, true
}

// feasible reports whether node n can hold r now.
func (p *Placer) feasible(r *request, n sim.NodeID) bool {
	if p.cpuLeft[n] < r.cpu || p.memLeft[n] < r.mem {
		return false
	}
	if r.num == 0 {
		return true
	}
	if r.allowed != nil && !r.allowed[p.model[n]] {
		return false
	}
	var fit int32
	for _, l := range p.left[p.first[n]:p.first[n+1]] {
		if l >= r.milli {
			fit++
		}
	}
	return fit >= r.num
}

// evaluate computes feasibility, score and (fractional pods) GPU choice of node n.
func (p *Placer) evaluate(r *request, n sim.NodeID) cacheEntry {
	e := cacheEntry{gpu: -1}
	if !p.feasible(r, n) {
		return e
	}
	e.ok = true
	left := p.left[p.first[n]:p.first[n+1]]
	frac := r.num == 1 && r.milli < int32(sim.WholeGPU)
	if frac && p.kind != kFGD && p.kind != kRandom {
		e.gpu = bestFitGPU(left, r.milli)
	}
	switch p.kind {
	case kRandom:
		e.score = 0
	case kBestFit:
		e.score = p.bestFitScore(r, n)
	case kDot:
		e.score = p.dotScore(r, n)
	case kPacking:
		e.score = packingScore(r, left)
	case kClustering:
		e.score = p.clusteringScore(r, n)
	case kFGD:
		e.score, e.gpu = p.fgdScore(r, n, frac)
	}
	return e
}

// bestFitGPU is the authors' allocateGpuIdBasedOnBestFit for a fractional pod: the
// GPU with the least free milli that still fits, lowest index on ties.
func bestFitGPU(left []int32, milli int32) int16 {
	best := int16(-1)
	for i, l := range left {
		if l >= milli && (best < 0 || l < left[best]) {
			best = int16(i)
		}
	}
	return best
}

func totalLeft(left []int32) int64 {
	var t int64
	for _, l := range left {
		t += int64(l)
	}
	return t
}

// bestFitScore: score = 100 x (1 - sum_i w_i (free_i - req_i)/maxSpec_i) over (CPU,
// total GPU milli) with w = (0.5, 0.5), truncated to an integer. The authors then
// min-max normalise the scores, which keeps the argmax set unchanged.
func (p *Placer) bestFitScore(r *request, n sim.NodeID) int32 {
	free := [2]float64{float64(p.cpuLeft[n]), float64(totalLeft(p.left[p.first[n]:p.first[n+1]]))}
	req := [2]float64{float64(r.cpuS), float64(int64(r.milli) * int64(r.num))}
	spec := [2]float64{maxSpecCPU, maxSpecGPU}
	var s float64
	for i := 0; i < 2; i++ {
		if free[i] < req[i] {
			return 0 // the authors' plugin errors out here; only reachable with a zero CPU request
		}
		s += (free[i] - req[i]) / spec[i] * 0.5
	}
	s = (1.0 - s) * maxScore
	return int32(int64(s))
}

// dotScore is the authors' DotProductScore with dimExtMethod "merge" and normMethod
// "max": node (free CPU, total free milli-GPU) and pod (CPU, total milli-GPU), both
// divided by (128000, 8000); score = 100 x (1 - dot/2), truncated. A smaller dot
// product (less aligned free room) scores higher.
func (p *Placer) dotScore(r *request, n sim.NodeID) int32 {
	if p.cpuLeft[n] < r.cpuS {
		return 0
	}
	nodeVec := [2]float64{float64(p.cpuLeft[n]) / maxSpecCPU, float64(totalLeft(p.left[p.first[n]:p.first[n+1]])) / maxSpecGPU}
	podVec := [2]float64{float64(r.cpuS) / maxSpecCPU, float64(int64(r.milli)*int64(r.num)) / maxSpecGPU}
	var dot float64
	for i := 0; i < 2; i++ {
		dot += nodeVec[i] * podVec[i]
	}
	cur := 1 - dot/2
	return int32(int64(maxScore * cur))
}

// packingScore is the authors' GpuPackingScore: (1) a pod that fits on already
// shared GPUs scores 100 - (their free percent)/10, at least 50; (2) one that must
// open fully free GPUs of a used node scores 50 - (GPUs opened), at least 33; (3) on
// a completely free node max(33 - free GPUs, free GPUs). CPU-only pods score 0.
func packingScore(r *request, left []int32) int32 {
	if r.num == 0 {
		return 0
	}
	fullyFree := 0
	for _, l := range left {
		if l == int32(sim.WholeGPU) {
			fullyFree++
		}
	}
	if fullyFree == len(left) {
		return int32(max(maxScore/3-fullyFree, fullyFree))
	}
	// GPUs in ascending free order (stable), taking those that fit.
	var idx [64]int
	order := sortedAsc(left, idx[:0])
	need := r.num
	opened := 0
	var freePct int64
	for _, i := range order {
		if need == 0 {
			break
		}
		if r.milli <= left[i] {
			need--
			if left[i] == int32(sim.WholeGPU) {
				opened++
			}
			freePct += int64(left[i]) * 100 / int64(sim.WholeGPU)
		}
	}
	if need != 0 {
		return 0
	}
	if opened > 0 {
		return int32(max(maxScore/2-opened, maxScore/3))
	}
	return int32(max(maxScore-freePct/10, maxScore/2))
}

// sortedAsc returns the indices of left in ascending order of value (stable).
func sortedAsc(left []int32, idx []int) []int {
	for i := range left {
		idx = append(idx, i)
	}
	// insertion sort: stable, tiny n
	for i := 1; i < len(idx); i++ {
		for k := i; k > 0 && left[idx[k]] < left[idx[k-1]]; k-- {
			idx[k], idx[k-1] = idx[k-1], idx[k]
		}
	}
	return idx
}

// clusteringScore is the authors' GpuClusteringScore. With u = 25 x (8000 - node's
// free milli) / 8000 (integer arithmetic): a node running only pods of the same GPU
// request type ("share-gpu" or "k-gpu") scores 75 + u, a node that also runs other
// types 50 + u, an idle node 25 + u, a node running only other types u. CPU-only
// pods score 0.
func (p *Placer) clusteringScore(r *request, n sim.NodeID) int32 {
	if r.tag < 0 {
		return 0
	}
	u := int64(maxScore/4) * (maxSpecGPU - totalLeft(p.left[p.first[n]:p.first[n+1]])) / maxSpecGPU
	same := r.tag < p.affW && p.aff[int(n)*p.affW+r.tag] > 0
	switch {
	case same && p.naff[n] == 1:
		return int32(u + maxScore*3/4)
	case same:
		return int32(u + maxScore*2/4)
	case p.naff[n] == 0:
		return int32(u + maxScore/4)
	default:
		return int32(u)
	}
}

func sigmoid(x float64) float64 { return 1.0 / (1.0 + math.Exp(-x)) }

// fgdScore is the authors' FGDScore: 100 x sigmoid((F_before - F_after)/1000),
// truncated, where F is the node's fragmentation. A fractional pod tries every GPU
// with room and keeps the first with the highest score; a whole-GPU pod takes fully
// free GPUs; a CPU-only pod changes only the free CPU.
func (p *Placer) fgdScore(r *request, n sim.NodeID, frac bool) (int32, int16) {
	left := p.left[p.first[n]:p.first[n+1]]
	before := p.frag[n]
	mdl := int(p.model[n])
	cpuAfter := p.cpuLeft[n] - r.cpuS
	var buf [64]int32
	after := append(buf[:0], left...)
	quant := func(fa float64) int32 {
		d := before - fa
		d = math.Round(d*1e6) / 1e6 // drop float noise so that "no change" is exactly 50
		return int32(int64(sigmoid(d/1000) * maxScore))
	}
	if !frac {
		if r.num > 0 {
			need := r.num
			for i := range after {
				if need == 0 {
					break
				}
				if after[i] == int32(sim.WholeGPU) {
					after[i] = 0
					need--
				}
			}
		}
		fa, _ := p.meas.nodeFrag(mdl, cpuAfter, after)
		return quant(fa), -1
	}
	best, gpu := int32(0), int16(-1)
	for i, l := range left {
		if l < r.milli {
			continue
		}
		dup := false
		for k := 0; k < i; k++ {
			if left[k] == l {
				dup = true // same free share gives the same state; the lower index was tried
				break
			}
		}
		if dup {
			continue
		}
		after[i] = l - r.milli
		fa, _ := p.meas.nodeFrag(mdl, cpuAfter, after)
		after[i] = l
		s := quant(fa)
		if gpu < 0 || s > best {
			best, gpu = s, int16(i)
		}
	}
	return best, gpu
}

// pickGPUs turns the chosen node (and cached GPU for fractional pods) into GPU ids:
// fractional pods use the scorer's GPU (random policy: a uniform draw among GPUs
// with room), whole-GPU pods take the lowest-indexed fully free GPUs (the authors'
// AllocateExclusiveGpuId).
func (p *Placer) pickGPUs(r *request, n sim.NodeID, gpu int16) []sim.GPUID {
	if r.num == 0 {
		return nil
	}
	left := p.left[p.first[n]:p.first[n+1]]
	base := sim.GPUID(p.first[n])
	if r.num == 1 && r.milli < int32(sim.WholeGPU) {
		if p.kind == kRandom {
			cnt := 0
			for i, l := range left {
				if l >= r.milli {
					cnt++
					if p.rng.IntN(cnt) == 0 {
						gpu = int16(i)
					}
				}
			}
		}
		if gpu < 0 {
			gpu = bestFitGPU(left, r.milli)
		}
		return []sim.GPUID{base + sim.GPUID(gpu)}
	}
	out := make([]sim.GPUID, 0, r.num)
	for i, l := range left {
		if len(out) == int(r.num) {
			break
		}
		if l == int32(sim.WholeGPU) {
			out = append(out, base+sim.GPUID(i))
		}
	}
	return out
}
