package kueue

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Topology-Aware Scheduling (policies.md 1.10). A ResourceFlavor with a
// topologyName is a TAS flavor; the named Topology's node-label levels map onto
// sim levels. After flavor assignment and the quota check, a workload assigned a
// TAS flavor needs a topology assignment computed on the live free capacity
// (running workloads, TAS or not, plus the TAS workloads admitted earlier in the
// same cycle, which start at once on their assignment): quota-Fit without a
// placement becomes Preempt, Preempt without a placement even on an empty
// cluster becomes NoFit. Preemption victims are chosen until both quota and
// topology fit (the victims' GPUs are released on a what-if copy of the cluster).

// TopologyRequestRule gives the workloads it matches a Kueue PodSet topology
// request (the kueue.x-k8s.io/podset-*-topology annotations, which traces do not
// carry). A rule matches when every selector it sets (class, queue,
// clusterQueue) matches; the first matching rule wins; a rule without selectors
// matches every workload (a default). Exactly one of required, preferred and
// unconstrained must be set.
type TopologyRequestRule struct {
	Class         string `yaml:"class"`        // job class
	Queue         string `yaml:"queue"`        // the job's queue as in the trace
	ClusterQueue  string `yaml:"clusterQueue"` // the ClusterQueue the job's LocalQueue points at
	Required      string `yaml:"required"`     // podset-required-topology: a level's node label
	Preferred     string `yaml:"preferred"`    // podset-preferred-topology: a level's node label
	Unconstrained bool   `yaml:"unconstrained"`
}

// standardLevelLabels maps the node labels of Kueue's documentation and GPU
// Feature Discovery to sim levels (docs/topology.md "One tree, many views").
// Labels whose name part is topology-rack / topology-block (any prefix) map to
// leaf / spine as well.
var standardLevelLabels = map[string]sim.Level{
	"kubernetes.io/hostname":      sim.LevelNode,
	"nvidia.com/gpu.clique":       sim.LevelNVLink,
	"topology.kubernetes.io/zone": placement.LevelCluster,
}

// levelNames are the values topologyLevelMapping accepts.
var levelNames = map[string]sim.Level{
	"nvlink": sim.LevelNVLink, "clique": sim.LevelNVLink,
	"node": sim.LevelNode, "hostname": sim.LevelNode,
	"leaf": sim.LevelLeaf, "rack": sim.LevelLeaf,
	"spine": sim.LevelSpine, "block": sim.LevelSpine,
	"cluster": placement.LevelCluster, "zone": placement.LevelCluster,
}

// coarseness orders levels for Topology validation (coarsest largest): on NVL72
// an NVLink domain spans nodes inside a rack.
func coarseness(l sim.Level) int {
	switch l {
	case sim.LevelNode:
		return 0
	case sim.LevelNVLink:
		return 1
	case sim.LevelLeaf:
		return 2
	case sim.LevelSpine:
		return 3
	}
	return 4 // the whole cluster
}

func levelName(l sim.Level) string {
	if l >= sim.NumLevels {
		return "cluster"
	}
	return l.String()
}

// tasTopology is a Topology object mapped onto sim levels.
type tasTopology struct {
	name   string
	labels []string    // coarsest first, as in the manifest
	levels []sim.Level // same order
}

func (t *tasTopology) index(l sim.Level) int { return slices.Index(t.levels, l) }

type tasRule struct {
	class, queue, cq string
	mode             placement.TASMode
	label            string
	level            sim.Level
}

// tasState is the kueue policy's TAS state (nil when no flavor has a topologyName).
type tasState struct {
	topo     []*tasTopology // per flavor index; nil: not a TAS flavor
	tasOnly  map[*clusterQueue]bool
	hasTAS   map[*clusterQueue]bool
	tasCQs   []*clusterQueue // ClusterQueues with at least one TAS flavor
	rules    []tasRule
	ruleOf   []int32 // per job ref: 1 + index of its rule, len(rules)+1 = none, 0 = not computed
	frFlavor []int   // flavor index of each flavor-resource pair
	placer   placement.TASPlacer
	base     *sim.Cluster // the live cluster
	empty    *sim.Cluster // an empty copy of base (Kueue's simulateEmpty)
	inSim    bool         // a preemption simulation is running
	whatIf   *sim.Cluster // its copy of base, made at the first candidate released
	tmp      sim.Job
}

