package slurm

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/policies"
	gplace "github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

func init() {
	policies.RegisterDecoded[Params](policies.Info{Name: "slurm",
		Summary: "Slurm: partitions (tiers, time limits, overlapping node sets), priority/multifactor with Fair Tree or classic fair share, main scheduler with per-partition blocking, sched/backfill on time limits (bf_window, bf_resolution, bf_max_job_test, bf_job_part_count_reserve), partition_prio/qos preemption (CANCEL/REQUEUE/SUSPEND), advanced reservations.",
		Params:  "partitions; partitionMapping; priority{weights, maxAge, calcPeriod, decayHalfLife, usageModel, fairTree, favorSmall, smallRelativeToTime}; accounts; qos; qosMapping; schedulerParameters{sched_interval, default_queue_depth, batch_sched_delay, bf_*}; enforcePartLimits; preemptType; preemptMode; preemptExemptTime; reservations; topologyPlugin (flat|tree); nodeSelection (best-fit|first-fit); gangNodes (distinct|shared); requeueDelay; accountingStorage; accountingStorageEnforce; clockOffset; controllerUptime; calcUptime; version (latest|22.05); willRun (exact|windows)"}, New)
}

// unlimited is an infinite time limit.
const unlimited = sim.Duration(math.MaxInt64)

type partition struct {
	name      string
	exprs     NodeList
	nodes     []sim.NodeID // in node order
	mask      []bool
	tier      int
	jobFactor int
	maxTime   sim.Duration // unlimited = none
	defTime   sim.Duration // 0 = not set
	mode      preemptMode
	isDefault bool
	overSub   bool // OverSubscribe=FORCE: its jobs can be suspended
}

type qos struct {
	name    string
	prio    int
	preempt []bool // by QOS index
	mode    preemptMode
}

type resv struct {
	name       string
	exprs      NodeList
	mask       []bool
	start, end sim.Time
	accounts   []string
	acctIdx    []int32
	users      map[string]bool
	part       int // -1: any
}

// jobInfo is the policy's per-job state.
type jobInfo struct {
	part, qos, assoc int32
	limit            sim.Duration // time limit (unlimited = none)
	overMax          bool         // time limit above the partition MaxTime: never starts
	prio             int64
	acctFrom         sim.Time     // usage accounted up to here (while running)
	usedWall         sim.Duration // run time before suspensions of the current allocation
	eligible         sim.Time     // not in the queue before this (requeue delay)
	held             bool         // requeued: out of the queue until a full pass at or after eligible
	seen             bool         // its arrival has been noted for batch_sched_delay
}

// Slurm is the slurm policy. See the package documentation.
type Slurm struct {
	p          Params
	parts      []*partition
	partByName map[string]int
	defPart    int
	qos        []*qos
	qosByName  map[string]int
	classQOS   map[sim.JobClass]int
	tree       *assocTree
	resvs      []*resv

	topo     *treeSel         // topology/tree; nil = flat
	placer   gplace.Placer    // params.placement; nil = Slurm's node selection
	xpl      gplace.Placement // placer's scratch
	xpart    *partition       // placeNow's current partition and filter (for xpl.Allow)
	xok      func(sim.NodeID) bool
	ptype    preemptType
	pmode    preemptMode
	exempt   sim.Duration
	youngest bool

	wAge, wFS, wJS, wPart, wQOS float64
	anyWeight                   bool
	maxAge, calcPeriod, half    sim.Duration
	usage                       usageModel   // params.priority.usageModel
	calcUptime                  sim.Duration // params.calcUptime
	favorSmall                  bool
	maxJobFactor, maxQOSPrio    int

	schedInterval, bfInterval, bfWindow, bfRes sim.Duration
	depth, maxTest, partReserve                int
	maxJobUser, maxJobPart                     int
	minPrioReserve                             int64

	warnings []string

	// issue 17 (fidelity.go)
	nodeSel      nodeSel
	distinct     bool // params.gangNodes: distinct
	noAcct       bool // params.accountingStorage: none
	endCharge    bool // params.accountingStorageEnforce has limits: ended runs are charged in full
	batchDelay   sim.Duration
	arrivedAt    sim.Time // first arrival since the last batch pass (Never: none)
	lastBatch    sim.Time // last main pass run for arrivals
	batchWake    sim.Time // when the pending batch pass is due (Never: none)
	freed        bool     // a job ended, was preempted or suspended since the last scheduling point
	heldRelease  sim.Time // first full pass that releases a held (requeued) job
	resvWoke     sim.Time // the advanced-reservation boundary last asked for as a wake-up
	version      slurmVersion
	willRunMode  willRunMode
	requeueDelay sim.Duration
	clockOff     sim.Duration // wall clock of t=0 past a whole minute
	uptime       sim.Duration // slurmctld's run time at t=0
	jsRelTime    bool         // PriorityFlags=SMALL_RELATIVE_TO_TIME
	clusterCPUs  float64
	fitNodes     []fitNode
	fitRuns      []fitRun
	fitOrder     []sim.NodeID
	bfProbe      bfProbe
	// onReserve, when set (tests), is called for each backfill reservation
	// with the cycle's time, the job, its will-run start, the slot's end and
	// its nodes: the fidelity tests compare the plan with slurmctld's
	// _dump_job_sched lines.
	onReserve func(now sim.Time, j *sim.Job, start, end sim.Time, nodes []sim.NodeID)
	// bfCycles, when set (tests), are the times of the backfill cycles,
	// replacing the bf_interval grid: the cycles a recording logged, which
	// drift through the second. The will-run test then takes now's second
	// rounded down, as time(NULL) does (floorSecond), not up.
	bfCycles []sim.Time
	// schedPasses, when set (tests), are the main scheduler's passes that a
	// recording logged, replacing batch_sched_delay's background passes,
	// the runs at job ends and the sched_interval grid (replay.go).
	schedPasses []schedPass
	// releaseAt, when set (tests), is when node n of job j's run that ended
	// at end was released (slurmd's answer to the terminate request); the
	// node stays COMPLETING until then (replay.go).
	releaseAt    func(j *sim.Job, n sim.NodeID, end sim.Time) sim.Time
	cgUntil      []sim.Time            // per node: COMPLETING until (releaseAt)
	taskCPUs     bool                  // params.bestFitCPUs: job
	killWait     sim.Duration          // params.killWait
	wholeSec     bool                  // params.wholeSeconds
	bfOKFn       func(sim.NodeID) bool // s.bfOK
	notBlockedFn func(sim.NodeID) bool // s.notBlocked

	// run state
	inited             bool
	initErr            error
	jobs               []jobInfo
	nextFull, nextBF   sim.Time // next periodic pass times (wake-ups)
	nextCalc, lastCalc sim.Time
	pendUsage          []float64 // per assoc, usage of ended runs not yet recorded
	queue              []*sim.Job
	ov                 overlay
	pl                 placement
	plWhy              placement // scratch for wait reasons
	blockedPart        []bool
	blockedNode        []bool
	nodeRes            [][]interval // backfill reservations per node
	resTouched         []sim.NodeID
	runs               []runEnd
	times              []sim.Time
	resTimes           []sim.Time // node_space record starts of this backfill cycle (willRun: windows)
	advTimes           []sim.Time // advanced reservation boundaries (willRun: windows)
	acc                []bool     // laterStart's accumulated usable nodes (scratch)
	wrRuns             []runEnd   // willRunTest's job list (scratch)
	cands              []*sim.Job
	nodesTmp           []sim.NodeID
	partRes            []int
	partTested         []int
	userTested         map[string]int
	nodeResv           [][]int // admin reservations per node
	fitCache           map[fitKey]bool
}

