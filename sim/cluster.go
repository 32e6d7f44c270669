package sim

import (
	"fmt"
	"math/bits"
	"slices"
	"sort"
)

// NodeID is the dense index of a node in a Cluster (0..NumNodes-1), in pool order.
type NodeID int32

// GPUID is the dense index of a GPU in a Cluster (0..NumGPUs-1); the GPUs of a node
// are contiguous.
type GPUID int32

// Level is a level of the topology tree, from the tightest GPU group to the whole
// fabric. Every GPU has exactly one domain at each level.
type Level uint8

// Topology levels, tightest first.
const (
	LevelNVLink Level = iota // GPUs joined by NVLink/NVSwitch (may span nodes, e.g. NVL72)
	LevelPCIe                // GPUs under one PCIe switch
	LevelSocket              // GPUs attached to one CPU socket (NUMA node)
	LevelNode                // one machine
	LevelLeaf                // a leaf switch / rack / rail group
	LevelSpine               // a spine block (pod of leaves)
	NumLevels
)

var levelNames = [NumLevels]string{"nvlink", "pcie", "socket", "node", "leaf", "spine"}

// String returns the level's name as used in scenarios.
func (l Level) String() string {
	if l < NumLevels {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", l)
}

// ParseLevel maps a level name to a Level.
func ParseLevel(s string) (Level, error) {
	for i, n := range levelNames {
		if n == s {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("unknown topology level %q (want nvlink, pcie, socket, node, leaf or spine)", s)
}

// NodeSpec describes one machine. GPUs of a node are of one model.
type NodeSpec struct {
	Name      string
	Pool      string
	GPUModel  string
	GPUs      int32
	GPUMemMiB int64
	CPUMilli  int64
	MemoryMiB int64
	// NVLinkSize, PCIeSize and SocketSize group consecutive GPUs of the node:
	// GPU i is in NVLink group i/NVLinkSize, PCIe switch i/PCIeSize, socket i/SocketSize.
	// A size of 0 means "all GPUs of the node".
	NVLinkSize, PCIeSize, SocketSize int32
	// NVLinkDomain, when > 0, puts all GPUs of this node into that cluster-wide
	// NVLink domain (racks such as GB200 NVL72 whose NVLink spans nodes); 0 or
	// negative means the node's own NVLink groups (NVLinkSize).
	NVLinkDomain int32
	Leaf, Spine  int32 // fabric position
	// Sharing is the device-level sharing mode of the node's GPUs (scenario
	// cluster.pools[].sharing.mode); SharingClients caps the jobs per shared GPU
	// (0 = DefaultSharingClients).
	Sharing        SharingMode
	SharingClients int32
	// MIGProfiles is the initial MIG layout of each GPU in mode ShareMIG
	// (profile names placed in order); MIGReconfigureCost is how long a
	// reconfiguration makes a GPU unusable.
	MIGProfiles        []string
	MIGReconfigureCost Duration
	// MIGSpeed optionally gives a measured speed factor per MIG profile name
	// (throughput on the instance / on the whole GPU); profiles not listed run at
	// their compute-slice share (slices / 7).
	MIGSpeed map[string]float64
}

// Domain is a node of the topology tree.
type Domain struct {
	Level  Level
	Parent int32 // index in the next level's domain table; -1 at the spine level
	GPUs   int32 // GPUs in the subtree
}

// Cluster is the modeled cluster: static description plus the live allocation state.
// The allocation state is changed only by the engine (and by test helpers through
// Allocate/Release); policies read it.
type Cluster struct {
	nodes   []NodeSpec
	models  []string // interned GPU model names, sorted
	nodeMdl []int16  // model index per node
	gpuNode []NodeID // node of each GPU
	first   []GPUID  // first GPU of each node
	gpuPath [][NumLevels]int32
	domains [NumLevels][]Domain

	// live state
	gpuUsed    []MilliGPU // milli allocated on each GPU
	nodeFree   []int32    // whole free GPUs per node
	cpuFree    []int64
	memFree    []int64
	nodeVer    []uint32           // per node: bumped on every change of its GPUs, CPU or memory
	domFree    [NumLevels][]int32 // whole free GPUs per domain
	domHist    [NumLevels][]int32 // number of domains per free count
	domMax     [NumLevels]int32   // largest free count of any domain
	buckets    [][]bitset         // [model][free count] -> nodes with exactly that many free GPUs
	maxGPUs    int32
	totalGPUs  int64
	freeGPUs   int64
	allocMilli int64
	freeCPUAll int64
	freeMemAll int64
	modelGPUs  []int64 // capacity per model
	modelFree  []int64 // whole free GPUs per model

	// device-level sharing (nil when every GPU is exclusive)
	gpuMode []SharingMode
	shrN    []int16 // sharers per GPU
	shrMem  []int64 // GPU memory used by sharers (MiB)
	shrOpen bitset  // GPUs with sharers and room for another client
	mig     *migState
	// servQoS is the engine's serving co-location check (nil without serving
	// jobs; see CanShare).
	servQoS func(s *JobSpec, g GPUID, leaving []*Job) bool
}

type bitset []uint64

func (b bitset) set(i int)   { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) clear(i int) { b[i>>6] &^= 1 << (uint(i) & 63) }

// next returns the first set index >= i, or -1.
func (b bitset) next(i int) int {
	if i < 0 {
		i = 0
	}
	w := i >> 6
	if w >= len(b) {
		return -1
	}
	x := b[w] >> (uint(i) & 63)
	if x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	for w++; w < len(b); w++ {
		if b[w] != 0 {
			return w<<6 + bits.TrailingZeros64(b[w])
		}
	}
	return -1
}

// NewCluster builds a cluster from node specs (in the given order) and validates it.
func NewCluster(nodes []NodeSpec) (*Cluster, error) {
	if len(nodes) == 0 {
		return nil, fmt.Errorf("cluster has no nodes")
	}
	c := &Cluster{nodes: append([]NodeSpec(nil), nodes...)}
	mset := map[string]bool{}
	for i, n := range c.nodes {
		if n.GPUs < 0 || n.CPUMilli < 0 || n.MemoryMiB < 0 {
			return nil, fmt.Errorf("node %d (%s): negative capacity", i, n.Name)
		}
		if n.GPUs > 0 && n.GPUModel == "" {
			return nil, fmt.Errorf("node %d (%s): GPUs without a GPU model", i, n.Name)
		}
		if n.Sharing >= numSharingModes || n.SharingClients < 0 || n.SharingClients > 48 {
			return nil, fmt.Errorf("node %d (%s): invalid sharing mode %d or clients %d (want 0..48)", i, n.Name, n.Sharing, n.SharingClients)
		}
		if n.Sharing != ShareMIG && len(n.MIGProfiles) > 0 {
			return nil, fmt.Errorf("node %d (%s): MIG profiles without sharing mode mig", i, n.Name)
		}
		if n.GPUs > 0 {
			mset[n.GPUModel] = true
		}
		if n.GPUs > c.maxGPUs {
			c.maxGPUs = n.GPUs
		}
	}
	for m := range mset {
		c.models = append(c.models, m)
	}
	sort.Strings(c.models)
	if len(c.models) == 0 {
		c.models = []string{""}
	}
	midx := map[string]int16{}
	for i, m := range c.models {
		midx[m] = int16(i)
	}
	nn := len(c.nodes)
	c.nodeMdl = make([]int16, nn)
	c.first = make([]GPUID, nn+1)
	c.nodeFree = make([]int32, nn)
	c.cpuFree = make([]int64, nn)
	c.nodeVer = make([]uint32, nn)
	c.memFree = make([]int64, nn)
	c.modelGPUs = make([]int64, len(c.models))
	c.modelFree = make([]int64, len(c.models))
	words := (nn + 63) / 64
	c.buckets = make([][]bitset, len(c.models))
	for m := range c.buckets {
		c.buckets[m] = make([]bitset, c.maxGPUs+1)
		for k := range c.buckets[m] {
			c.buckets[m][k] = make(bitset, words)
		}
	}
	// Domain ids: NVLink/PCIe/socket are numbered globally in node order; explicit
	// NVLink domains (>= 0) are shared across nodes. Leaves and spines use the
	// node's fabric position.
	type key struct {
		lvl  Level
		a, b int32
	}
	ids := map[key]int32{}
	domID := func(l Level, a, b int32) int32 {
		k := key{l, a, b}
		if id, ok := ids[k]; ok {
			return id
		}
		id := int32(len(c.domains[l]))
		ids[k] = id
		c.domains[l] = append(c.domains[l], Domain{Level: l, Parent: -1})
		return id
	}
	var g GPUID
	for i := range c.nodes {
		n := &c.nodes[i]
		c.first[i] = g
		c.nodeMdl[i] = midx[n.GPUModel]
		c.nodeFree[i] = n.GPUs
		c.cpuFree[i] = n.CPUMilli
		c.memFree[i] = n.MemoryMiB
		c.freeCPUAll += n.CPUMilli
		c.freeMemAll += n.MemoryMiB
		c.modelGPUs[c.nodeMdl[i]] += int64(n.GPUs)
		c.buckets[c.nodeMdl[i]][n.GPUs].set(i)
		size := func(s int32) int32 {
			if s <= 0 || s > n.GPUs {
				return max(n.GPUs, 1)
			}
			return s
		}
		spine := domID(LevelSpine, n.Spine, 0)
		leaf := domID(LevelLeaf, n.Leaf, n.Spine)
		node := domID(LevelNode, int32(i), 0)
		c.domains[LevelLeaf][leaf].Parent = spine
		c.domains[LevelNode][node].Parent = leaf
		for k := int32(0); k < n.GPUs; k++ {
			var p [NumLevels]int32
			p[LevelSpine], p[LevelLeaf], p[LevelNode] = spine, leaf, node
			p[LevelSocket] = domID(LevelSocket, int32(i), k/size(n.SocketSize))
			p[LevelPCIe] = domID(LevelPCIe, int32(i)<<8|p[LevelSocket]&0xff, k/size(n.PCIeSize))
			if n.NVLinkDomain > 0 {
				p[LevelNVLink] = domID(LevelNVLink, -1-n.NVLinkDomain, 0)
			} else {
				p[LevelNVLink] = domID(LevelNVLink, int32(i), k/size(n.NVLinkSize))
			}
			c.domains[LevelSocket][p[LevelSocket]].Parent = node
			c.domains[LevelPCIe][p[LevelPCIe]].Parent = p[LevelSocket]
			if n.NVLinkDomain <= 0 {
				c.domains[LevelNVLink][p[LevelNVLink]].Parent = p[LevelPCIe]
			}
			for l := Level(0); l < NumLevels; l++ {
				c.domains[l][p[l]].GPUs++
			}
			c.gpuPath = append(c.gpuPath, p)
			c.gpuNode = append(c.gpuNode, NodeID(i))
			g++
		}
	}
	c.first[nn] = g
	c.totalGPUs = int64(g)
	c.freeGPUs = int64(g)
	c.gpuUsed = make([]MilliGPU, g)
	for l := Level(0); l < NumLevels; l++ {
		c.domFree[l] = make([]int32, len(c.domains[l]))
		var top int32
		for _, d := range c.domains[l] {
			top = max(top, d.GPUs)
		}
		c.domHist[l] = make([]int32, top+1)
		for i, d := range c.domains[l] {
			c.domFree[l][i] = d.GPUs
			c.domHist[l][d.GPUs]++
		}
		c.domMax[l] = top
	}
	copy(c.modelFree, c.modelGPUs)
	c.initSharing()
	return c, nil
}

// NumNodes returns the number of nodes.
func (c *Cluster) NumNodes() int { return len(c.nodes) }

// NumGPUs returns the number of GPUs.
func (c *Cluster) NumGPUs() int64 { return c.totalGPUs }

// Node returns the static spec of node n.
func (c *Cluster) Node(n NodeID) *NodeSpec { return &c.nodes[n] }

// Models returns the GPU models present, sorted by name. Do not modify.
func (c *Cluster) Models() []string { return c.models }

// NodeModel returns the model index (into Models) of node n.
func (c *Cluster) NodeModel(n NodeID) int { return int(c.nodeMdl[n]) }

// ModelIndex returns the index of model m in Models, or -1.
func (c *Cluster) ModelIndex(m string) int {
	i := sort.SearchStrings(c.models, m)
	if i < len(c.models) && c.models[i] == m {
		return i
	}
	return -1
}

// ModelCapacity returns the number of GPUs of model index m.
func (c *Cluster) ModelCapacity(m int) int64 { return c.modelGPUs[m] }

// ModelFree returns the whole free GPUs of model index m.
func (c *Cluster) ModelFree(m int) int64 { return c.modelFree[m] }

// MaxGPUsPerNode returns the largest GPU count of any node.
func (c *Cluster) MaxGPUsPerNode() int32 { return c.maxGPUs }

// NodeGPUs returns the GPU id range [first, end) of node n.
func (c *Cluster) NodeGPUs(n NodeID) (first, end GPUID) { return c.first[n], c.first[n+1] }

// GPUNode returns the node of GPU g.
func (c *Cluster) GPUNode(g GPUID) NodeID { return c.gpuNode[g] }

// GPUDomain returns the domain index of GPU g at level l.
func (c *Cluster) GPUDomain(g GPUID, l Level) int32 { return c.gpuPath[g][l] }

// Domains returns the domain table of level l. Do not modify.
func (c *Cluster) Domains(l Level) []Domain { return c.domains[l] }

// DomainFree returns the whole free GPUs in domain d of level l.
func (c *Cluster) DomainFree(l Level, d int32) int32 { return c.domFree[l][d] }

// GPUUsed returns the milli-GPU allocated on GPU g.
func (c *Cluster) GPUUsed(g GPUID) MilliGPU { return c.gpuUsed[g] }

// NodeFreeGPUs returns the whole free GPUs of node n.
func (c *Cluster) NodeFreeGPUs(n NodeID) int32 { return c.nodeFree[n] }

// NodeVersion returns a counter that changes whenever node n's allocated GPUs,
// CPU or memory change (it may wrap; compare for equality only). Placers that
// keep a mirror of the free resources (the FGD family) re-read a node only when
// its version moved.
func (c *Cluster) NodeVersion(n NodeID) uint32 { return c.nodeVer[n] }

// NodeFreeCPU returns the free CPU millicores of node n.
func (c *Cluster) NodeFreeCPU(n NodeID) int64 { return c.cpuFree[n] }

// NodeFreeMemory returns the free memory (MiB) of node n.
func (c *Cluster) NodeFreeMemory(n NodeID) int64 { return c.memFree[n] }

// FreeGPUs returns the number of whole free GPUs in the cluster.
func (c *Cluster) FreeGPUs() int64 { return c.freeGPUs }

// FreeCPU returns the free CPU millicores summed over all nodes.
func (c *Cluster) FreeCPU() int64 { return c.freeCPUAll }

// FreeMemory returns the free memory (MiB) summed over all nodes.
func (c *Cluster) FreeMemory() int64 { return c.freeMemAll }

// AllocatedMilli returns the milli-GPU allocated in the cluster.
func (c *Cluster) AllocatedMilli() int64 { return c.allocMilli }

// NextNodeWithFree returns the lowest node id >= from of model index m with exactly k
// whole free GPUs, or -1. Together with MaxGPUsPerNode it lets placement find the
// first/best/worst-fitting node without scanning every node.
func (c *Cluster) NextNodeWithFree(m int, k int32, from NodeID) NodeID {
	if k < 0 || k > c.maxGPUs {
		return -1
	}
	return NodeID(c.buckets[m][k].next(int(from)))
}

// CountNodesWithFree returns how many nodes of model index m have exactly k whole free GPUs.
func (c *Cluster) CountNodesWithFree(m int, k int32) int {
	n := 0
	for _, w := range c.buckets[m][k] {
		n += bits.OnesCount64(w)
	}
	return n
}

// CanHost reports whether node n has room now for one replica of spec using the given
// GPUs (whole GPUs must be unused; shared GPUs need spare milli) and its CPU/memory.
func (c *Cluster) fitsNode(n NodeID, cpu, mem int64) bool {
	return c.cpuFree[n] >= cpu && c.memFree[n] >= mem
}

// Allocate charges a replica's resources. It panics on over-allocation: the engine
// validates plans before calling it.
func (c *Cluster) allocate(n NodeID, gpus []GPUID, milli MilliGPU, cpu, mem int64) {
	c.nodeVer[n]++
	c.cpuFree[n] -= cpu
	c.memFree[n] -= mem
	c.freeCPUAll -= cpu
	c.freeMemAll -= mem
	if c.cpuFree[n] < 0 || c.memFree[n] < 0 {
		panic(fmt.Sprintf("sim: node %d over-allocated (cpu %d, mem %d)", n, c.cpuFree[n], c.memFree[n]))
	}
	for _, g := range gpus {
		before := c.gpuUsed[g]
		after := before + milli
		if after > WholeGPU {
			panic(fmt.Sprintf("sim: GPU %d over-allocated (%d milli)", g, after))
		}
		c.gpuUsed[g] = after
		c.allocMilli += int64(milli)
		if before == 0 {
			c.wholeDelta(g, -1)
		}
	}
}

func (c *Cluster) release(n NodeID, gpus []GPUID, milli MilliGPU, cpu, mem int64) {
	c.nodeVer[n]++
	c.cpuFree[n] += cpu
	c.memFree[n] += mem
	c.freeCPUAll += cpu
	c.freeMemAll += mem
	for _, g := range gpus {
		before := c.gpuUsed[g]
		after := before - milli
		if after < 0 {
			panic(fmt.Sprintf("sim: GPU %d released below zero", g))
		}
		c.gpuUsed[g] = after
		c.allocMilli -= int64(milli)
		if after == 0 {
			c.wholeDelta(g, +1)
		}
	}
}

func (c *Cluster) wholeDelta(g GPUID, d int32) {
	n := c.gpuNode[g]
	m := c.nodeMdl[n]
	c.buckets[m][c.nodeFree[n]].clear(int(n))
	c.nodeFree[n] += d
	c.buckets[m][c.nodeFree[n]].set(int(n))
	c.freeGPUs += int64(d)
	c.modelFree[m] += int64(d)
	p := &c.gpuPath[g]
	for l := Level(0); l < NumLevels; l++ {
		old := c.domFree[l][p[l]]
		nw := old + d
		c.domFree[l][p[l]] = nw
		h := c.domHist[l]
		h[old]--
		h[nw]++
		if nw > c.domMax[l] {
			c.domMax[l] = nw
		}
		for c.domMax[l] > 0 && h[c.domMax[l]] == 0 {
			c.domMax[l]--
		}
	}
}

// LargestFreeDomain returns the most whole free GPUs in any one domain of level l:
// the largest gang that could be placed inside one domain of that level (ignoring
// CPU, memory and GPU model). Maintained incrementally.
func (c *Cluster) LargestFreeDomain(l Level) int32 { return c.domMax[l] }

// SpanLevel returns the tightest topology level at which all gpus share one domain,
// or NumLevels when they span several spine blocks; ok is false for no GPUs.
func (c *Cluster) SpanLevel(gpus []GPUID) (l Level, ok bool) {
	if len(gpus) == 0 {
		return 0, false
	}
	for l = 0; l < NumLevels; l++ {
		d := c.gpuPath[gpus[0]][l]
		same := true
		for _, g := range gpus[1:] {
			if c.gpuPath[g][l] != d {
				same = false
				break
			}
		}
		if same {
			return l, true
		}
	}
	return NumLevels, true
}

// Reset frees every allocation (used between runs on a shared static description).
func (c *Cluster) Reset() {
	fresh, _ := NewCluster(c.nodes)
	*c = *fresh
}

// Clone returns an independent copy (static data shared, live state copied).
func (c *Cluster) Clone() *Cluster {
	d := *c
	d.gpuUsed = append([]MilliGPU(nil), c.gpuUsed...)
	d.nodeFree = append([]int32(nil), c.nodeFree...)
	d.cpuFree = append([]int64(nil), c.cpuFree...)
	d.memFree = append([]int64(nil), c.memFree...)
	d.nodeVer = append([]uint32(nil), c.nodeVer...)
	for l := range d.domFree {
		d.domFree[l] = append([]int32(nil), c.domFree[l]...)
		d.domHist[l] = append([]int32(nil), c.domHist[l]...)
	}
	d.buckets = make([][]bitset, len(c.buckets))
	for m := range c.buckets {
		d.buckets[m] = make([]bitset, len(c.buckets[m]))
		for k := range c.buckets[m] {
			d.buckets[m][k] = append(bitset(nil), c.buckets[m][k]...)
		}
	}
	d.modelFree = append([]int64(nil), c.modelFree...)
	if c.gpuMode != nil {
		d.shrN = append([]int16(nil), c.shrN...)
		d.shrMem = append([]int64(nil), c.shrMem...)
		d.shrOpen = append(bitset(nil), c.shrOpen...)
	}
	if c.mig != nil {
		m := *c.mig
		m.busy = append([]bool(nil), c.mig.busy...)
		m.inst = make([][]MIGInstance, len(c.mig.inst))
		for g, in := range c.mig.inst {
			m.inst[g] = append([]MIGInstance(nil), in...)
		}
		d.mig = &m
	}
	return &d
}

// Feasible reports whether spec could ever run on this cluster when it is empty:
// Replicas nodes of one allowed GPU model (every replica of a gang uses one model)
// each with room for one replica (GPUs, CPU, memory), or counting several replicas
// per node where they fit. The error says why not.
func (c *Cluster) Feasible(s *JobSpec) error {
	if s.MIGProfile != "" && !c.migProfileExists(s) {
		return fmt.Errorf("mig_profile %q: no allowed node has MIG-mode GPUs whose model has that profile", s.MIGProfile)
	}
	perModel := make([]int64, len(c.models))
	memOver := false
	var best int32
	anyNode := false
	for i := range c.nodes {
		n := &c.nodes[i]
		if n.GPUs > best {
			best = n.GPUs
		}
		if s.GPUsPerReplica > 0 && !s.AllowsModel(n.GPUModel) {
			continue
		}
		if s.GPUsPerReplica > 0 && n.Sharing == ShareMIG && !(s.Replicas == 1 && s.GPUsPerReplica == 1 && s.Accepts().Accepts(ShareMIG)) {
			continue // MIG-mode GPUs hold MIG jobs only
		}
		if s.GPUsPerReplica > 0 && s.GPUMemMiB > 0 && n.GPUMemMiB > 0 && s.GPUMemMiB > n.GPUMemMiB {
			memOver = true
			continue
		}
		k := int64(1 << 40)
		if s.GPUsPerReplica > 0 {
			k = int64(n.GPUs / s.GPUsPerReplica)
		}
		if s.CPUMilli > 0 {
			k = min(k, n.CPUMilli/s.CPUMilli)
		}
		if s.MemoryMiB > 0 {
			k = min(k, n.MemoryMiB/s.MemoryMiB)
		}
		if k <= 0 {
			continue
		}
		anyNode = true
		m := 0
		if s.GPUsPerReplica > 0 {
			m = int(c.nodeMdl[i])
		}
		perModel[m] += k
		if perModel[m] >= int64(s.Replicas) || s.Unequal() && perModel[m] >= int64(s.Replicas)-1 && c.feasibleRemainder(s, m) {
			return nil
		}
	}
	if !anyNode && memOver {
		return fmt.Errorf("gpu_mem_mib %d: more than the GPU memory of every allowed node", s.GPUMemMiB)
	}
	if !anyNode {
		return fmt.Errorf("needs %d GPUs (models %v), %d mCPU and %d MiB per replica; no node has that (largest node has %d GPUs)",
			s.GPUsPerReplica, modelsOrAny(s.GPUModels), s.CPUMilli, s.MemoryMiB, best)
	}
	return fmt.Errorf("needs %d replicas of %d GPUs on nodes of one GPU model; the cluster can hold at most %d", s.Replicas, s.GPUsPerReplica, slices.Max(perModel))
}

// feasibleRemainder reports whether some empty node of model index m holds the
// remainder replica of unequal gang s beside as many full replicas as fit there
// (Feasible's check for sim.JobSpec.LastReplicaGPUs).
func (c *Cluster) feasibleRemainder(s *JobSpec, m int) bool {
	for i := range c.nodes {
		n := &c.nodes[i]
		if int(c.nodeMdl[i]) != m || !s.AllowsModel(n.GPUModel) || n.Sharing == ShareMIG || s.GPUMemMiB > 0 && n.GPUMemMiB > 0 && s.GPUMemMiB > n.GPUMemMiB {
			continue
		}
		k := int64(n.GPUs / s.GPUsPerReplica)
		if s.CPUMilli > 0 {
			k = min(k, n.CPUMilli/s.CPUMilli-1)
		}
		if s.MemoryMiB > 0 {
			k = min(k, n.MemoryMiB/s.MemoryMiB-1)
		}
		if k >= 0 && int64(n.GPUs)-k*int64(s.GPUsPerReplica) >= int64(s.LastReplicaGPUs) {
			return true
		}
	}
	return false
}

func modelsOrAny(m []string) any {
	if len(m) == 0 {
		return "any"
	}
	return m
}

// Allocate charges one replica's resources on node n outside the engine (fill
// experiments, what-if planners, tests). It validates first and returns an error
// instead of over-allocating: every GPU must be on n with milli to spare (whole-GPU
// requests need an unused GPU), and the node must have the CPU and memory.
// Inside a simulation only the engine mutates the cluster.
func (c *Cluster) Allocate(n NodeID, gpus []GPUID, milli MilliGPU, cpu, mem int64) error {
	if n < 0 || int(n) >= len(c.nodes) {
		return fmt.Errorf("unknown node %d", n)
	}
	if !c.fitsNode(n, cpu, mem) {
		return fmt.Errorf("node %s lacks CPU or memory", c.nodes[n].Name)
	}
	if milli < 1 || milli > WholeGPU {
		if len(gpus) > 0 {
			return fmt.Errorf("milli %d out of range", milli)
		}
	}
	for i, g := range gpus {
		if g < 0 || int64(g) >= c.totalGPUs || c.gpuNode[g] != n {
			return fmt.Errorf("GPU %d is not on node %s", g, c.nodes[n].Name)
		}
		if milli >= WholeGPU && c.gpuUsed[g] != 0 || c.gpuUsed[g]+milli > WholeGPU {
			return fmt.Errorf("GPU %d has %d milli free, needs %d", g, WholeGPU-c.gpuUsed[g], milli)
		}
		for _, h := range gpus[:i] {
			if h == g {
				return fmt.Errorf("GPU %d given twice", g)
			}
		}
	}
	c.allocate(n, gpus, milli, cpu, mem)
	return nil
}

// Release undoes an Allocate with the same arguments.
func (c *Cluster) Release(n NodeID, gpus []GPUID, milli MilliGPU, cpu, mem int64) {
	c.release(n, gpus, milli, cpu, mem)
}
