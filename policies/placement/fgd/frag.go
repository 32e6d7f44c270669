package fgd

import (
	"sort"

	"github.com/gpusim/gpusim/sim"
)

// Measure evaluates the FGD fragmentation of nodes of one cluster against one target
// workload. It precompiles the workload per GPU model of the cluster so that a node
// costs O(groups x GPUs) instead of O(shapes x GPUs). A Measure is read-only after
// construction and safe for concurrent use.
//
// The fragmentation of node n (in milli-GPU) is
//
//	F_n = sum_m p_m * frag_n(m)
//
// where frag_n(m) is all idle milli-GPU of n unless m fits on n (enough GPUs each
// with at least m's per-GPU milli free, an allowed model, and enough free CPU: the
// paper's Q3), in which case it is only the idle milli on GPUs whose free share is
// smaller than m's per-GPU request. CPU-only shapes never "fit" in this sense (the
// authors count their XL/XR classes as fragmentation), so they contribute p_m x all
// idle milli. Memory is not part of the measure (as in the authors' code).
type Measure struct {
	sumP    float64
	byModel [][]fragGroup // [cluster model index] -> GPU groups of shapes allowed on it
}

// fragGroup is the set of target shapes with one (GPUs, milli) request allowed on a
// model, sorted by CPU so that "which of them fit the free CPU" is a prefix.
type fragGroup struct {
	num, milli int32
	cpu        []int64   // ascending
	cumP       []float64 // cumP[k] = sum of p over cpu[0..k]
}

// NewMeasure compiles tw for the GPU models of c. It fails if tw is invalid.
func NewMeasure(c *sim.Cluster, tw *TargetWorkload) (*Measure, error) {
	if err := tw.Validate(); err != nil {
		return nil, err
	}
	m := &Measure{byModel: make([][]fragGroup, len(c.Models()))}
	for _, p := range tw.Freq {
		m.sumP += p
	}
	type key struct{ num, milli int32 }
	for mi, model := range c.Models() {
		groups := map[key][]int{}
		var keys []key
		for i, s := range tw.Shapes {
			if s.GPUs == 0 || s.GPUMilli == 0 || !s.allows(model) {
				continue
			}
			k := key{s.GPUs, s.GPUMilli}
			if _, ok := groups[k]; !ok {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], i)
		}
		sort.Slice(keys, func(a, b int) bool {
			if keys[a].milli != keys[b].milli {
				return keys[a].milli < keys[b].milli
			}
			return keys[a].num < keys[b].num
		})
		for _, k := range keys {
			idx := groups[k]
			sort.Slice(idx, func(a, b int) bool {
				sa, sb := tw.Shapes[idx[a]], tw.Shapes[idx[b]]
				if sa.CPUMilli != sb.CPUMilli {
					return sa.CPUMilli < sb.CPUMilli
				}
				return idx[a] < idx[b]
			})
			g := fragGroup{num: k.num, milli: k.milli}
			var cum float64
			for _, i := range idx {
				cum += tw.Freq[i]
				g.cpu = append(g.cpu, tw.Shapes[i].CPUMilli)
				g.cumP = append(g.cumP, cum)
			}
			m.byModel[mi] = append(m.byModel[mi], g)
		}
	}
	return m, nil
}

// nodeFrag returns (fragmented, idle) milli-GPU of a node of model index mdl with
// cpuLeft free CPU and per-GPU free milli left. idle is sum(p) x free milli, which
// is the authors' "idle" (the sum over all classes of the frag amount).
func (m *Measure) nodeFrag(mdl int, cpuLeft int64, left []int32) (frag, idle float64) {
	var total int64
	for _, l := range left {
		total += int64(l)
	}
	if total == 0 {
		return 0, 0
	}
	ft := float64(total)
	frag = ft * m.sumP
	if mdl < 0 || mdl >= len(m.byModel) {
		return frag, frag
	}
	for gi := range m.byModel[mdl] {
		g := &m.byModel[mdl][gi]
		// Q3 needs the CPU of at least the cheapest shape of the group.
		if cpuLeft < g.cpu[0] {
			continue
		}
		var fit int32
		var sliver int64
		for _, l := range left {
			if l >= g.milli {
				fit++
			} else {
				sliver += int64(l)
			}
		}
		if fit < g.num {
			continue
		}
		// number of shapes with cpu <= cpuLeft
		k := sort.Search(len(g.cpu), func(i int) bool { return g.cpu[i] > cpuLeft })
		frag -= g.cumP[k-1] * float64(total-sliver)
	}
	if frag < 0 {
		frag = 0
	}
	return frag, ft * m.sumP
}

// NodeFragMilli returns the fragmentation of node n of c (milli-GPU) as seen now.
// Unknown nodes give 0.
func (m *Measure) NodeFragMilli(c *sim.Cluster, n sim.NodeID) float64 {
	if n < 0 || int(n) >= c.NumNodes() {
		return 0
	}
	var buf [16]int32
	left := nodeLeft(c, n, buf[:0])
	f, _ := m.nodeFrag(c.NodeModel(n), c.NodeFreeCPU(n), left)
	return f
}

// Cluster returns the cluster-wide fragmentation of c now.
func (m *Measure) Cluster(c *sim.Cluster) Frag {
	var out Frag
	var buf [16]int32
	for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
		left := nodeLeft(c, n, buf[:0])
		f, idle := m.nodeFrag(c.NodeModel(n), c.NodeFreeCPU(n), left)
		out.FragMilli += f
		out.IdleMilli += idle
	}
	return out
}

// nodeLeft appends the free milli of each GPU of node n to buf.
func nodeLeft(c *sim.Cluster, n sim.NodeID, buf []int32) []int32 {
	first, end := c.NodeGPUs(n)
	for g := first; g < end; g++ {
		buf = append(buf, int32(sim.WholeGPU-c.GPUUsed(g)))
	}
	return buf
}

// Frag is a fragmentation measurement in milli-GPU.
type Frag struct {
	FragMilli float64 // fragmented milli-GPU (sum over nodes of F_n)
	IdleMilli float64 // idle milli-GPU, as weighted by the target frequencies (sum p = 1)
}

// GPUs returns the fragmented amount in GPUs.
func (f Frag) GPUs() float64 { return f.FragMilli / 1000 }

// Ratio returns fragmented / idle in percent (0 when nothing is idle).
func (f Frag) Ratio() float64 {
	if f.IdleMilli <= 0 {
		return 0
	}
	return 100 * f.FragMilli / f.IdleMilli
}

// NodeFragMilli returns the fragmentation (milli-GPU) of node n of c against tw.
// It compiles tw each call; use a Measure for repeated use. An invalid tw or node
// gives 0 and the error.
func NodeFragMilli(c *sim.Cluster, n sim.NodeID, tw *TargetWorkload) (float64, error) {
	m, err := NewMeasure(c, tw)
	if err != nil {
		return 0, err
	}
	return m.NodeFragMilli(c, n), nil
}

// ClusterFrag returns the cluster-wide fragmentation of c against tw.
func ClusterFrag(c *sim.Cluster, tw *TargetWorkload) (Frag, error) {
	m, err := NewMeasure(c, tw)
	if err != nil {
		return Frag{}, err
	}
	return m.Cluster(c), nil
}
