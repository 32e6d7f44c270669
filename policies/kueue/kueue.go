package kueue

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are the kueue policy's scenario parameters.
type Params struct {
	// Manifests is a file or directory of real Kueue YAML (ResourceFlavor,
	// ClusterQueue, Cohort, LocalQueue, WorkloadPriorityClass, Topology;
	// kueue.x-k8s.io/v1beta1 or v1beta2), relative to the scenario file.
	Manifests string `yaml:"manifests"`
	// Inline holds the same YAML in the scenario itself (multi-document string).
	Inline string `yaml:"inline"`
	// QueueMapping maps a job's trace queue to a LocalQueue ("name" in namespace
	// "default", or "namespace/name"). Jobs whose queue is not in Map use the queue
	// value itself, then Default.
	QueueMapping struct {
		Default string            `yaml:"default"`
		Map     map[string]string `yaml:"map"`
	} `yaml:"queueMapping"`
	// PriorityClassByJobClass gives jobs of a class the value of a
	// WorkloadPriorityClass (otherwise the trace priority is the Kueue priority).
	PriorityClassByJobClass map[string]string `yaml:"priorityClassByJobClass"`
	// FlavorModels lists the GPU models (or pool names) of a ResourceFlavor's nodes.
	// Without it a flavor's nodeLabels values are matched against node GPU models
	// and pool names; a flavor without nodeLabels matches every node.
	FlavorModels map[string][]string `yaml:"flavorModels"`
	// EvictionGracePeriod is how long a preempted workload keeps running (and
	// holding quota) after Kueue evicts it: the pods' termination grace period
	// (default 30s, Kubernetes' terminationGracePeriodSeconds default).
	EvictionGracePeriod *policies.Dur `yaml:"evictionGracePeriod"`
	// RequeueBatchPeriod delays the return of a cohort tree's inadmissible
	// (parked) workloads to their queues after quota is freed, as Kueue's
	// requeuer batches it (1s in Kueue; default 0: at once). requeue.go.
	RequeueBatchPeriod *policies.Dur `yaml:"requeueBatchPeriod"`
	// PreemptorReservation (default true) keeps gpusim's model of a preemptor
	// while its victims terminate: its request is reserved from the moment it
	// preempts until it is admitted, it is not re-nominated meanwhile, it is
	// processed first once they are gone, and workloads already being evicted
	// are no candidates. false models Kueue (scheduler.go schedule,
	// preemption.go GetTargets and IssuePreemptions): the preemptor stays an
	// ordinary head, re-nominated every cycle with its usage added to that
	// cycle only; its targets are recomputed with evicting workloads as
	// candidates, sorted first (CandidatesOrdering), and choosing only those
	// evicts nothing ("preemption ongoing"); once they are gone it competes
	// for the freed quota like any other head. docs/kueue.md.
	PreemptorReservation *bool `yaml:"preemptorReservation"`
	// Placement chooses nodes for admitted workloads (kube-scheduler's role):
	// first-fit (default), best-fit or spread.
	Placement string `yaml:"placement"`
	// TopologyLevelMapping maps Topology level node labels gpusim does not know to
	// sim levels (node, nvlink, leaf, spine, cluster); see tas.go and docs/kueue.md.
	TopologyLevelMapping map[string]string `yaml:"topologyLevelMapping"`
	// TopologyRequests give workloads Kueue PodSet topology requests (TAS).
	TopologyRequests []TopologyRequestRule `yaml:"topologyRequests"`

	// inlineLine is the scenario line where Inline's first line is written (0:
	// unknown): errors in inline manifests then name the scenario's lines.
	inlineLine int
}

// DefaultEvictionGrace is the default eviction grace period.
const DefaultEvictionGrace = 30 * sim.Second