// tasEntry is an entry's topology request and assignment.
type tasEntry struct {
	req    placement.TASRequest
	flavor int
	fail   bool // no topology assignment (wait reason "topology")
	pl     placement.Placement
}

// initTAS maps Topology levels, checks topologyName references and the
// topologyRequests param. Errors name the manifest file and field, or the param.
func (k *Kueue) initTAS() error {
	m := k.m
	levelOf := map[string]sim.Level{}
	for _, label := range slices.Sorted(maps.Keys(k.p.TopologyLevelMapping)) {
		name := k.p.TopologyLevelMapping[label]
		l, ok := levelNames[name]
		if !ok {
			return &policies.ConfigError{Err: fmt.Errorf("topologyLevelMapping.%s: unknown level %q (want node, nvlink, leaf, spine or cluster; aliases hostname, clique, rack, block, zone)", label, name)}
		}
		levelOf[label] = l
	}
	mapLabel := func(label string) (sim.Level, bool) {
		if l, ok := levelOf[label]; ok {
			return l, true
		}
		if l, ok := standardLevelLabels[label]; ok {
			return l, true
		}
		_, short, _ := strings.Cut(label, "/")
		switch {
		case short == "topology-rack" || label == "topology-rack":
			return sim.LevelLeaf, true
		case short == "topology-block" || label == "topology-block":
			return sim.LevelSpine, true
		}
		return 0, false
	}
	used := map[string]bool{}
	for _, f := range m.Flavors {
		used[f.TopologyName] = true
	}
	topos := map[string]*tasTopology{}
	for _, name := range slices.Sorted(maps.Keys(m.Topologies)) {
		spec := m.Topologies[name]
		where := m.sources["Topology/"+name]
		if !used[name] {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s: Topology %q: no ResourceFlavor names it in topologyName; ignored", where, name))
			continue
		}
		t := &tasTopology{name: name}
		if len(spec.Levels) == 0 {
			return &policies.ConfigError{Err: fmt.Errorf("manifests: %s: Topology %q: spec.levels: at least one level is required", where, name)}
		}
		for i, lv := range spec.Levels {
			l, ok := mapLabel(lv.NodeLabel)
			if !ok {
				return &policies.ConfigError{Err: fmt.Errorf("manifests: %s: Topology %q: spec.levels[%d].nodeLabel %q has no gpusim level (known: kubernetes.io/hostname, nvidia.com/gpu.clique, */topology-rack, */topology-block, topology.kubernetes.io/zone); map it with params.topologyLevelMapping", where, name, i, lv.NodeLabel)}
			}
			if i > 0 && coarseness(l) >= coarseness(t.levels[i-1]) {
				return &policies.ConfigError{Err: fmt.Errorf("manifests: %s: Topology %q: spec.levels[%d].nodeLabel %q (%s) must be finer than level %d %q (%s): levels are listed coarsest first, each level once", where, name, i, lv.NodeLabel, levelName(l), i-1, spec.Levels[i-1].NodeLabel, levelName(t.levels[i-1]))}
			}
			t.labels = append(t.labels, lv.NodeLabel)
			t.levels = append(t.levels, l)
		}
		topos[name] = t
	}
	t := &tasState{topo: make([]*tasTopology, len(k.flavors)), tasOnly: map[*clusterQueue]bool{}, hasTAS: map[*clusterQueue]bool{}}
	hasTAS := false
	for i, name := range k.flavors {
		tn := m.Flavors[name].TopologyName
		if tn == "" {
			continue
		}
		topo, ok := topos[tn]
		if !ok {
			return &policies.ConfigError{Err: fmt.Errorf("manifests: %s: ResourceFlavor %q: spec.topologyName: Topology %q not found", m.sources["ResourceFlavor/"+name], name, tn)}
		}
		t.topo[i] = topo
		hasTAS = true
	}
	if !hasTAS {
		if len(k.p.TopologyRequests) > 0 {
			return &policies.ConfigError{Err: fmt.Errorf("topologyRequests: no ResourceFlavor has a topologyName (no TAS flavor to apply them to)")}
		}
		return nil
	}
	for _, cq := range k.cqs {
		only, some := true, false
		for _, g := range cq.groups {
			for _, f := range g.flavors {
				if t.topo[f] != nil {
					some = true
				} else {
					only = false
				}
			}
		}
		t.tasOnly[cq] = only && some
		t.hasTAS[cq] = some
		if some {
			t.tasCQs = append(t.tasCQs, cq)
		}
	}
	for i, r := range k.p.TopologyRequests {
		field := fmt.Sprintf("topologyRequests[%d]", i)
		rule := tasRule{queue: r.Queue, cq: r.ClusterQueue}
		if r.Class != "" {
			c, err := sim.ParseClass(r.Class)
			if err != nil {
				return &policies.ConfigError{Err: fmt.Errorf("%s.class: %v", field, err)}
			}
			rule.class = string(c)
		}
		if r.ClusterQueue != "" && k.cqByName[r.ClusterQueue] == nil {
			return &policies.ConfigError{Err: fmt.Errorf("%s.clusterQueue: ClusterQueue %q not found", field, r.ClusterQueue)}
		}
		n := 0
		for _, set := range []bool{r.Required != "", r.Preferred != "", r.Unconstrained} {
			if set {
				n++
			}
		}
		if n != 1 {
			return &policies.ConfigError{Err: fmt.Errorf("%s: give exactly one of required, preferred (a level's node label) and unconstrained: true", field)}
		}
		switch {
		case r.Required != "":
			rule.mode, rule.label = placement.TASRequired, r.Required
		case r.Preferred != "":
			rule.mode, rule.label = placement.TASPreferred, r.Preferred
		default:
			rule.mode = placement.TASUnconstrained
		}
		if rule.label != "" {
			l, ok := mapLabel(rule.label)
			if !ok {
				return &policies.ConfigError{Err: fmt.Errorf("%s: node label %q has no gpusim level; map it with topologyLevelMapping", field, rule.label)}
			}
			used := false
			for _, topo := range topos {
				used = used || topo.index(l) >= 0
			}
			if !used {
				return &policies.ConfigError{Err: fmt.Errorf("%s: level %q (%s) is in no Topology", field, rule.label, levelName(l))}
			}
			rule.level = l
		}
		t.rules = append(t.rules, rule)
	}
	k.tas = t
	return nil
}

