package kube

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpusim/gpusim/sim"
)

// Node label keys read from GPU feature discovery (NVIDIA gpu-feature-discovery
// labels, docs: "GPU Feature Discovery" labels table).
const (
	LabelGPUProduct = "nvidia.com/gpu.product" // GPU model
	LabelGPUClique  = "nvidia.com/gpu.clique"  // NVLink (MNNVL) clique: "<clusterUUID>.<cliqueID>"
	LabelGPUMemory  = "nvidia.com/gpu.memory"  // GPU memory in MiB
	ResourceGPU     = corev1.ResourceName("nvidia.com/gpu")
	// TaintUnschedulable is the taint kube-scheduler's NodeUnschedulable
	// plugin lets a pod tolerate instead of spec.unschedulable.
	TaintUnschedulable = "node.kubernetes.io/unschedulable"
	// DefaultModel is the GPU model of a node without a product label.
	DefaultModel = "gpu"
)

// nodeClass is the eligibility class of a node: nodes of one class are one
// GPU "model" of the sim cluster, so a job's allowed node set is a list of
// models (sim.JobSpec.GPUModels), which the engine already enforces. A node
// without taints, not cordoned and without class labels has the plain
// product as its model: a cluster that uses none of this models exactly as
// its products.
type nodeClass struct {
	model  string            // the sim GPU model
	taints []corev1.Taint    // NoSchedule / NoExecute taints (and unschedulable)
	labels map[string]string // labels of the first node (for selector checks)
	nodes  []int             // node indexes
}

// clusterModel is the sim cluster built from the nodes at start.
type clusterModel struct {
	specs   []sim.NodeSpec
	names   map[string]sim.NodeID
	labels  []map[string]string // per node
	classOf []int               // class per node
	classes []nodeClass
	notes   []string
}

// ClusterOf builds the sim cluster of nodes (sorted by name): GPUs from the
// allocatable nvidia.com/gpu, CPU and memory from allocatable, model, clique
// and memory from the GFD labels, leaf (rack) and spine (block, else zone)
// from the given label keys. Nodes without GPUs are left out. classLabels are
// the label keys whose values split a model into eligibility classes (besides
// taints and spec.unschedulable).
func ClusterOf(nodes []*corev1.Node, rack, block, zone string, classLabels []string) ([]sim.NodeSpec, error) {
	m, err := buildCluster(nodes, rack, block, zone, classLabels)
	if err != nil {
		return nil, err
	}
	return m.specs, nil
}

func buildCluster(nodes []*corev1.Node, rack, block, zone string, classLabels []string) (*clusterModel, error) {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b *corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	m := &clusterModel{names: map[string]sim.NodeID{}}
	racks, blocks, cliques := map[string]int32{}, map[string]int32{}, map[string]int32{}
	classIdx := map[string]int{}
	for _, n := range nodes {
		q, ok := n.Status.Allocatable[ResourceGPU]
		if !ok {
			continue
		}
		g := q.Value()
		if g <= 0 {
			continue
		}
		if g > 1<<16 {
			m.notes = append(m.notes, fmt.Sprintf("node %s: %d GPUs is out of range (skipped)", n.Name, g))
			continue
		}
		spec := sim.NodeSpec{Name: n.Name, GPUs: int32(g)}
		product := n.Labels[LabelGPUProduct]
		if product == "" {
			product = DefaultModel
		}
		if v := n.Labels[LabelGPUMemory]; v != "" {
			if mib, err := strconv.ParseInt(v, 10, 64); err == nil && mib > 0 {
				spec.GPUMemMiB = mib
			}
		}
		if c := n.Status.Allocatable[corev1.ResourceCPU]; !c.IsZero() {
			spec.CPUMilli = c.MilliValue()
		}
		if c := n.Status.Allocatable[corev1.ResourceMemory]; !c.IsZero() {
			spec.MemoryMiB = int64(math.Floor(float64(c.Value()) / (1 << 20)))
		}
		spec.Leaf = intern(racks, n.Labels[rack])
		b := n.Labels[block]
		if b == "" {
			b = n.Labels[zone]
		}
		spec.Spine = intern(blocks, b)
		if c := n.Labels[LabelGPUClique]; c != "" {
			spec.NVLinkDomain = intern(cliques, c)
		}
		taints := scheduleTaints(n)
		key := classKey(product, taints, n.Labels, classLabels)
		ci, ok := classIdx[key]
		if !ok {
			ci = len(m.classes)
			classIdx[key] = ci
			model := product
			if key != product {
				model = key
			}
			m.classes = append(m.classes, nodeClass{model: model, taints: taints, labels: n.Labels})
		}
		spec.GPUModel = m.classes[ci].model
		m.names[n.Name] = sim.NodeID(len(m.specs))
		m.classes[ci].nodes = append(m.classes[ci].nodes, len(m.specs))
		m.classOf = append(m.classOf, ci)
		m.labels = append(m.labels, n.Labels)
		m.specs = append(m.specs, spec)
	}
	if len(m.specs) == 0 {
		return nil, fmt.Errorf("no node has allocatable %s", ResourceGPU)
	}
	return m, nil
}