func init() {
	policies.Register(policies.Info{Name: "kueue",
		Summary: "Kueue admission: ClusterQueues with nominal/borrowing/lending quota per flavor, (hierarchical) cohorts, StrictFIFO/BestEffortFIFO, one head per queue per cycle, classical preemption with fill-back, TAS; fair sharing (DRS order, fair preemption), Admission Fair Sharing and waitForPodsReady from a Kueue Configuration; from real Kueue manifests.",
		Params:  "manifests (file/dir) or inline; queueMapping; priorityClassByJobClass; flavorModels; evictionGracePeriod (30s); requeueBatchPeriod (0s); preemptorReservation (true); placement; topologyLevelMapping; topologyRequests"},
		func(n *yaml.Node, env policies.Env) (sim.Policy, error) {
			var p Params
			if err := policies.DecodeParams(n, &p); err != nil {
				return nil, err
			}
			if env.File != "" {
				p.inlineLine = inlineFirstLine(n)
			}
			return New(p, env)
		})
}

type mode uint8

const (
	modeNoFit mode = iota
	modePreempt
	modeFit
)

type frQ struct {
	fr int
	q  int64
}

type wlState uint8

const (
	wlPending wlState = iota
	wlAdmitted
	wlRunning
	wlDone
)

// workload is Kueue's view of a job.
type workload struct {
	job      *sim.Job
	cq       *clusterQueue
	prio     int32
	state    wlState
	assign   []frQ    // quota held while admitted
	models   []string // GPU models allowed by the assigned flavors (nil = job's own)
	admitSeq int64
	evicting bool     // preempted, terminating
	waitVict int      // victims this preemptor waits for
	reserved []frQ    // quota held since it issued preemptions
	side     uint8    // 0: neither queued nor parked; else 1 + the bucket list it is in (queue.go)
	bk       *bucket  // its equivalence bucket in its ClusterQueue (set on first push)
	req      reqVec   // requestVec(job), cached by nominate
	reqOK    bool     // req is computed
	pv       pvariant // classical preemption: the candidate's variant (scratch of targets)
	pvLCA    *qnode   // classical preemption: the lowest common ancestor with the preemptor (scratch)
	claimed  int64    // the cycle (k.claimGen) whose preemptions claimed it as a victim
	wlExt             // fair sharing, AFS, waitForPodsReady (fairsharing.go)
}

type group struct {
	covered []string
	flavors []int // flavor indexes
}

type clusterQueue struct {
	name       string
	node       *qnode
	strict     bool
	within     string
	reclaim    string
	bwc        string
	bwcThresh  *int32
	canBorrow  string // whenCanBorrow
	canPreempt string // whenCanPreempt
	groups     []group
	buckets    []*bucket         // the queue, split by scheduling equivalence (queue.go)
	bucketOf   map[eqKey]*bucket // lazily created
	nQueued    int               // queued workloads over all buckets
	nParked    int               // parked workloads over all buckets
	nom        *nomTab           // nominate's lookup table (nomtab.go), built on first use
	admitted   []*workload       // by admission order
	sticky     *workload         // BestEffortFIFO preemptor that keeps the head
	peers      []*clusterQueue   // ClusterQueues of the same cohort tree (itself included), in k.cqs order
	idx        int               // index in k.cqs (initActive)
	cqExt                        // Admission Fair Sharing (fairsharing.go)
}