// tasRule returns the first rule matching w (nil: no explicit request); a job's
// class, queue and ClusterQueue do not change, so the answer is cached. Rules
// apply only to ClusterQueues with a TAS flavor (a request would make every
// flavor of another queue unusable: Kueue's "does not support TAS").
func (k *Kueue) tasRule(w *workload) *tasRule {
	t := k.tas
	ref := int(w.job.Ref)
	if ref >= len(t.ruleOf) {
		t.ruleOf = append(t.ruleOf, make([]int32, ref+1-len(t.ruleOf))...)
	}
	if t.ruleOf[ref] == 0 {
		t.ruleOf[ref] = int32(len(t.rules)) + 1
		s := &w.job.Spec
		for i := range t.rules {
			if !t.hasTAS[w.cq] {
				break
			}
			r := &t.rules[i]
			if r.class != "" && r.class != string(orClass(s.Class)) || r.queue != "" && r.queue != s.Queue || r.cq != "" && r.cq != w.cq.name {
				continue
			}
			t.ruleOf[ref] = int32(i) + 1
			break
		}
	}
	if i := int(t.ruleOf[ref]) - 1; i < len(t.rules) {
		return &t.rules[i]
	}
	return nil
}

func orClass(c sim.JobClass) sim.JobClass {
	if c == "" {
		return sim.ClassUnknown
	}
	return c
}