// intern numbers the distinct values of a label (the empty value is 0).
func intern(ids map[string]int32, v string) int32 {
	if v == "" {
		return 0
	}
	id, ok := ids[v]
	if !ok {
		id = int32(len(ids)) + 1
		ids[v] = id
	}
	return id
}

// scheduleTaints returns the node's taints that keep new pods off
// (NoSchedule, NoExecute), plus node.kubernetes.io/unschedulable:NoSchedule
// for a cordoned node, sorted.
func scheduleTaints(n *corev1.Node) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range n.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect})
		}
	}
	if n.Spec.Unschedulable && !slices.ContainsFunc(out, func(t corev1.Taint) bool { return t.Key == TaintUnschedulable }) {
		out = append(out, corev1.Taint{Key: TaintUnschedulable, Effect: corev1.TaintEffectNoSchedule})
	}
	slices.SortFunc(out, func(a, b corev1.Taint) int {
		return strings.Compare(a.Key+"="+a.Value+":"+string(a.Effect), b.Key+"="+b.Value+":"+string(b.Effect))
	})
	return out
}

// classKey is the product, then "|key=value:effect" per taint and
// "|label=value" per class label present on the node.
func classKey(product string, taints []corev1.Taint, labels map[string]string, classLabels []string) string {
	var b strings.Builder
	b.WriteString(product)
	for _, t := range taints {
		fmt.Fprintf(&b, "|%s=%s:%s", t.Key, t.Value, t.Effect)
	}
	for _, k := range classLabels {
		if v, ok := labels[k]; ok {
			fmt.Fprintf(&b, "|%s=%s", k, v)
		}
	}
	return b.String()
}

// eligible returns the GPU models (classes) pod spec ps may run on: classes
// whose taints it tolerates and whose every node matches its nodeSelector and
// required node affinity. all reports that every class is allowed (the job
// then needs no GPUModels). split names a class that the selector matches
// only in part (it is left out; see docs/live.md).
func (m *clusterModel) eligible(ps *corev1.PodSpec) (models []string, all bool, split string) {
	all = true
	for ci := range m.classes {
		c := &m.classes[ci]
		ok := tolerates(ps.Tolerations, c.taints)
		if ok {
			match := 0
			for _, n := range c.nodes {
				if nodeMatches(ps, m.specs[n].Name, m.labels[n]) {
					match++
				}
			}
			if match > 0 && match < len(c.nodes) && split == "" {
				split = c.model
			}
			ok = match == len(c.nodes)
		}
		if ok {
			models = append(models, c.model)
		} else {
			all = false
		}
	}
	slices.Sort(models)
	return models, all, split
}

// tolerates reports whether tolerations tolerate every taint
// (k8s.io/api/core/v1 Toleration.ToleratesTaint, as kube-scheduler's
// TaintToleration filter: pkg/scheduler/framework/plugins/tainttoleration,
// Filter -> v1helper.FindMatchingUntoleratedTaint).
func tolerates(tols []corev1.Toleration, taints []corev1.Taint) bool {
	for i := range taints {
		ok := false
		for j := range tols {
			if tols[j].ToleratesTaint(&taints[i]) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// nodeMatches is kube-scheduler's NodeAffinity filter on one node
// (pkg/scheduler/framework/plugins/nodeaffinity, Filter; the matching of
// k8s.io/component-helpers/scheduling/corev1/nodeaffinity): nodeSelector
// (every pair) and the required node affinity (terms ORed, the expressions
// of a term ANDed; matchFields on metadata.name).
func nodeMatches(ps *corev1.PodSpec, name string, labels map[string]string) bool {
	for k, v := range ps.NodeSelector {
		if lv, ok := labels[k]; !ok || lv != v {
			return false
		}
	}
	if ps.Affinity == nil || ps.Affinity.NodeAffinity == nil || ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true
	}
	terms := ps.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	for i := range terms {
		if termMatches(&terms[i], name, labels) {
			return true
		}
	}
	return false
}

func termMatches(t *corev1.NodeSelectorTerm, name string, labels map[string]string) bool {
	if len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0 {
		return false // an empty term matches nothing
	}
	for i := range t.MatchExpressions {
		if !requirementMatches(&t.MatchExpressions[i], labels) {
			return false
		}
	}
	for i := range t.MatchFields {
		r := &t.MatchFields[i]
		if r.Key != "metadata.name" {
			return false
		}
		if !requirementMatches(r, map[string]string{"metadata.name": name}) {
			return false
		}
	}
	return true
}

func requirementMatches(r *corev1.NodeSelectorRequirement, labels map[string]string) bool {
	v, has := labels[r.Key]
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return has && slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpNotIn:
		return !has || !slices.Contains(r.Values, v)
	case corev1.NodeSelectorOpExists:
		return has
	case corev1.NodeSelectorOpDoesNotExist:
		return !has
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !has || len(r.Values) != 1 {
			return false
		}
		a, err1 := strconv.ParseInt(v, 10, 64)
		b, err2 := strconv.ParseInt(r.Values[0], 10, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		if r.Operator == corev1.NodeSelectorOpGt {
			return a > b
		}
		return a < b
	}
	return false
}