// Kueue is the kueue policy. See the package documentation for what is simulated.
type Kueue struct {
	p          Params
	m          *Manifests
	flavors    []string
	flavMods   [][]string // allowed node models (nil = all)
	frIndex    map[[2]string]int
	cqs        []*clusterQueue
	cqByName   map[string]*clusterQueue
	lqToCQ     map[string]*clusterQueue
	wls        []*workload
	grace      sim.Duration
	batch      sim.Duration // requeue batch period (requeue.go)
	retarget   bool         // preemptorReservation false: Kueue's per-cycle re-targeting (cycle)
	requeues   []requeueAt  // pending batched requeues (requeue.go)
	placer     placement.Placer
	prepC      *sim.Cluster // cluster placer was prepared for (placement.Prepare)
	pl         placement.Placement
	seq        int64
	pendingPl  []*workload // admitted, waiting for placement, in admission order
	evictions  []eviction
	tmp        sim.Job
	candBuf    []*workload              // targets scratch
	parkBuf    []*workload              // park scratch
	remBuf     []*workload              // targets result
	evicted    int                      // evictions carried out (running or admitted workloads)
	candOrd    candOrder                // targets candidate order
	candCmpFn  func(x, y *workload) int // classicalCandCmp as a func value (made once)
	remQ       []frQ                    // hierPossible and targets scratch
	sumBuf     []frQ                    // fitsWithout scratch
	runBuf     []sumRun                 // fitsWithout scratch
	entPool    []*entry                 // the cycle's entries (newEntry)
	entBuf     []*entry                 // the cycle's entry list
	active     []uint64                 // bitset over k.cqs: may have a head (initActive)
	claimGen   int64                    // cycle number for workload.claimed
	nEnt       int                      // entries of entPool in use this cycle
	nomCur     cand                     // nominate scratch: the flavor being tried
	nomBest    cand                     // nominate scratch: the best flavor so far
	warnings   []string
	pendingErr error
	cycles     int64
	ext                  // Configuration features: fair sharing, AFS, waitForPodsReady (fairsharing.go)
	tas        *tasState // topology-aware scheduling (tas.go); nil without TAS flavors
	// replayGrace, when set (the fidelity test only, replay.go), gives each
	// eviction's grace period in place of grace.
	replayGrace func(j *sim.Job, now sim.Time) sim.Duration
	// replay, when set (the fidelity test only, replay.go), plays a
	// recording's cycle starts and seen finishes.
	replay *replayInstants
}

type eviction struct {
	w     *workload // the victim
	by    *workload // the preemptor waiting for it
	at    sim.Time
	grace sim.Duration // at minus when Kueue evicted it (graceFor)
}

// wrapEach prefixes every error of a join (or err itself) with prefix.
func wrapEach(prefix string, err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{fmt.Errorf("%s%w", prefix, err)}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, wrapEach(prefix, e)...)
	}
	return out
}

// inlineFirstLine returns the line of params.inline's first content line: the
// line after the key for a block scalar (| or >), the key's line for a plain or
// quoted one (exact for single-line values only); 0 when absent.
func inlineFirstLine(params *yaml.Node) int {
	for params != nil && params.Kind == yaml.AliasNode {
		params = params.Alias
	}
	if params == nil || params.Kind != yaml.MappingNode {
		return 0
	}
	for i := 0; i+1 < len(params.Content); i += 2 {
		if k, v := params.Content[i], params.Content[i+1]; k.Value == "inline" && v.Kind == yaml.ScalarNode && v.Line > 0 {
			if v.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
				return v.Line + 1
			}
			return v.Line
		}
	}
	return 0
}