type interval struct{ start, end sim.Time }

type runEnd struct {
	j   *sim.Job
	end sim.Time
}

// New validates params and builds the policy. Node expressions are matched and
// jobs are mapped to partitions, QOS and associations at the first scheduling
// point (errors then are *policies.ConfigError).
func New(p Params) (*Slurm, error) {
	s := &Slurm{p: p, partByName: map[string]int{}, qosByName: map[string]int{}, classQOS: map[sim.JobClass]int{}, defPart: -1}
	var err error
	var errs []error // every problem is reported
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if len(p.Partitions) == 0 {
		p.Partitions = []PartitionConf{{Name: "default", Nodes: NodeList{"ALL"}, Default: true}}
	}
	for i, pc := range p.Partitions {
		f := fmt.Sprintf("partitions[%d]", i)
		if pc.Name == "" {
			bad("%s.name: required", f)
			continue
		}
		if _, dup := s.partByName[pc.Name]; dup {
			bad("%s.name: partition %q defined twice", f, pc.Name)
			continue
		}
		for _, e := range pc.Nodes {
			if err := checkNodeExpr(e); err != nil {
				bad("%s.nodes: %w", f, err)
			}
		}
		if len(pc.Nodes) == 0 {
			bad("%s.nodes: required (ALL, a glob such as \"h100-*\", a hostlist \"h100-[0-3]\" or an index range \"0-7\")", f)
		}
		pt := &partition{name: pc.Name, exprs: pc.Nodes, tier: intOr(pc.PriorityTier, 1), jobFactor: intOr(pc.PriorityJobFactor, 1),
			maxTime: durOr(pc.MaxTime, unlimited), defTime: durOr(pc.DefaultTime, 0), isDefault: pc.Default}
		if pt.tier < 0 || pt.tier > 65533 {
			bad("%s.priorityTier: must be in 0..65533", f)
		}
		if pt.jobFactor < 0 || pt.jobFactor > 65533 {
			bad("%s.priorityJobFactor: must be in 0..65533", f)
		}
		if pc.MaxTime != nil && pt.maxTime == 0 {
			bad("%s.maxTime: must be > 0 (leave it out for UNLIMITED)", f)
		}
		if pt.defTime > 0 && pt.defTime > pt.maxTime {
			bad("%s.defaultTime: %v exceeds maxTime %v", f, pt.defTime, pt.maxTime)
		}
		if pt.mode, err = parseMode(f+".preemptMode", pc.PreemptMode); err != nil {
			errs = append(errs, err)
		}
		switch os, _, _ := strings.Cut(strings.ToUpper(strings.TrimSpace(pc.OverSubscribe)), ":"); os {
		case "", "NO", "EXCLUSIVE", "YES":
		case "FORCE":
			pt.overSub = true
		default:
			bad("%s.overSubscribe: unknown %q (want NO, EXCLUSIVE, YES[:N] or FORCE[:N])", f, pc.OverSubscribe)
		}
		if pc.Default {
			if s.defPart >= 0 {
				bad("%s.default: partition %q is already the default", f, p.Partitions[s.defPart].Name)
			} else {
				s.defPart = i
			}
		}
		s.partByName[pc.Name] = i
		s.parts = append(s.parts, pt)
		s.maxJobFactor = max(s.maxJobFactor, pt.jobFactor)
	}
	for _, q := range slices.Sorted(maps.Keys(p.PartitionMapping)) {
		part := p.PartitionMapping[q]
		if _, ok := s.partByName[part]; !ok {
			bad("partitionMapping.%s: unknown partition %q", q, part)
		}
	}
	// QOS
	s.qos = append(s.qos, &qos{name: "normal"})
	s.qosByName["normal"] = 0
	seen := map[string]bool{}
	for i, qc := range p.QOS {
		f := fmt.Sprintf("qos[%d]", i)
		if qc.Name == "" {
			bad("%s.name: required", f)
			continue
		}
		q := &qos{name: qc.Name, prio: qc.Priority}
		if qc.Priority < 0 {
			bad("%s.priority: must be >= 0", f)
		}
		if q.mode, err = parseMode(f+".preemptMode", qc.PreemptMode); err != nil {
			errs = append(errs, err)
		}
		if seen[qc.Name] {
			bad("%s.name: QOS %q defined twice", f, qc.Name)
			continue
		}
		seen[qc.Name] = true
		if qc.Name == "normal" {
			s.qos[0] = q // redefines normal
			continue
		}
		s.qosByName[qc.Name] = len(s.qos)
		s.qos = append(s.qos, q)
	}
	for _, q := range s.qos {
		q.preempt = make([]bool, len(s.qos))
		s.maxQOSPrio = max(s.maxQOSPrio, q.prio)
	}
	for i, qc := range p.QOS {
		if qc.Name == "" {
			continue // reported above
		}
		q := s.qos[s.qosByName[qc.Name]]
		for _, name := range qc.Preempt {
			k, ok := s.qosByName[name]
			if !ok {
				bad("qos[%d].preempt: unknown QOS %q", i, name)
			}
			q.preempt[k] = true
		}
	}
	for _, cl := range slices.Sorted(maps.Keys(p.QOSMapping)) {
		name := p.QOSMapping[cl]
		c, err := sim.ParseClass(cl)
		if err != nil {
			bad("qosMapping: %v", err)
			continue
		}
		k, ok := s.qosByName[name]
		if !ok {
			bad("qosMapping.%s: unknown QOS %q", cl, name)
			continue
		}
		s.classQOS[c] = k
	}
	// priority
	pr := p.Priority
	s.wAge, s.wFS, s.wJS, s.wPart, s.wQOS = float64(pr.Weights.Age), float64(pr.Weights.FairShare), float64(pr.Weights.JobSize), float64(pr.Weights.Partition), float64(pr.Weights.QOS)
	s.anyWeight = s.wAge+s.wFS+s.wJS+s.wPart+s.wQOS > 0
	s.maxAge = durOr(pr.MaxAge, DefaultMaxAge)
	s.calcPeriod = durOr(pr.CalcPeriod, DefaultCalcPeriod)
	s.half = durOr(pr.DecayHalfLife, DefaultHalfLife)
	if s.usage, err = parseUsageModel(pr.UsageModel); err != nil {
		errs = append(errs, err)
	}
	s.favorSmall = pr.FavorSmall
	s.jsRelTime = pr.SmallRelativeToTime
	if s.maxAge <= 0 {
		bad("priority.maxAge: must be > 0")
	}
	if s.calcPeriod <= 0 {
		bad("priority.calcPeriod: must be > 0")
	}
	damp := intOr(pr.DampeningFactor, 1)
	if damp < 1 {
		bad("priority.dampeningFactor: must be >= 1")
	}
	fairTree := pr.FairTree == nil || *pr.FairTree
	if s.tree, err = newTree(p.Accounts, fairTree, damp); err != nil {
		errs = append(errs, err)
	}
	if p.DefaultAccount != "" {
		if _, ok := s.tree.accounts[p.DefaultAccount]; !ok || p.DefaultAccount == "root" {
			bad("defaultAccount: unknown account %q", p.DefaultAccount)
		}
	}
	// scheduler parameters
	sp := p.SchedulerParameters
	s.schedInterval = durOr(sp.SchedInterval, DefaultSchedInterval)
	s.bfInterval = durOr(sp.BfInterval, DefaultBfInterval)
	s.bfWindow = DefaultBfWindow
	if sp.BfWindow != nil {
		s.bfWindow = sim.Duration(*sp.BfWindow)
	}
	s.bfRes = durOr(sp.BfResolution, DefaultBfResolution)
	s.depth = intOr(sp.DefaultQueueDepth, DefaultQueueDepth)
	s.maxTest = intOr(sp.BfMaxJobTest, DefaultBfMaxJobTest)
	s.partReserve = intOr(sp.BfJobPartCountReserve, 0)
	s.maxJobUser = intOr(sp.BfMaxJobUser, 0)
	s.maxJobPart = intOr(sp.BfMaxJobPart, 0)
	if sp.BfMinPrioReserve != nil {
		s.minPrioReserve = *sp.BfMinPrioReserve
	}
	for _, c := range []struct {
		bad bool
		msg string
	}{
		{s.schedInterval <= 0, "sched_interval: must be > 0"},
		{s.bfInterval <= 0, "bf_interval: must be > 0"},
		{s.bfWindow <= 0 || s.bfWindow > maxBfWindow, "bf_window: must be in 1..43200 minutes"},
		{s.bfRes <= 0, "bf_resolution: must be > 0"},
		{s.depth < 1, "default_queue_depth: must be >= 1"},
		{s.maxTest < 1, "bf_max_job_test: must be >= 1"},
		{s.partReserve < 0, "bf_job_part_count_reserve: must be >= 0"},
		{s.maxJobUser < 0, "bf_max_job_user: must be >= 0"},
		{s.maxJobPart < 0, "bf_max_job_part: must be >= 0"},
	} {
		if c.bad {
			bad("schedulerParameters.%s", c.msg)
		}
	}
	if sp.BfContinue != nil && *sp.BfContinue {
		s.warnings = append(s.warnings, "slurm: schedulerParameters.bf_continue is read but not modelled (each backfill cycle completes at one virtual time)")
	}
	switch strings.TrimPrefix(strings.ToLower(strings.TrimSpace(p.TopologyPlugin)), "topology/") {
	case "", "flat", "default", "none":
	case "tree":
		s.topo = &treeSel{sums: map[[2]int32]int64{}}
	default:
		bad("topologyPlugin: unknown %q (want flat or tree)", p.TopologyPlugin)
	}
	if strings.TrimSpace(p.Placement) != "" {
		if s.placer, err = gplace.New(p.Placement); err != nil {
			bad("placement: %w", err)
		} else if s.topo != nil {
			bad("placement: %q with topologyPlugin tree: choose one node selection", p.Placement)
		} else if !gplace.HonoursAllow(s.placer) {
			bad("placement: %q cannot be confined to a partition's nodes (use first-fit, best-fit, spread or fgd; topologyPlugin tree is Slurm's topology-aware selection)", p.Placement)
		}
		s.xpl.Allow = func(n sim.NodeID) bool { return s.xpart.mask[n] && s.xok(n) }
	}
	if s.nodeSel, err = parseNodeSelection(p.NodeSelection); err != nil {
		errs = append(errs, err)
	}
	if s.taskCPUs, err = parseBestFitCPUs(p.BestFitCPUs); err != nil {
		errs = append(errs, err)
	}
	s.wholeSec = p.WholeSeconds
	s.killWait = defaultKillWait
	if p.KillWait != nil {
		if s.killWait = sim.Duration(*p.KillWait); s.killWait < 0 {
			bad("killWait: %s is negative", s.killWait)
		}
	}
	switch strings.ToLower(strings.TrimPrefix(strings.TrimSpace(p.AccountingStorage), "accounting_storage/")) {
	case "", "slurmdbd":
	case "none":
		s.noAcct = true
		s.wFS = 0 // fair share needs the association usage slurmdbd keeps
		s.anyWeight = s.wAge+s.wJS+s.wPart+s.wQOS > 0
	default:
		bad("accountingStorage: unknown %q (want slurmdbd or none)", p.AccountingStorage)
	}
	if s.endCharge, err = parseEnforce(p.AccountingStorageEnforce); err != nil {
		errs = append(errs, err)
	}
	if s.distinct, err = parseGangNodes(p.GangNodes); err != nil {
		errs = append(errs, err)
	}
	if s.version, err = parseVersion(p.Version); err != nil {
		errs = append(errs, err)
	}
	if s.willRunMode, err = parseWillRun(p.WillRun); err != nil {
		errs = append(errs, err)
	}
	s.requeueDelay = durOr(p.RequeueDelay, DefaultRequeueDelay)
	s.batchDelay = durOr(p.SchedulerParameters.BatchSchedDelay, DefaultBatchSchedDelay)
	if s.batchDelay < 0 {
		bad("schedulerParameters.batch_sched_delay: must be >= 0")
	}
	s.arrivedAt, s.batchWake, s.resvWoke = sim.Never, sim.Never, sim.Never
	s.lastBatch = -sim.Time(s.batchDelay)
	s.clockOff = durOr(p.ClockOffset, 0)
	s.uptime = durOr(p.ControllerUptime, 0)
	if s.requeueDelay < 0 {
		bad("requeueDelay: must be >= 0")
	}
	if s.clockOff < 0 {
		bad("clockOffset: must be >= 0")
	}
	s.calcUptime = durOr(p.CalcUptime, s.uptime)
	if s.calcUptime < 0 {
		bad("calcUptime: must be >= 0")
	}
	if s.uptime < 0 {
		bad("controllerUptime: must be >= 0")
	}
	// preemption
	if s.ptype, err = parsePreemptType(p.PreemptType); err != nil {
		errs = append(errs, err)
	}
	if s.pmode, err = parseMode("preemptMode", p.PreemptMode); err != nil {
		errs = append(errs, err)
	}
	if s.pmode == modeUnset {
		s.pmode = modeOff
	}
	s.exempt = durOr(p.PreemptExemptTime, 0)
	s.youngest = p.PreemptParameters.YoungestFirst
	if s.ptype != preemptNone && s.pmode == modeOff {
		// preempt/partition_prio and preempt/qos report preemption enabled only
		// when the cluster PreemptMode is not OFF (PREEMPT_DATA_ENABLED), and
		// slurm_find_preemptable_jobs finds no candidates otherwise, whatever
		// the partitions' or QOS' own modes.
		s.warnings = append(s.warnings, "slurm: preemptType is set but the cluster preemptMode is OFF: Slurm then preempts nothing (partition and QOS preemptModes do not enable it); set preemptMode")
		s.ptype = preemptNone
	}
	// reservations
	for i, rc := range p.Reservations {
		f := fmt.Sprintf("reservations[%d]", i)
		if rc.Name == "" {
			bad("%s.name: required", f)
			continue
		}
		for _, e := range rc.Nodes {
			if err := checkNodeExpr(e); err != nil {
				bad("%s.nodes: %w", f, err)
			}
		}
		if len(rc.Nodes) == 0 {
			bad("%s.nodes: required", f)
		}
		r := &resv{name: rc.Name, exprs: rc.Nodes, start: sim.Time(rc.StartTime), end: sim.Never, accounts: rc.Accounts, users: map[string]bool{}, part: -1}
		switch {
		case rc.EndTime != nil && rc.Duration != nil:
			bad("%s: give endTime or duration, not both", f)
		case rc.EndTime != nil:
			r.end = sim.Time(*rc.EndTime)
		case rc.Duration != nil:
			r.end = r.start.Add(sim.Duration(*rc.Duration))
		}
		if r.end <= r.start {
			bad("%s.endTime: must be after startTime", f)
		}
		for _, u := range rc.Users {
			r.users[u] = true
		}
		for _, a := range rc.Accounts {
			k, ok := s.tree.accounts[a]
			if !ok {
				bad("%s.accounts: unknown account %q", f, a)
				continue
			}
			r.acctIdx = append(r.acctIdx, k)
		}
		if rc.Partition != "" {
			k, ok := s.partByName[rc.Partition]
			if !ok {
				bad("%s.partition: unknown partition %q", f, rc.Partition)
			}
			r.part = k
		}
		if len(rc.Users) == 0 && len(rc.Accounts) == 0 && rc.Partition == "" {
			bad("%s: needs users, accounts or partition (who may use it)", f)
		}
		s.resvs = append(s.resvs, r)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}

// Name returns "slurm".
func (s *Slurm) Name() string { return "slurm" }

// Warnings lists configuration that is read but not simulated.
func (s *Slurm) Warnings() []string { return s.warnings }

func cfgErr(format string, a ...any) error {
	return &policies.ConfigError{Err: fmt.Errorf(format, a...)}
}

// setup resolves node expressions and maps every job of the run (arrived or not)
// to its partition, QOS and association, checking that it can ever run there.
func (s *Slurm) setup(v *sim.View) error {
	c := v.Cluster()
	if err := gplace.Prepare(s.placer, v); err != nil {
		return err
	}
	nn := c.NumNodes()
	var err error
	for i, pt := range s.parts {
		if pt.mask, err = matchNodes(c, fmt.Sprintf("partitions[%d] (%s).nodes", i, pt.name), pt.exprs); err != nil {
			return &policies.ConfigError{Err: err}
		}
		for n, in := range pt.mask {
			if in {
				pt.nodes = append(pt.nodes, sim.NodeID(n))
			}
		}
	}
	s.nodeResv = make([][]int, nn)
	for i, r := range s.resvs {
		if r.mask, err = matchNodes(c, fmt.Sprintf("reservations[%d] (%s).nodes", i, r.name), r.exprs); err != nil {
			return &policies.ConfigError{Err: err}
		}
		for n, in := range r.mask {
			if in {
				s.nodeResv[n] = append(s.nodeResv[n], i)
			}
		}
	}
	s.jobs = make([]jobInfo, v.NumJobs())
	for r := range s.jobs {
		j := v.Job(sim.JobRef(r))
		if err := s.mapJob(v, j, &s.jobs[r]); err != nil {
			return err
		}
	}
	s.tree.recompute()
	s.pendUsage = make([]float64, len(s.tree.a))
	s.ov = newOverlay(c)
	s.ov.distinct = s.distinct
	s.blockedPart = make([]bool, len(s.parts))
	s.partRes = make([]int, len(s.parts))
	s.partTested = make([]int, len(s.parts))
	s.userTested = map[string]int{}
	s.blockedNode = make([]bool, nn)
	s.nodeRes = make([][]interval, nn)
	s.acc = make([]bool, nn)
	s.nextCalc = s.firstCalc()
	s.bfOKFn = s.bfOK
	s.notBlockedFn = s.notBlocked
	for n := range nn {
		s.clusterCPUs += float64(c.Node(sim.NodeID(n)).CPUMilli / 1000)
	}
	return nil
}

func (s *Slurm) mapJob(v *sim.View, j *sim.Job, info *jobInfo) error {
	sp := &j.Spec
	// partition
	pi := -1
	if name, ok := s.p.PartitionMapping[sp.Queue]; ok {
		pi = s.partByName[name]
	} else if k, ok := s.partByName[sp.Queue]; ok {
		pi = k
	} else {
		pi = s.defPart
	}
	if pi < 0 {
		names := make([]string, len(s.parts))
		for i, pt := range s.parts {
			names[i] = pt.name
		}
		return cfgErr("job %s: queue %q names no partition (partitions: %s) and no partition is default: true; set params.partitionMapping", sp.ID, sp.Queue, strings.Join(names, ", "))
	}
	pt := s.parts[pi]
	info.part = int32(pi)
	if !s.canEverFitCached(v.Cluster(), int32(pi), pt, sp) {
		return cfgErr("job %s: needs %d x %d GPU(s) (models %v), %d mCPU, %d MiB per replica, but partition %q (%d nodes) can never hold it", sp.ID, sp.Replicas, sp.GPUsPerReplica, sp.GPUModels, sp.CPUMilli, sp.MemoryMiB, pt.name, len(pt.nodes))
	}
	// QOS
	info.qos = 0
	if k, ok := s.classQOS[sp.Class]; ok {
		info.qos = int32(k)
	}
	// association
	info.assoc = s.userAssoc(sp)
	// time limit
	switch {
	case v.Oracle():
		info.limit = j.Estimate
	case sp.Walltime > 0:
		info.limit = sp.Walltime
	case pt.defTime > 0:
		info.limit = pt.defTime
	default:
		info.limit = pt.maxTime
	}
	info.overMax = info.limit > pt.maxTime
	if info.overMax && s.p.EnforcePartLimits {
		return cfgErr("job %s: time limit %v exceeds partition %q maxTime %v (enforcePartLimits: true)", sp.ID, info.limit, pt.name, pt.maxTime)
	}
	info.prio = 1
	return nil
}

// userAssoc maps a job to a user association: the user under the account named
// by the job's team, else the user's first association, else a new user
// association (1 share) under the team's account or the default account.
func (s *Slurm) userAssoc(sp *sim.JobSpec) int32 {
	t := s.tree
	user := sp.User
	if user == "" {
		user = "nobody"
	}
	team, teamOK := t.accounts[sp.Team]
	if teamOK && team != 0 {
		if a := t.userAssoc(user, team); a >= 0 {
			return a
		}
	}
	if as := t.users[user]; len(as) > 0 {
		return as[0]
	}
	acct := team
	if !teamOK || team == 0 {
		name := s.p.DefaultAccount
		if name == "" {
			name = "default"
		}
		k, ok := t.accounts[name]
		if !ok {
			k = t.add(0, assoc{name: name, shares: 1})
		}
		acct = k
	}
	return t.add(acct, assoc{name: user, user: true, shares: 1})
}

// fitKey is what canEverFit depends on: the partition and the job's shape.
type fitKey struct {
	part           int32
	replicas, gpus int32
	milli          sim.MilliGPU
	cpu, mem       int64
	models         string
}

// canEverFitCached is canEverFit memoized by job shape for the set-up, which
// asks it for every job of the run (jobs of a trace share few shapes; without
// the cache the set-up costs jobs x partition nodes).
func (s *Slurm) canEverFitCached(c *sim.Cluster, part int32, pt *partition, sp *sim.JobSpec) bool {
	k := fitKey{part, sp.Replicas, sp.GPUsPerReplica, sp.GPUMilli, sp.CPUMilli, sp.MemoryMiB, strings.Join(sp.GPUModels, "\x00")}
	if ok, hit := s.fitCache[k]; hit {
		return ok
	}
	if s.fitCache == nil {
		s.fitCache = map[fitKey]bool{}
	}
	ok := s.canEverFit(c, pt, sp)
	s.fitCache[k] = ok
	return ok
}

// canEverFit reports whether the partition's nodes, empty, can hold the job.
func (s *Slurm) canEverFit(c *sim.Cluster, pt *partition, sp *sim.JobSpec) bool {
	var k int64
	for _, n := range pt.nodes {
		spec := c.Node(n)
		if sp.GPUsPerReplica > 0 && (spec.GPUs == 0 || !sp.AllowsModel(spec.GPUModel)) {
			continue
		}
		h := int64(sp.Replicas)
		if s.distinct {
			h = 1
		}
		if g := sp.GPUsPerReplica; g > 0 && !sp.Fractional() {
			h = min(h, int64(spec.GPUs/g))
		}
		if sp.CPUMilli > 0 {
			h = min(h, spec.CPUMilli/sp.CPUMilli)
		}
		if sp.MemoryMiB > 0 {
			h = min(h, spec.MemoryMiB/sp.MemoryMiB)
		}
		k += h
	}
	return k >= int64(sp.Replicas)
}

func gpuUnits(sp *sim.JobSpec) float64 {
	return float64(sp.TotalGPUs()) * float64(sp.GPUMilli) / float64(sim.WholeGPU)
}

func (s *Slurm) init(v *sim.View) error {
	if !s.inited {
		s.inited = true
		s.initErr = s.setup(v)
	}
	if s.initErr == nil && len(s.jobs) < v.NumJobs() { // jobs submitted since (live runs)
		s.initErr = s.grow(v)
	}
	return s.initErr
}

// grow maps the jobs submitted after the set-up (sim.Live.Submit: the job
// table of a live run grows) exactly as setup maps the run's jobs, in Ref
// order. A job's new user association (mapJob's userAssoc: a user seen for
// the first time, maybe under a new default account) extends the tree; the
// per-association pendUsage grows with it and the fair-share factors are
// recomputed from the current usage, as setup computes them once every
// association exists. A job that cannot be mapped (no partition, can never
// fit, over MaxTime with enforcePartLimits) is the error setup would have
// refused the run with; it stops the policy. Without submissions after the
// first call (every simulation) grow never runs.
func (s *Slurm) grow(v *sim.View) error {
	n0 := len(s.tree.a)
	var err error
	for r := len(s.jobs); r < v.NumJobs(); r++ {
		var info jobInfo
		if err = s.mapJob(v, v.Job(sim.JobRef(r)), &info); err != nil {
			break
		}
		s.jobs = append(s.jobs, info)
	}
	if len(s.tree.a) > n0 {
		s.pendUsage = append(s.pendUsage, make([]float64, len(s.tree.a)-n0)...)
		s.tree.recompute()
	}
	return err
}

// Observe keeps usage accounting and priorities in step with the engine.
func (s *Slurm) Observe(v *sim.View, e sim.Event) {
	if s.init(v) != nil {
		return
	}
	j := v.Job(e.Job)
	info := &s.jobs[e.Job]
	switch e.Kind {
	case sim.EvArrive:
		info.prio = s.priority(v, j, e.Time)
	case sim.EvStart:
		info.acctFrom = e.Time
	case sim.EvFinish, sim.EvKill, sim.EvTimeout, sim.EvPreempt, sim.EvSuspend:
		s.freed = true
		if e.Kind != sim.EvSuspend {
			s.noteRelease(j, e.Time)
		}
		// Without AccountingStorageEnforce=limits, a run's usage since the
		// last calc step is lost when it ends (parseEnforce); a suspension
		// is not an end.
		if e.Time > info.acctFrom && (s.endCharge || e.Kind == sim.EvSuspend) {
			s.pendUsage[info.assoc] += s.newUsage(gpuUnits(&j.Spec), info.acctFrom, e.Time)
		}
		info.acctFrom = e.Time
		switch e.Kind {
		case sim.EvSuspend:
			info.usedWall += e.Time.Sub(j.LastStart)
		case sim.EvPreempt:
			info.usedWall = 0
			// job_mgr.c: a requeued job's begin time is pushed back; it is
			// not eligible before it.
			info.eligible = e.Time.Add(s.requeueDelay)
			info.held = true
		}
	}
}

// priority is priority/multifactor at time t (factors as last computed).
func (s *Slurm) priority(v *sim.View, j *sim.Job, t sim.Time) int64 {
	if !s.anyWeight {
		return 1
	}
	info := &s.jobs[j.Ref]
	sp := &j.Spec
	var p float64
	if s.wAge > 0 {
		// A requeued job accrues age again from its new begin time
		// (batch_requeue_fini resets accrue_time).
		from := max(sp.Submit, info.eligible)
		p += s.wAge * min(1, float64(max(t-from, 0))/float64(s.maxAge))
	}
	if s.wFS > 0 {
		p += s.wFS * s.tree.a[info.assoc].fs
	}
	if s.wJS > 0 {
		p += s.wJS * s.jobSizeFactor(v.Cluster(), sp, info.limit)
	}
	if s.wPart > 0 && s.maxJobFactor > 0 {
		p += s.wPart * float64(s.parts[info.part].jobFactor) / float64(s.maxJobFactor)
	}
	if s.wQOS > 0 && s.maxQOSPrio > 0 {
		p += s.wQOS * float64(s.qos[info.qos].prio) / float64(s.maxQOSPrio)
	}
	pr := int64(p)
	if pr > math.MaxUint32 {
		pr = math.MaxUint32
	}
	return max(pr, 1)
}

// calc runs the PriorityCalcPeriod steps due by now: usage decays by the
// half-life, the usage of the step is recorded (GPU-seconds), fair share is
// recomputed and pending jobs get new priorities. Nothing changes between steps.
func (s *Slurm) calc(v *sim.View) {
	now := v.Now()
	if now < s.nextCalc {
		return
	}
	for s.nextCalc <= now {
		step := s.nextCalc
		if len(v.Running()) == 0 && !s.anyPendUsage() {
			// idle: jump over the empty steps at once (decay composes exactly)
			k := (now - step) / sim.Time(s.calcPeriod)
			step += k * sim.Time(s.calcPeriod)
		}
		if s.usage == usageSlurm {
			// usage charged at a run's end decays with the rest (_apply_decay)
			s.chargePending()
			if s.classicLag() {
				s.tree.recompute()
			}
		}
		if f := s.decayFactor(s.lastCalc, step); f != 1 {
			s.tree.decay(f)
		}
		s.chargePending()
		for _, r := range v.Running() {
			info := &s.jobs[r.Ref]
			if step > info.acctFrom {
				s.tree.charge(info.assoc, s.newUsage(gpuUnits(&r.Spec), info.acctFrom, step))
				info.acctFrom = step
			}
		}
		s.lastCalc = step
		s.nextCalc = step.Add(s.calcPeriod)
	}
	if !s.classicLag() {
		s.tree.recompute()
	}
	for j := v.PendingHead(); j != nil; j = v.NextPending(j) {
		s.jobs[j.Ref].prio = s.priority(v, j, s.lastCalc)
	}
}

// chargePending records the usage of the runs that ended since the last step.
func (s *Slurm) chargePending() {
	for a, u := range s.pendUsage {
		if u != 0 {
			s.tree.charge(int32(a), u)
			s.pendUsage[a] = 0
		}
	}
}

func (s *Slurm) anyPendUsage() bool {
	for _, u := range s.pendUsage {
		if u != 0 {
			return true
		}
	}
	return false
}

// runLimit is the time limit of j's next (or current) run: its limit minus the
// run time it used before suspensions.
func (s *Slurm) runLimit(j *sim.Job) sim.Duration {
	info := &s.jobs[j.Ref]
	if info.limit == unlimited {
		return unlimited
	}
	return max(info.limit-info.usedWall, 1)
}

// resvBlocks reports whether an advanced reservation keeps job j off node n for
// a run over [t0, t1).
func (s *Slurm) resvBlocks(j *sim.Job, n sim.NodeID, t0, t1 sim.Time) bool {
	for _, ri := range s.nodeResv[n] {
		r := s.resvs[ri]
		if t0 < r.end && t1 > r.start && !s.resvAllows(r, j) {
			return true
		}
	}
	return false
}

func (s *Slurm) resvAllows(r *resv, j *sim.Job) bool {
	info := &s.jobs[j.Ref]
	if r.part >= 0 && int(info.part) != r.part {
		return false
	}
	if len(r.users) == 0 && len(r.acctIdx) == 0 {
		return true // partition-only reservation
	}
	if r.users[j.Spec.User] {
		return true
	}
	for a := s.tree.a[info.assoc].parent; a >= 0; a = s.tree.a[a].parent {
		if slices.Contains(r.acctIdx, a) {
			return true
		}
	}
	return false
}

// buildQueue sorts the pending jobs: suspended jobs first within a tier (they
// resume as soon as they can), then higher partition PriorityTier, higher
// priority, lower JobRef (job id).
func (s *Slurm) buildQueue(v *sim.View, full bool) {
	s.queue = s.queue[:0]
	s.heldRelease = sim.Never
	now := v.Now()
	for j := v.PendingHead(); j != nil; j = v.NextPending(j) {
		info := &s.jobs[j.Ref]
		if !info.seen {
			// a new submission (the engine reports arrivals to Observe only
			// after this scheduling point)
			info.seen = true
			s.arrivedAt = min(s.arrivedAt, j.Spec.Submit)
		}
		if info.held {
			// A requeued job waits for its begin time (reason BeginTime),
			// then for the next full main-scheduler pass, which makes it
			// eligible again (fidelity fixture preempt-requeue).
			if !full || info.eligible > now {
				s.heldRelease = min(s.heldRelease, s.ceilTick(max(info.eligible, now+1), s.schedInterval))
				continue
			}
			info.held = false
		}
		s.queue = append(s.queue, j)
	}
	slices.SortFunc(s.queue, func(a, b *sim.Job) int {
		ia, ib := &s.jobs[a.Ref], &s.jobs[b.Ref]
		if ta, tb := s.parts[ia.part].tier, s.parts[ib.part].tier; ta != tb {
			return tb - ta
		}
		if sa, sb := a.Suspended(), b.Suspended(); sa != sb {
			if sa {
				return -1
			}
			return 1
		}
		// higher priority first, then the lower job id
		return cmp.Or(cmp.Compare(ib.prio, ia.prio), cmp.Compare(a.Ref, b.Ref))
	})
}

func nextGrid(now sim.Time, iv sim.Duration) sim.Time {
	return (now/sim.Time(iv) + 1) * sim.Time(iv)
}

// Schedule runs, in order: the priority calculation when a PriorityCalcPeriod
// step is due, time-limit kills for jobs running past a partition default limit,
// the main scheduler (depth-limited, or full every sched_interval) and, every
// bf_interval, the backfill scheduler.
func (s *Slurm) Schedule(v *sim.View, p *sim.Plan) error {
	if err := s.init(v); err != nil {
		return err
	}
	now := v.Now()
	if s.anyWeight && !s.noAcct {
		s.calc(v)
	}
	wakeLimit, err := s.enforceLimits(v, p)
	if err != nil {
		return err
	}
	// The periodic passes run on their own clocks (multiples of sched_interval and
	// bf_interval from slurmctld's start); a grid time at which nothing was
	// pending needs no call since its pass would have done nothing.
	full := s.onTick(now, s.schedInterval)
	var runMain bool
	if s.schedPasses != nil {
		runMain, full, s.nextFull = s.recordedPass(now)
	}
	s.buildQueue(v, full)
	if s.schedPasses != nil {
		s.freed, s.arrivedAt, s.batchWake = false, sim.Never, sim.Never
	} else {
		s.nextFull = s.nextTick(now, s.schedInterval)
		runMain = s.mainDue(now, full)
	}
	if runMain {
		if err := s.mainPass(v, p, full); err != nil {
			return err
		}
	}
	runBF, nextBF := s.bfTick(now)
	s.nextBF = nextBF
	if runBF {
		if err := s.backfill(v, p); err != nil {
			return err
		}
	}
	if v.PendingCount() > 0 {
		w := min(s.nextFull, s.nextBF)
		if s.anyWeight && !s.noAcct {
			w = min(w, s.nextCalc)
		}
		p.Wake(min(w, s.batchWake))
		if s.schedPasses != nil {
			// a recorded pass or cycle runs even on an idle cluster (a
			// node may still be completing)
			p.Release(w)
		}
		if s.heldRelease != sim.Never {
			p.Release(s.heldRelease)
		}
		if now == s.resvWoke {
			// woken by a reservation boundary on an idle cluster: the
			// passes that can start the jobs it frees come at their ticks
			p.Release(w)
		}
		if b := s.nextResvBoundary(now); b != sim.Never {
			// an advanced reservation starting or ending changes what can
			// start even on an idle cluster
			p.Release(b)
			s.resvWoke = b
		}
	}
	if wakeLimit != sim.Never {
		p.Wake(wakeLimit)
	}
	return nil
}

// enforceLimits kills running jobs without a walltime of their own once they
// reach their partition's DefaultTime/MaxTime (the engine enforces only job
// walltimes), and returns the next such deadline.
func (s *Slurm) enforceLimits(v *sim.View, p *sim.Plan) (sim.Time, error) {
	now := v.Now()
	next := sim.Never
	s.cands = s.cands[:0]
	for _, r := range v.Running() {
		info := &s.jobs[r.Ref]
		if r.Spec.Walltime > 0 || info.limit == unlimited || v.Oracle() {
			continue
		}
		dl := r.LastStart.Add(s.runLimit(r))
		switch {
		case dl > now:
			next = min(next, dl)
		case r.Preemptible(now):
			s.cands = append(s.cands, r)
		default:
			next = min(next, r.ProtectedUntil()) // killed once the engine allows it
		}
	}
	slices.SortFunc(s.cands, func(a, b *sim.Job) int { return int(a.Ref - b.Ref) })
	for _, r := range s.cands {
		if err := p.AddPreempt(r.Ref, sim.PreemptKill, "TimeLimit (partition default time)"); err != nil {
			return next, err
		}
		s.freed = true // the engine reports the kill after the next scheduling point
	}
	return next, nil
}

// mainPass is the main scheduler: jobs in queue order (the first
// default_queue_depth, or all on a full pass) start where they fit; when one
// cannot start (even by preemption), its partition is blocked and that
// partition's nodes leave the candidate set for the rest of the pass, unless
// its priority is below bf_min_prio_reserve.
func (s *Slurm) mainPass(v *sim.View, p *sim.Plan, full bool) error {
	now := v.Now()
	clear(s.blockedPart)
	clear(s.blockedNode)
	limit := len(s.queue)
	if !full {
		limit = min(limit, s.depth)
	}
	for _, j := range s.queue[:limit] {
		info := &s.jobs[j.Ref]
		if info.overMax {
			p.Wait(j.Ref, sim.ReasonQuota) // PartitionTimeLimit
			continue
		}
		if s.blockedPart[info.part] {
			p.Wait(j.Ref, sim.ReasonBlocked) // Priority
			continue
		}
		pt := s.parts[info.part]
		end := now.Add(s.runLimit(j))
		ok := func(n sim.NodeID) bool {
			return !s.blockedNode[n] && !s.resvBlocks(j, n, now, end) && !s.completing(n, now)
		}
		if s.placeNow(v.Cluster(), j, pt, ok, &s.pl) {
			if err := p.AddStart(j.Ref, s.pl.nodes, s.pl.gpus); err != nil {
				return err
			}
			continue
		}
		if s.ptype != preemptNone {
			started, err := s.tryPreempt(v, p, j, pt, ok)
			if err != nil {
				return err
			}
			if started {
				continue
			}
		}
		if s.resvOnly(now, j, pt) {
			// Only advanced reservations keep it off: Slurm's reason is
			// ReqNodeNotAvail (reserved), which does not fail the partition
			// (fidelity fixture reservation).
			p.Wait(j.Ref, sim.ReasonReservation)
			continue
		}
		p.Wait(j.Ref, sim.ReasonNoCapacity) // Resources
		if info.prio < s.minPrioReserve {
			// job_scheduler.c _schedule: a job below bf_min_prio_reserve
			// does not fail its partition (fail_by_part = false).
			continue
		}
		if j.Suspended() {
			// A suspended job is not in Slurm's pending queue: it does not block
			// its partition, but its nodes stay out of this pass (its resources
			// are still its own).
			for _, n := range j.Nodes {
				s.blockedNode[n] = true
			}
			continue
		}
		s.blockedPart[info.part] = true
		for _, n := range pt.nodes {
			s.blockedNode[n] = true
		}
	}
	return nil
}