// tasFlavorOK is Kueue's checkPodSetAndFlavorMatchForTAS: a workload with an
// explicit topology request may only use TAS flavors whose Topology has the
// requested level; one without may use TAS flavors only in a TAS-only
// ClusterQueue (the implied request); otherwise TAS flavors are skipped.
func (k *Kueue) tasFlavorOK(w *workload, fl int) bool {
	if k.tas == nil {
		return true
	}
	topo := k.tas.topo[fl]
	if r := k.tasRule(w); r != nil {
		return topo != nil && (r.mode == placement.TASUnconstrained || topo.index(r.level) >= 0)
	}
	return topo == nil || k.tas.tasOnly[w.cq]
}

// tasRequest builds w's request on a flavor of Topology topo. Without an explicit
// request it is Kueue's implied one: unconstrained at the lowest level, placed
// LeastFreeCapacity (TASProfileMixed); so is an explicit unconstrained one.
func (k *Kueue) tasRequest(w *workload, topo *tasTopology) placement.TASRequest {
	r := k.tasRule(w)
	if r == nil || r.mode == placement.TASUnconstrained {
		return placement.TASRequest{Mode: placement.TASUnconstrained, LeastFreeCapacity: true}
	}
	req := placement.TASRequest{Mode: r.mode}
	for i := topo.index(r.level); i >= 0; i-- {
		req.Levels = append(req.Levels, topo.levels[i])
	}
	return req
}

func (k *Kueue) flavorOfFR(fr int) int {
	t := k.tas
	if len(t.frFlavor) != len(k.frIndex) {
		t.frFlavor = make([]int, len(k.frIndex))
		for key, i := range k.frIndex {
			t.frFlavor[i], _ = slices.BinarySearch(k.flavors, key[0]) // k.flavors is sorted
		}
	}
	return t.frFlavor[fr]
}

// bind remembers the live cluster (and drops the empty copy of another one).
func (t *tasState) bind(c *sim.Cluster) {
	if t.base != c {
		t.base, t.empty = c, nil
	}
}

func (t *tasState) emptyCluster() *sim.Cluster {
	if t.empty == nil {
		t.empty = t.base.Clone()
		t.empty.Reset()
	}
	return t.empty
}

// tasNominate runs after the quota flavor assignment (Kueue's assignFlavors):
// for a workload assigned a TAS flavor, a quota fit without a topology
// assignment on the live capacity becomes Preempt, and Preempt becomes NoFit
// when not even an empty cluster has an assignment. A PodSet assigned two
// flavors of which one is TAS cannot be admitted (Kueue: "more than one flavor").
func (k *Kueue) tasNominate(v *sim.View, e *entry) {
	t := k.tas
	if t == nil || e.mode == modeNoFit {
		return
	}
	tasFl, distinct := -1, -1
	for _, a := range e.assign {
		f := k.flavorOfFR(a.fr)
		if t.topo[f] != nil {
			tasFl = f
		}
		if distinct != -2 && distinct != f {
			if distinct == -1 {
				distinct = f
			} else {
				distinct = -2
			}
		}
	}
	if tasFl < 0 {
		return
	}
	if distinct == -2 {
		e.mode, e.tas = modeNoFit, &tasEntry{flavor: tasFl, fail: true}
		return
	}
	t.bind(v.Cluster())
	te := &tasEntry{flavor: tasFl, req: k.tasRequest(e.w, t.topo[tasFl])}
	e.tas = te
	if e.mode == modeFit && !k.tasPlace(t.base, e) {
		e.mode, te.fail = modePreempt, true
		e.need = e.assign // Kueue sets every resource of the TAS flavor to Preempt
	}
	if e.mode == modePreempt && !k.tasPlace(t.emptyCluster(), e) {
		e.mode, te.fail = modeNoFit, true
	}
}

// tasPlace computes e's topology assignment on c (the live cluster or a copy of
// it) into e.tas.pl, on the GPU models of the entry's flavors.
func (k *Kueue) tasPlace(c *sim.Cluster, e *entry) bool {
	t := k.tas
	j := e.w.job
	if e.models != nil {
		t.tmp = *j
		t.tmp.Spec.GPUModels = nil
		for _, m := range c.Models() {
			if j.Spec.AllowsModel(m) && k.modelInFlavor(c, m, e.models) {
				t.tmp.Spec.GPUModels = append(t.tmp.Spec.GPUModels, m)
			}
		}
		if len(t.tmp.Spec.GPUModels) == 0 {
			return false
		}
		j = &t.tmp
	}
	return t.placer.Place(t.base, c, j, &e.tas.req, &e.tas.pl)
}