// New builds the policy from params (manifests resolved against env).
func New(p Params, env policies.Env) (*Kueue, error) {
	var m *Manifests
	var err error
	switch {
	case p.Manifests != "" && p.Inline != "":
		return nil, fmt.Errorf("manifests: give either manifests or inline, not both")
	case p.Manifests != "":
		m, err = LoadManifests(env.Resolve(p.Manifests))
	case p.Inline != "" && p.inlineLine > 0:
		// Pad with the lines above it so that manifest lines are scenario lines.
		m, err = ParseManifests(env.File, []byte(strings.Repeat("\n", p.inlineLine-1)+p.Inline))
	case p.Inline != "":
		m, err = ParseManifests("inline", []byte(p.Inline))
	default:
		return nil, fmt.Errorf("manifests: required (a file or directory of Kueue YAML), or inline")
	}
	// Every problem of the params is reported; those of the quota tree (build,
	// initTAS) once the params and manifests are valid.
	var errs []error
	placer, perr := placement.New(p.Placement)
	if perr != nil {
		errs = append(errs, fmt.Errorf("placement: %w", perr))
	}
	if err != nil {
		errs = append(errs, wrapEach("manifests: ", err)...)
		return nil, errors.Join(errs...)
	}
	k := &Kueue{p: p, m: m, frIndex: map[[2]string]int{}, cqByName: map[string]*clusterQueue{}, lqToCQ: map[string]*clusterQueue{}, grace: DefaultEvictionGrace}
	if p.EvictionGracePeriod != nil {
		k.grace = sim.Duration(*p.EvictionGracePeriod)
	}
	if p.RequeueBatchPeriod != nil {
		k.batch = sim.Duration(*p.RequeueBatchPeriod)
	}
	k.retarget = p.PreemptorReservation != nil && !*p.PreemptorReservation
	k.placer = placer
	for _, name := range slices.Sorted(maps.Keys(p.PriorityClassByJobClass)) {
		if _, err := sim.ParseClass(name); err != nil {
			errs = append(errs, fmt.Errorf("priorityClassByJobClass: %v", err))
			continue
		}
		if _, ok := m.PriorityValues[p.PriorityClassByJobClass[name]]; !ok {
			errs = append(errs, fmt.Errorf("priorityClassByJobClass.%s: WorkloadPriorityClass %q not found", name, p.PriorityClassByJobClass[name]))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if err := k.build(); err != nil {
		return nil, err
	}
	k.setupExt()
	if err := k.initTAS(); err != nil {
		return nil, err
	}
	k.warnings = m.Warnings
	return k, nil
}

// Name returns "kueue".
func (k *Kueue) Name() string { return "kueue" }

// Warnings lists manifest fields and objects that were read but are not simulated.
func (k *Kueue) Warnings() []string { return k.warnings }

func (k *Kueue) fr(flavor int, res string) int {
	key := [2]string{k.flavors[flavor], res}
	if i, ok := k.frIndex[key]; ok {
		return i
	}
	i := len(k.frIndex)
	k.frIndex[key] = i
	return i
}

// build turns the manifests into the quota tree.
func (k *Kueue) build() error {
	m := k.m
	fIdx := map[string]int{}
	for _, name := range slices.Sorted(maps.Keys(m.Flavors)) {
		fIdx[name] = len(k.flavors)
		k.flavors = append(k.flavors, name)
		var models []string
		if ms, ok := k.p.FlavorModels[name]; ok {
			models = ms
		} else {
			for _, lk := range slices.Sorted(maps.Keys(m.Flavors[name].NodeLabels)) {
				models = append(models, m.Flavors[name].NodeLabels[lk])
			}
		}
		k.flavMods = append(k.flavMods, models)
	}
	for name := range k.p.FlavorModels {
		if _, ok := fIdx[name]; !ok {
			return fmt.Errorf("flavorModels: ResourceFlavor %q not found", name)
		}
	}
	// Register every flavor-resource pair first so vectors have a fixed size.
	rgs := func(list []ResourceGroup) {
		for _, g := range list {
			for _, f := range g.Flavors {
				for _, r := range g.CoveredResources {
					k.fr(fIdx[f.Name], r)
				}
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(m.ClusterQueues)) {
		rgs(m.ClusterQueues[n].ResourceGroups)
	}
	for _, n := range slices.Sorted(maps.Keys(m.Cohorts)) {
		rgs(m.Cohorts[n].ResourceGroups)
	}
	nfr := len(k.frIndex)
	setQuotas := func(node *qnode, list []ResourceGroup) {
		for _, g := range list {
			for _, f := range g.Flavors {
				for _, r := range f.Resources {
					i := k.fr(fIdx[f.Name], r.Name)
					node.nominal[i], _ = parseQuantity(r.Name, r.NominalQuota)
					if r.BorrowingLimit != nil {
						node.borrowLim[i], _ = parseQuantity(r.Name, *r.BorrowingLimit)
					}
					if r.LendingLimit != nil {
						node.lendLim[i], _ = parseQuantity(r.Name, *r.LendingLimit)
					}
				}
			}
		}
	}
	cohorts := map[string]*qnode{}
	var cohort func(name string, path []string) (*qnode, error)
	cohort = func(name string, path []string) (*qnode, error) {
		if c, ok := cohorts[name]; ok {
			return c, nil
		}
		if slices.Contains(path, name) {
			return nil, fmt.Errorf("cohort cycle: %s -> %s", strings.Join(path, " -> "), name)
		}
		c := newQNode(name, false, nfr)
		cohorts[name] = c
		if spec, ok := m.Cohorts[name]; ok {
			setQuotas(c, spec.ResourceGroups)
			if spec.ParentName != "" {
				p, err := cohort(spec.ParentName, append(path, name))
				if err != nil {
					return nil, err
				}
				c.parent = p
				p.children = append(p.children, c)
			}
		}
		return c, nil
	}
	for _, name := range slices.Sorted(maps.Keys(m.Cohorts)) {
		if _, err := cohort(name, nil); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.ClusterQueues)) {
		spec := m.ClusterQueues[name]
		cq := &clusterQueue{name: name, node: newQNode(name, true, nfr), strict: spec.QueueingStrategy == "StrictFIFO",
			within: "Never", reclaim: "Never", bwc: "Never", canBorrow: "MayStopSearch", canPreempt: "TryNextFlavor"}
		cq.node.cq = cq
		setQuotas(cq.node, spec.ResourceGroups)
		if pr := spec.Preemption; pr != nil {
			cq.within = orDefault(pr.WithinClusterQueue, "Never")
			cq.reclaim = orDefault(pr.ReclaimWithinCohort, "Never")
			if pr.BorrowWithinCohort != nil {
				cq.bwc = orDefault(pr.BorrowWithinCohort.Policy, "Never")
				cq.bwcThresh = pr.BorrowWithinCohort.MaxPriorityThreshold
			}
		}
		if f := spec.FlavorFungibility; f != nil {
			cq.canBorrow = orDefault(strings.Replace(f.WhenCanBorrow, "Borrow", "MayStopSearch", 1), "MayStopSearch")
			cq.canPreempt = orDefault(strings.Replace(f.WhenCanPreempt, "Preempt", "MayStopSearch", 1), "TryNextFlavor")
		}
		for _, g := range spec.ResourceGroups {
			gr := group{covered: g.CoveredResources}
			for _, f := range g.Flavors {
				gr.flavors = append(gr.flavors, fIdx[f.Name])
			}
			cq.groups = append(cq.groups, gr)
		}
		if spec.CohortName != "" {
			c, err := cohort(spec.CohortName, nil)
			if err != nil {
				return err
			}
			cq.node.parent = c
			c.children = append(c.children, cq.node)
		}
		k.cqs = append(k.cqs, cq)
		k.cqByName[name] = cq
	}
	roots := map[*qnode]bool{}
	byRoot := map[*qnode][]*clusterQueue{}
	for _, cq := range k.cqs {
		r := cq.node.root()
		roots[r] = true
		byRoot[r] = append(byRoot[r], cq)
	}
	for _, cq := range k.cqs {
		cq.peers = byRoot[cq.node.root()]
	}
	for r := range roots {
		r.computeQuotas()
	}
	for key, lq := range m.LocalQueues {
		k.lqToCQ[key] = k.cqByName[lq.ClusterQueue]
	}
	return nil
}

func orDefault(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// localQueue resolves a job's LocalQueue key.
func (k *Kueue) localQueue(j *sim.Job) (*clusterQueue, error) {
	if cq := k.cqForQueue(j.Spec.Queue); cq != nil {
		return cq, nil
	}
	return nil, &policies.ConfigError{Err: fmt.Errorf("job %s: queue %q matches no LocalQueue (known: %s); set params.queueMapping", j.Spec.ID, j.Spec.Queue, strings.Join(slices.Sorted(maps.Keys(k.m.LocalQueues)), ", "))}
}

// cqForQueue resolves a trace queue name to the ClusterQueue of its LocalQueue
// (queueMapping.map, then the name, then queueMapping.default; a name without a
// namespace is in "default"); nil when none matches.
func (k *Kueue) cqForQueue(q string) *clusterQueue {
	if mapped, ok := k.p.QueueMapping.Map[q]; ok {
		q = mapped
	}
	try := func(name string) *clusterQueue {
		if name == "" {
			return nil
		}
		if !strings.Contains(name, "/") {
			name = "default/" + name
		}
		return k.lqToCQ[name]
	}
	if cq := try(q); cq != nil {
		return cq
	}
	return try(k.p.QueueMapping.Default)
}

// QueueNominalGPUs implements policies.QueueQuotas: the nominalQuota of
// nvidia.com/gpu, summed over flavors, of the ClusterQueue a trace queue's
// LocalQueue points at (ok false when the queue matches no LocalQueue). Queues
// sharing a ClusterQueue share its quota, so each reports the whole of it.
func (k *Kueue) QueueNominalGPUs(queue string) (float64, bool) {
	cq := k.cqForQueue(queue)
	if cq == nil {
		return 0, false
	}
	var n int64
	for key, i := range k.frIndex {
		if key[1] == ResGPU {
			n += cq.node.nominal[i]
		}
	}
	return float64(n), true
}

// requests returns the workload's total request per resource name.
func requests(s *sim.JobSpec) map[string]int64 {
	r := map[string]int64{}
	if s.GPUsPerReplica > 0 {
		r[ResGPU] = int64(s.TotalGPUs()) // a shared GPU counts as one (extended resources are integers)
	}
	if s.CPUMilli > 0 {
		r[ResCPU] = int64(s.Replicas) * s.CPUMilli
	}
	if s.MemoryMiB > 0 {
		r[ResMemory] = int64(s.Replicas) * s.MemoryMiB
	}
	return r
}

func (k *Kueue) less(a, b *workload) bool {
	if a.prio != b.prio {
		return a.prio > b.prio
	}
	if a.qts != b.qts {
		return a.qts < b.qts // queue-order timestamp: creation, or PodsReady eviction
	}
	return a.job.Ref < b.job.Ref
}

// Evictions returns how many admitted workloads Kueue has evicted so far (by
// preemption), whether or not they had started running: a workload evicted before
// its pods ran is not a preemption in the engine.
func (k *Kueue) Evictions() int { return k.evicted }

// Observe keeps Kueue's workload state in step with the engine.
func (k *Kueue) Observe(v *sim.View, e sim.Event) {
	if k.wls == nil {
		k.wls = make([]*workload, v.NumJobs())
	}
	if int(e.Job) >= len(k.wls) {
		// A job submitted after the first call (live runs: sim.Live.Submit).
		k.wls = append(k.wls, make([]*workload, int(e.Job)+1-len(k.wls))...)
	}
	k.afsAdvance(v.Now()) // AFS samples due before this event changes usage
	j := v.Job(e.Job)
	w := k.wls[e.Job]
	switch e.Kind {
	case sim.EvArrive:
		cq, err := k.localQueue(j)
		if err != nil {
			k.wls[e.Job] = &workload{job: j, state: wlDone}
			k.pendingErr = err
			return
		}
		prio := j.Spec.Priority
		if pc, ok := k.p.PriorityClassByJobClass[string(j.Spec.Class)]; ok {
			prio = k.m.PriorityValues[pc]
		}
		w = &workload{job: j, cq: cq, prio: prio}
		k.wls[e.Job] = w
		k.onArrive(w)
		k.push(w)
	case sim.EvFinish, sim.EvKill, sim.EvTimeout:
		if w != nil && w.state != wlDone && !k.finishLater(w, v.Now()) {
			k.finish(w, v.Now())
		}
	case sim.EvPreempt:
		// Our own eviction took effect: quota was released when it was applied.
		if w != nil && w.state == wlPending && !w.parked() {
			k.push(w)
		}
	}
}

// finish ends w at now: its quota is released and its cohort tree's
// parked workloads requeued.
func (k *Kueue) finish(w *workload, now sim.Time) {
	k.release(w)
	w.state = wlDone
	k.batchRequeue(w.cq, now)
	k.tasUnpark()
}

// release gives a workload's quota back.
func (k *Kueue) release(w *workload) {
	if w.state != wlAdmitted && w.state != wlRunning {
		return
	}
	for _, a := range w.assign {
		w.cq.node.addUsage(a.fr, -a.q)
	}
	w.assign = w.assign[:0]
	if i := slices.Index(w.cq.admitted, w); i >= 0 {
		w.cq.admitted = slices.Delete(w.cq.admitted, i, i+1)
	}
	if i := slices.Index(k.pendingPl, w); i >= 0 {
		k.pendingPl = slices.Delete(k.pendingPl, i, i+1)
	}
}