// tasRecheck recomputes a TAS entry's assignment on the live cluster right before
// admission (TASRecomputeAssignmentWithinSchedulingCycle: an earlier entry of the
// cycle may have taken the domain).
func (k *Kueue) tasRecheck(v *sim.View, e *entry) bool {
	if e.tas == nil {
		return true
	}
	k.tas.bind(v.Cluster())
	if !k.tasPlace(k.tas.base, e) {
		e.tas.fail = true
		return false
	}
	return true
}

// tasStart starts an admitted TAS workload on exactly its topology assignment
// (Kueue injects node selectors for the assigned domains). An invalid start is
// recorded by the plan and fails the run.
func (k *Kueue) tasStart(p *sim.Plan, e *entry) {
	if e.tas == nil {
		return
	}
	w := e.w
	if i := slices.Index(k.pendingPl, w); i >= 0 {
		k.pendingPl = slices.Delete(k.pendingPl, i, i+1)
	}
	_ = p.AddStart(w.job.Ref, e.tas.pl.Nodes, e.tas.pl.GPUs)
	w.state = wlRunning
}

// waitReason is why a head that cannot be admitted waits.
func waitReason(e *entry) sim.Reason {
	if e.tas != nil && e.tas.fail {
		return sim.ReasonTopology
	}
	return sim.ReasonQuota
}

// fitsEntry is Kueue's workloadFits during preemption: the quota fits and, for a
// TAS entry, a topology assignment exists once the candidates removed so far
// (released on the what-if copy) are gone.
func (k *Kueue) fitsEntry(e *entry, allowBorrow bool) bool {
	if !k.fits(e.w.cq, e.assign, allowBorrow) {
		return false
	}
	if e.tas == nil || !k.tas.inSim {
		return true
	}
	c := k.tas.whatIf
	if c == nil {
		c = k.tas.base // nothing released yet
	}
	return k.tasPlace(c, e)
}

// tasWhatIf starts a preemption simulation for e and returns its end. The copy
// of the live cluster on which take releases and re-adds candidates is made at
// the first release (most simulations end before: no candidates).
func (k *Kueue) tasWhatIf(e *entry) func() {
	if e.tas == nil || k.tas == nil || k.tas.base == nil {
		return func() {}
	}
	k.tas.inSim, k.tas.whatIf = true, nil
	return func() { k.tas.inSim, k.tas.whatIf = false, nil }
}

// tasTake mirrors take on the what-if cluster: a running candidate's replicas
// are released (sign -1) or allocated again (+1).
func (k *Kueue) tasTake(x *workload, sign int64) {
	t := k.tas
	if t == nil || !t.inSim || x.job.State != sim.StateRunning {
		return
	}
	if t.whatIf == nil {
		if sign > 0 {
			return // nothing was released
		}
		t.whatIf = t.base.Clone()
	}
	c, s := t.whatIf, &x.job.Spec
	g := s.GPUsPerReplica
	for r, n := range x.job.Nodes {
		gpus := sim.ReplicaSlice(x.job.GPUs, r, int(g))
		if sign < 0 {
			c.Release(n, gpus, s.GPUMilli, s.CPUMilli, s.MemoryMiB)
		} else {
			_ = c.Allocate(n, gpus, s.GPUMilli, s.CPUMilli, s.MemoryMiB) // re-adds what was released
		}
	}
}

// tasUnpark returns parked workloads of ClusterQueues with TAS flavors to their
// queues when capacity is freed anywhere (TAS capacity is shared by every queue
// using the nodes, across cohorts).
func (k *Kueue) tasUnpark() {
	if k.tas == nil {
		return
	}
	for _, cq := range k.tas.tasCQs {
		if cq.nParked > 0 {
			k.unpark(cq)
		}
	}
}
