package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/gpusim/gpusim/internal/hugepage"
)

// SpeedModel gives the speed factor of a job on its current placement (1 = the
// reference speed at which JobSpec.Duration was measured; 0.5 = twice as slow).
// It is ground truth: the engine uses it, policies never see it.
type SpeedModel interface {
	Speed(c *Cluster, j *Job) float64
}

// Config configures one simulation run.
type Config struct {
	Cluster *Cluster // required; the engine works on a private clone
	Jobs    []JobSpec
	Policy  Policy // required
	Seed    uint64
	// Oracle lets policies see true durations as Job.Estimate.
	Oracle bool
	// EnforceWalltime stops a job at its walltime (Slurm time limits). Jobs without a
	// walltime are never stopped.
	EnforceWalltime bool
	// CheckpointInterval: a preempted job keeps its work up to the last multiple of
	// this interval (reference-speed time) whose checkpoint it finished saving; 0
	// means no periodic checkpoints (all work since the last kept state is lost).
	CheckpointInterval Duration
	// CheckpointSave is the wall time each periodic checkpoint takes (the job makes
	// no progress meanwhile); a checkpoint interrupted by a preemption is lost.
	CheckpointSave Duration
	// CheckpointRestore is the wall time a requeued job spends at each restart before
	// it makes progress again (load the checkpoint, rendezvous, warm-up).
	CheckpointRestore Duration
	// CheckpointOnSignal: a job preempted after a grace period of at least
	// CheckpointSave (Preempt.Grace) saves a checkpoint in it and loses no work.
	CheckpointOnSignal bool
	// PreemptMinRuntime protects a job from preemption for this long after each
	// start (Slurm PreemptExemptTime).
	PreemptMinRuntime Duration
	// PreemptAntiChurn protects a job from preemption for this long after its
	// previous preemption, so the same job is not preempted again and again.
	PreemptAntiChurn Duration
	// LivelockPreemptions stops a run with an error when this many preemptions
	// happen with no job finishing in between: a policy that keeps preempting
	// (jobs evicting each other in a cycle) would otherwise never end. 0 means the
	// default, 100,000; negative disables the check.
	LivelockPreemptions int
	// SampleInterval is the time-series sampling period; 0 disables sampling.
	SampleInterval Duration
	// Horizon stops the run at this time (0 = run until nothing is left to do).
	Horizon Time
	// Speed is the ground-truth speed model; nil means every job runs at speed 1.
	Speed SpeedModel
	// Sharing turns on the device-level GPU sharing model and rate-based
	// progress (see SharingConfig, progress.go); nil keeps every output as without
	// sharing.
	Sharing *SharingConfig
	// Failures turns on failure injection and recovery (failures.go); nil keeps
	// every output as without it.
	Failures *FailureConfig
	// Power turns on power and carbon accounting and the power cap (power.go);
	// nil keeps every output as without it.
	Power *PowerConfig
	// Storage turns on checkpoint I/O over shared storage bandwidth
	// (storage.go); nil keeps every output as without it.
	Storage *StorageConfig
	// Telemetry turns on telemetry stragglers (telemetry.go); nil keeps every
	// output as without it.
	Telemetry *TelemetryConfig
	// RescaleDelay is the wall time an elastic job spends restarting after a
	// resize (Plan.AddResize) before it makes progress again; nil means
	// CheckpointSave + CheckpointRestore (docs/elastic.md).
	RescaleDelay *Duration
	// NoLog disables the event log (benchmarks).
	NoLog bool
	// LogFeed, when set (and NoLog is not), receives the event log while the
	// run goes on (see LogFeed); Run ends it on every return.
	LogFeed *LogFeed
	// Progress, if set, is called about every ProgressEvery events (default 65536)
	// and once at the end. It runs on the engine's goroutine.
	Progress      func(Progress)
	ProgressEvery int64
}

// Progress reports how far a run is.
type Progress struct {
	Now      Time
	Events   int64
	Ended    int // jobs finished, killed or timed out
	Total    int // jobs in the run
	LastSubm Time
}

// Sample is one row of the time series: the state in effect at Time.
type Sample struct {
	Time        Time
	AllocMilli  int64 // milli-GPU allocated
	BusyGPUs    int32 // GPUs with any allocation
	Running     int32
	Pending     int32
	PendingGPUs int64 // GPUs requested by pending jobs
	// LargestFree is, per topology level, the most whole free GPUs in one domain of
	// that level: the largest gang placeable inside one NVLink island, node, leaf...
	// (a whole-GPU fragmentation measure).
	LargestFree [NumLevels]int32
	// With sharing only: UsefulGPUs is the reference-speed work being done (sum
	// over running jobs of speed x GPUs); SharedGPUs counts GPUs holding >= 2 jobs.
	UsefulGPUs float64
	SharedGPUs int32
}

// Result is the outcome of a run.
type Result struct {
	Policy  string
	Jobs    []Job // indexed by JobRef
	Log     []Event
	Samples []Sample
	Cluster *Cluster // final state
	// Makespan is the time of the last job end (finish, kill or timeout); 0 if none.
	Makespan Time
	// End is the virtual time at which the run stopped.
	End Time
	// BusyMilliSeconds is the integral of allocated milli-GPU over [0, End], in
	// milli-GPU x seconds.
	BusyMilliSeconds float64
	// BusyMilliSecondsToMakespan is the same integral over [0, Makespan].
	BusyMilliSecondsToMakespan float64
	Events                     int64
	SchedulingPoints           int64
	// Sharing summarises device-level sharing; nil without Config.Sharing.
	Sharing *SharingStats
	// Serving is the serving jobs' latency record; nil when no job has a
	// JobSpec.Serving (docs/serving.md).
	Serving *ServingStats
	// Failures summarises failures and recovery; nil without Config.Failures.
	Failures *FailureStats
	// Power holds energy, carbon and peak power; nil without Config.Power.
	Power *PowerStats
	// DAG is the dependency record; nil when no job has a JobSpec.DAG
	// (docs/dag.md).
	DAG *DAGStats
	// Storage summarises checkpoint I/O; nil without Config.Storage.
	Storage *StorageStats
	// Telemetry holds the stragglers' cost; nil without Config.Telemetry.
	Telemetry *TelemetryStats
	// Phys is the physical models' state per sample, parallel to Samples;
	// nil without Config.Power and Config.Failures (sim/physsample.go).
	Phys []PhysSample
	// Elastic records resizes and sizes over time; nil when no job is
	// elastic (docs/elastic.md).
	Elastic *ElasticStats
}

// DefaultLivelockPreemptions is Config.LivelockPreemptions' default.
const DefaultLivelockPreemptions = 100_000

// ErrLivelock is wrapped by the error of a run stopped by the livelock check.
var ErrLivelock = errors.New("preemption livelock")

// Engine runs one simulation. It is single-threaded and not safe for concurrent use.
type Engine struct {
	cfg     Config
	cluster *Cluster
	jobs    []Job
	now     Time
	q       eventQueue
	seq     uint64
	nextArr int

	pendHead, pendTail *Job
	pend               bitset2 // pending Refs, for ordered insertion of requeued jobs
	pendN              int
	pendGPUs           int64
	running            []*Job
	runIdx             []int32

	policy     Policy
	observer   Observer
	view       View
	plan       Plan
	policyRand *rand.Rand

	log      []Event
	samples  []Sample
	nextSamp Time
	busyGPUs int32

	busy       float64
	busyAtLast float64
	lastEnd    Time
	events     int64
	points     int64
	lastWake   Time
	ended      int
	preemptRun int  // preemptions since the last finish (livelock check)
	lastFinish Time // time of the last completion
	nextTick   int64
	inSchedule bool
	deferred   []Event
	nodeSlab   []NodeID
	gpuSlab    []GPUID
	resAt      []Time
	waitWhy    []Reason
	share      *shareState   // nil without Config.Sharing
	serving    *servingState // nil without serving jobs
	fail       *failState    // nil without Config.Failures
	phys       []PhysSample  // with power or failures: per sample (Result.Phys)
	pow        *powerState   // nil without Config.Power
	dag        *dagState     // nil without JobSpec.DAG (dag.go)
	sto        *storageState // nil without Config.Storage
	tel        *telState     // nil without Config.Telemetry
	elastic    *ElasticStats // nil without elastic jobs (elastic.go); per-job record indexed by JobRef
}

// NewEngine validates cfg and prepares a run. Jobs are sorted by (Submit, ID); their
// JobRef is their index in that order. It returns an error for invalid jobs or
// duplicate IDs; it does not check feasibility (see Cluster.Feasible).
func NewEngine(cfg Config) (*Engine, error) {
	if cfg.Cluster == nil {
		return nil, errors.New("sim: no cluster")
	}
	if cfg.Policy == nil {
		return nil, errors.New("sim: no policy")
	}
	if cfg.ProgressEvery <= 0 {
		cfg.ProgressEvery = 1 << 16
	}
	if cfg.LivelockPreemptions == 0 {
		cfg.LivelockPreemptions = DefaultLivelockPreemptions
	}
	e := &Engine{cfg: cfg, cluster: cfg.Cluster.Clone(), policy: cfg.Policy, lastWake: -1}
	specs := make([]int, len(cfg.Jobs))
	for i := range specs {
		specs[i] = i
	}
	slices.SortFunc(specs, func(a, b int) int {
		sa, sb := &cfg.Jobs[a], &cfg.Jobs[b]
		if sa.Submit != sb.Submit {
			if sa.Submit < sb.Submit {
				return -1
			}
			return 1
		}
		return strings.Compare(string(sa.ID), string(sb.ID))
	})
	e.jobs = make([]Job, len(specs))
	hugepage.Advise(e.jobs)
	e.pend = newBitset2(len(specs))
	e.runIdx = make([]int32, len(specs))
	e.resAt = make([]Time, len(specs))
	e.waitWhy = make([]Reason, len(specs))
	if err := e.initJobs(cfg.Jobs, specs); err != nil {
		return nil, err
	}
	if err := e.initElastic(); err != nil {
		return nil, err
	}
	if err := e.initDAG(); err != nil {
		return nil, err
	}
	e.initServing()
	if e.cfg.Sharing != nil {
		if err := e.initShare(); err != nil {
			return nil, err
		}
		e.initServingQoS()
	}
	if cfg.Failures != nil {
		if err := e.initFailures(); err != nil {
			return nil, err
		}
	}
	if cfg.Power != nil {
		if err := e.initPower(); err != nil {
			return nil, err
		}
	}
	if cfg.Storage != nil {
		if err := e.initStorage(); err != nil {
			return nil, err
		}
	}
	if cfg.Telemetry != nil {
		if err := e.initTelemetry(); err != nil {
			return nil, err
		}
	}
	e.view.e = e
	e.policyRand = Stream(cfg.Seed, "policy/"+cfg.Policy.Name())
	if o, ok := cfg.Policy.(Observer); ok {
		e.observer = o
	}
	if !cfg.NoLog {
		// Submit, start and end per job, plus a margin for waits and preemptions:
		// growing a log of millions of events near its end would copy it whole.
		e.log = make([]Event, 0, 3*len(specs)+len(specs)/32+64)
		hugepage.Advise(e.log)
	}
	if f := cfg.LogFeed; f != nil {
		f.mu.Lock()
		f.jobs = e.jobs
		f.mu.Unlock()
	}
	// The specs now live in e.jobs; not keeping cfg.Jobs lets the caller's slice
	// be collected while the run goes on (scenarios.Run drops it once every
	// policy's engine is built).
	e.cfg.Jobs = nil
	return e, nil
}

// initJobs fills e.jobs (zeroed) from jobs[specs[i]], in parallel for large
// workloads: copying a million specs is memory-bound and the other cores are
// idle while the engine is built. The error is the one of the lowest job
// index, as a loop in order would return.
func (e *Engine) initJobs(jobs []JobSpec, specs []int) error {
	n := len(specs)
	workers := 1
	if n >= 1<<16 {
		workers = min(runtime.GOMAXPROCS(0), 4)
	}
	per := (n + workers - 1) / max(workers, 1)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, n)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = e.initJobRange(jobs, specs, lo, hi)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// initJobRange initialises e.jobs[lo:hi] and returns the first error.
func (e *Engine) initJobRange(jobs []JobSpec, specs []int, lo, hi int) error {
	for i := lo; i < hi; i++ {
		// Fields are set in place: e.jobs is zeroed, and building a Job value to
		// copy in would move its 400-odd bytes twice per job.
		j := &e.jobs[i]
		j.Spec = jobs[specs[i]]
		s := &j.Spec
		if err := s.Validate(); err != nil {
			return fmt.Errorf("job %q: %w", s.ID, err)
		}
		if i > 0 && jobs[specs[i-1]].ID == s.ID {
			return fmt.Errorf("duplicate job id %q", s.ID)
		}
		if s.Class == "" {
			s.Class = ClassUnknown
		}
		est := s.Walltime
		if e.cfg.Oracle || est == 0 {
			est = s.Duration
		}
		if est < 1 {
			est = 1
		}
		j.Ref, j.State, j.Estimate = JobRef(i), StatePending, est
		j.FirstStart, j.LastStart, j.End, j.lastPreempt = Never, Never, Never, Never
		e.runIdx[i] = -1
		e.resAt[i] = Never
	}
	return nil
}

// View returns the engine's view (for tests and harnesses).
func (e *Engine) View() *View { return &e.view }

func (e *Engine) record(k EventKind, j JobRef, val int64) {
	if !e.cfg.NoLog {
		e.log = append(e.log, Event{Time: e.now, Kind: k, Job: j, Value: val})
		if e.cfg.LogFeed != nil && len(e.log)&(logFeedStep-1) == 0 {
			e.cfg.LogFeed.publish(e.log, false, false)
		}
	}
	if e.observer != nil && k != EvReserve && k != EvWait {
		ev := Event{Time: e.now, Kind: k, Job: j, Value: val}
		if e.inSchedule {
			e.deferred = append(e.deferred, ev)
		} else {
			e.observer.Observe(&e.view, ev)
		}
	}
}

// Run executes the simulation to the end (or the horizon, or ctx cancellation).
func (e *Engine) Run(ctx context.Context) (res *Result, err error) {
	if f := e.cfg.LogFeed; f != nil {
		defer func() { f.publish(e.log, true, err != nil || res == nil) }()
	}
	horizon := e.cfg.Horizon
	if horizon <= 0 {
		horizon = Never
	}
	for {
		// Next event time: queue top or next arrival.
		t := Never
		if e.q.Len() > 0 {
			t = e.q.top().t
		}
		if e.nextArr < len(e.jobs) && e.jobs[e.nextArr].Spec.Submit < t {
			t = e.jobs[e.nextArr].Spec.Submit
		}
		if t == Never || t > horizon || e.fail != nil && e.failuresOnly() || e.tel != nil && e.telemetryOnly() {
			break
		}
		// Only wake-ups left and nothing running: the policy alone can change the
		// state; give it this one call and stop if it does nothing.
		idleWake := e.nextArr >= len(e.jobs) && len(e.running) == 0 && e.q.Len() > 0 && e.q.top().kind == qWake
		e.advance(t)
		dirty := e.popEnds(t)
		for e.nextArr < len(e.jobs) && e.jobs[e.nextArr].Spec.Submit == t {
			if j := &e.jobs[e.nextArr]; e.dag == nil || e.dagArrive(j) {
				e.arrive(j)
			}
			e.nextArr++
			dirty = true
		}
		if e.popTimers(t) {
			dirty = true
		}
		for e.q.Len() > 0 && e.q.top().t == t && e.q.top().kind >= qRepair && e.q.top().kind <= qECCFail {
			if err := e.sideEvent(e.q.pop()); err != nil {
				return nil, err
			}
			dirty = true
		}
		for e.q.Len() > 0 && e.q.top().t == t && e.q.top().kind >= qCkpt {
			// checkpoint I/O phases free nothing: no scheduling point
			if it := e.q.pop(); it.kind == qCkpt {
				e.stoPhaseEnd(it)
			} else {
				e.stoPoolEnd(it)
			}
		}
		if !dirty {
			continue
		}
		acted, err := e.schedule()
		if err != nil {
			return nil, err
		}
		if idleWake && !acted {
			e.dropIdleWakes()
		}
		if e.events >= e.nextTick {
			e.nextTick = e.events + e.cfg.ProgressEvery
			{
				if ctx != nil {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
				}
				if e.cfg.Progress != nil {
					e.cfg.Progress(e.progress())
				}
			}
		}
	}
	end := e.now
	if horizon != Never && horizon > end {
		e.advance(horizon)
		end = horizon
	}
	if e.cfg.SampleInterval > 0 && e.nextSamp == end {
		e.sample() // the state at End is included when End is on the grid
	}
	if e.share != nil {
		for _, j := range e.running {
			e.closeSegment(j) // speed metrics of jobs still running at the horizon
		}
	}
	res = &Result{
		Policy:                     e.policy.Name(),
		Jobs:                       e.jobs,
		Log:                        e.log,
		Samples:                    e.samples,
		Cluster:                    e.cluster,
		Makespan:                   e.lastEnd,
		End:                        end,
		BusyMilliSeconds:           e.busy,
		BusyMilliSecondsToMakespan: e.busyAtLast,
		Events:                     e.events,
		SchedulingPoints:           e.points,
		Phys:                       e.phys,
	}
	if e.share != nil {
		st := e.share.stats
		res.Sharing = &st
	}
	if e.serving != nil {
		res.Serving = e.servingResult()
	}
	if e.fail != nil {
		res.Failures = e.finishFailures(end)
	}
	if e.pow != nil {
		res.Power = e.powerClose()
	}
	if e.dag != nil {
		res.DAG = &e.dag.stats
	}
	if e.sto != nil {
		st := e.sto.stats
		res.Storage = &st
	}
	if e.tel != nil {
		res.Telemetry = e.finishTelemetry(end)
	}
	if e.elastic != nil {
		res.Elastic = e.elasticResult()
	}
	if e.cfg.Progress != nil {
		e.cfg.Progress(e.progress())
	}
	return res, nil
}

// advance moves virtual time to t, integrating utilization and emitting samples.
func (e *Engine) advance(t Time) {
	if t < e.now {
		panic(fmt.Sprintf("sim: time went backwards: %d -> %d", e.now, t))
	}
	if iv := e.cfg.SampleInterval; iv > 0 {
		for e.nextSamp < t {
			e.sample()
			e.nextSamp = e.nextSamp.Add(iv)
		}
	}
	if t > e.now {
		e.busy += float64(e.cluster.allocMilli) * (float64(t-e.now) / 1e6)
		if e.share != nil {
			e.share.integrate(float64(t-e.now) / 1e6)
		}
		if e.pow != nil {
			e.powerAdvance(t)
		}
		e.now = t
	}
}

func (e *Engine) arrive(j *Job) {
	e.events++
	e.pendPush(j)
	e.record(EvArrive, j.Ref, 0)
}

func (e *Engine) pendPush(j *Job) {
	// Arrivals come in Ref order, so they append; requeued jobs go back to their
	// Ref position.
	j.queued = true
	e.pendN++
	e.pendGPUs += int64(j.Spec.TotalGPUs())
	e.pend.set(int(j.Ref))
	if e.pendTail == nil || e.pendTail.Ref < j.Ref {
		j.pendPrev, j.pendNext = e.pendTail, nil
		if e.pendTail != nil {
			e.pendTail.pendNext = j
		} else {
			e.pendHead = j
		}
		e.pendTail = j
		return
	}
	// The successor is the first pending job with a larger Ref: found through a
	// two-level bitset of pending Refs instead of walking the list.
	at := &e.jobs[e.pend.next(int(j.Ref)+1)]
	j.pendNext, j.pendPrev = at, at.pendPrev
	if at.pendPrev != nil {
		at.pendPrev.pendNext = j
	} else {
		e.pendHead = j
	}
	at.pendPrev = j
}

func (e *Engine) pendRemove(j *Job) {
	if j.pendPrev != nil {
		j.pendPrev.pendNext = j.pendNext
	} else {
		e.pendHead = j.pendNext
	}
	if j.pendNext != nil {
		j.pendNext.pendPrev = j.pendPrev
	} else {
		e.pendTail = j.pendPrev
	}
	j.pendPrev, j.pendNext, j.queued = nil, nil, false
	e.pend.clear(int(j.Ref))
	e.pendN--
	e.pendGPUs -= int64(j.Spec.TotalGPUs())
}

func (e *Engine) schedule() (bool, error) {
	e.points++
	p := &e.plan
	p.Reset()
	p.eng = e
	e.inSchedule = true
	err := e.policy.Schedule(&e.view, p)
	e.inSchedule = false
	if p.err != nil {
		return false, p.err
	}
	if err != nil {
		return false, fmt.Errorf("policy %q at t=%s: %w", e.policy.Name(), e.now, err)
	}
	if e.observer != nil {
		for i := range e.deferred {
			e.observer.Observe(&e.view, e.deferred[i])
		}
	}
	e.deferred = e.deferred[:0]
	for _, r := range p.Reservations {
		if r.Job < 0 || int(r.Job) >= len(e.jobs) {
			return false, &PlanError{Policy: e.policy.Name(), At: e.now, Decision: "reservation", Err: fmt.Errorf("unknown job ref %d", r.Job)}
		}
		if e.resAt[r.Job] != r.At {
			e.resAt[r.Job] = r.At
			e.record(EvReserve, r.Job, int64(r.At))
		}
	}
	if p.WakeAt != Never && p.WakeAt > e.now && p.WakeAt != e.lastWake {
		e.seq++
		e.q.push(qitem{t: p.WakeAt, kind: qWake, seq: e.seq})
		e.lastWake = p.WakeAt
	}
	return len(p.Starts) > 0 || len(p.Preempts) > 0 || len(p.Resizes) > 0, nil
}

func (e *Engine) jobName(r JobRef) string {
	if r < 0 || int(r) >= len(e.jobs) {
		return fmt.Sprintf("#%d", r)
	}
	return string(e.jobs[r].Spec.ID)
}

func (e *Engine) applyStart(s *Start) error {
	if s.Job < 0 || int(s.Job) >= len(e.jobs) {
		return fmt.Errorf("unknown job ref %d", s.Job)
	}
	j := &e.jobs[s.Job]
	if j.State != StatePending || !j.queued {
		return fmt.Errorf("job is %s, not pending", j.State)
	}
	sp := &j.Spec
	g := int(sp.GPUsPerReplica)
	want := sp.TotalGPUs()
	if j.Spec.Elastic != nil && len(s.Nodes) != int(sp.Replicas) {
		if !sp.Elastic.Valid(int32(len(s.Nodes))) {
			return fmt.Errorf("%d nodes given for an elastic job of %d..%d replicas (step %d)", len(s.Nodes), sp.Elastic.Min, sp.Elastic.Max, sp.Elastic.Step)
		}
		want = int32(len(s.Nodes)) * sp.GPUsPerReplica
	} else if len(s.Nodes) != int(sp.Replicas) {
		return fmt.Errorf("%d nodes given for %d replicas", len(s.Nodes), sp.Replicas)
	}
	if len(s.GPUs) != int(want) {
		if sp.Unequal() {
			return fmt.Errorf("%d GPUs given for %d replicas x %d GPUs with a last replica of %d", len(s.GPUs), sp.Replicas, g, sp.LastReplicaGPUs)
		}
		return fmt.Errorf("%d GPUs given for %d replicas x %d GPUs", len(s.GPUs), sp.Replicas, g)
	}
	c := e.cluster
	milli := sp.GPUMilli
	mem := sp.MemoryMiB
	if j.suspended {
		mem = 0 // still allocated from before the suspension
		for r, n := range s.Nodes {
			if n != j.Nodes[r] {
				return fmt.Errorf("replica %d: suspended job must resume on node %s, not %d", r, c.nodes[j.Nodes[r]].Name, n)
			}
		}
	}
	for r, n := range s.Nodes {
		if n < 0 || int(n) >= c.NumNodes() {
			return fmt.Errorf("replica %d: unknown node %d", r, n)
		}
		if g > 0 && !sp.AllowsModel(c.nodes[n].GPUModel) {
			return fmt.Errorf("replica %d: node %s has GPU model %q, job allows %v", r, c.nodes[n].Name, c.nodes[n].GPUModel, sp.GPUModels)
		}
		if !c.fitsNode(n, sp.CPUMilli, mem) {
			return fmt.Errorf("replica %d: node %s lacks CPU or memory (free %d mCPU, %d MiB; need %d, %d)", r, c.nodes[n].Name, c.cpuFree[n], c.memFree[n], sp.CPUMilli, mem)
		}
		gs := ReplicaSlice(s.GPUs, r, g)
		for _, gpu := range gs {
			if gpu < 0 || int64(gpu) >= c.totalGPUs || c.gpuNode[gpu] != n {
				return fmt.Errorf("replica %d: GPU %d is not on node %s", r, gpu, c.nodes[n].Name)
			}
			if c.sharer(sp, gpu) {
				if c.gpuMode[gpu] == ShareMIG && !c.CanShare(sp, gpu) {
					return fmt.Errorf("replica %d: MIG GPU %d on node %s has no free instance for the job (mig_profile %q, %d MiB; reconfiguring: %v)", r, gpu, c.nodes[n].Name, sp.MIGProfile, sp.GPUMemMiB, c.MIGReconfiguring(gpu))
				}
				if !c.CanShare(sp, gpu) {
					return fmt.Errorf("replica %d: GPU %d on node %s (%s) cannot take the job: %d jobs, %d of %d MiB GPU memory used, job needs %d MiB", r, gpu, c.nodes[n].Name, c.gpuMode[gpu], c.shrN[gpu], c.shrMem[gpu], c.nodes[n].GPUMemMiB, sp.GPUMemMiB)
				}
				continue
			}
			if c.gpuMode != nil && c.gpuMode[gpu] == ShareMIG {
				return fmt.Errorf("replica %d: GPU %d on node %s is in MIG mode: only a 1-GPU job that accepts mig can use it", r, gpu, c.nodes[n].Name)
			}
			if milli >= WholeGPU && c.gpuUsed[gpu] != 0 || c.gpuUsed[gpu]+milli > WholeGPU {
				return fmt.Errorf("replica %d: GPU %d on node %s has %d milli free, needs %d", r, gpu, c.nodes[n].Name, WholeGPU-c.gpuUsed[gpu], milli)
			}
		}
		for a := range gs {
			for b := a + 1; b < len(gs); b++ {
				if gs[a] == gs[b] {
					return fmt.Errorf("replica %d: GPU %d given twice", r, gs[a])
				}
			}
		}
		if len(gs) == 1 && c.sharer(sp, gs[0]) {
			e.chargeShare(n, gs[0], j, mem, +1)
		} else {
			e.chargeReplica(n, gs, milli, sp.CPUMilli, mem, +1)
		}
	}
	e.pendRemove(j)
	j.Nodes = e.carveNodes(s.Nodes)
	j.GPUs = e.carveGPUs(s.GPUs)
	j.State = StateRunning
	e.waitWhy[j.Ref] = ReasonNone
	j.LastStart = e.now
	if j.FirstStart == Never {
		j.FirstStart = e.now
	}
	j.speed = 1
	if e.cfg.Speed != nil {
		j.speed = e.cfg.Speed.Speed(c, j)
		if !(j.speed > 0) || math.IsInf(j.speed, 0) {
			return fmt.Errorf("speed model returned %v", j.speed)
		}
	}
	if e.pow != nil {
		f, err := e.powerStart(j)
		if err != nil {
			return err
		}
		j.speed *= f
	}
	if e.tel != nil {
		e.telStart(j)
	}
	if j.Spec.Elastic != nil {
		if err := e.elasticSpeed(j); err != nil {
			return err
		}
		e.elasticSeg(j, int32(len(j.Nodes)))
	}
	j.runDone = j.Done
	j.runRestore = 0
	if j.restore {
		j.runRestore = e.cfg.CheckpointRestore
		if j.migrated {
			j.runRestore = j.migDelay
		}
	}
	if !j.suspended {
		j.usedWall = 0
	}
	j.restore, j.suspended, j.migrated = false, false, false
	j.protectedUntil = e.now.Add(e.cfg.PreemptMinRuntime)
	if j.lastPreempt != Never && e.cfg.PreemptAntiChurn > 0 {
		j.protectedUntil = max(j.protectedUntil, j.lastPreempt.Add(e.cfg.PreemptAntiChurn))
	}
	if e.share != nil {
		e.runIdx[j.Ref] = int32(len(e.running))
		e.running = append(e.running, j)
		e.startRated(j)
		e.record(EvStart, j.Ref, 0)
		return nil
	}
	if e.sto != nil && e.stoStart(j) {
		e.record(EvStart, j.Ref, 0)
		return nil
	}
	e.runIdx[j.Ref] = int32(len(e.running))
	e.running = append(e.running, j)
	e.queueEnd(j)
	e.record(EvStart, j.Ref, 0)
	return nil
}

// popEnds handles the end events at time t (the queue's top is at t or later)
// and reports whether any ended a run (a scheduling point).
func (e *Engine) popEnds(t Time) (dirty bool) {
	for e.q.Len() > 0 && e.q.top().t == t && e.q.top().kind == qEnd {
		it := e.q.pop()
		if e.finish(it) {
			dirty = true
			if e.dag != nil {
				e.dagEnded(&e.jobs[it.job])
			}
		}
	}
	return dirty
}

// popTimers handles the policy wake-ups and the ends of MIG reconfigurations
// at time t; any makes a scheduling point.
func (e *Engine) popTimers(t Time) (dirty bool) {
	for e.q.Len() > 0 && e.q.top().t == t && e.q.top().kind == qWake {
		e.q.pop()
		e.events++
		dirty = true
	}
	for e.q.Len() > 0 && e.q.top().t == t && e.q.top().kind == qReconf {
		e.reconfDone(GPUID(e.q.pop().job))
		dirty = true
	}
	return dirty
}

// dropIdleWakes ends an idle policy's wake-up loop: called after a scheduling
// point that began with only wake-ups left (no arrival to come, nothing
// running) and did nothing. When the queue still holds only wake-ups, they are
// dropped (failure and telemetry events stay: they can still change the
// cluster), except one for a hold the policy placed (Plan.ReleaseAt).
func (e *Engine) dropIdleWakes() {
	if e.q.Len() == 0 || e.q.top().kind != qWake || len(e.running) != 0 {
		return
	}
	if e.fail != nil || e.tel != nil {
		e.dropWakes()
	} else {
		e.q.h = e.q.h[:0]
	}
	if r := e.plan.ReleaseAt; r != Never && r > e.now {
		e.seq++
		e.q.push(qitem{t: r, kind: qWake, seq: e.seq})
	}
}

// queueEnd sets j.endTime for the run that starts now (j.runDone kept work,
// j.runRestore to redo first, at j.speed, with periodic checkpoint saves) and
// queues its end event: a timeout (negative generation) when the job's
// walltime ends first and EnforceWalltime is on. Any end event queued for an
// earlier run of j becomes stale (its generation no longer matches).
func (e *Engine) queueEnd(j *Job) {
	sp := &j.Spec
	runFor := e.runWall(j.runDone, sp.Duration, j.speed, e.ivOf(j)) + j.runRestore
	timeout := false
	if e.cfg.EnforceWalltime && sp.Walltime > 0 && runFor > sp.Walltime-j.usedWall {
		runFor = max(0, sp.Walltime-j.usedWall)
		timeout = true
	}
	j.endTime = e.now.Add(runFor)
	e.seq++
	gen := j.heapIdx + 1
	j.heapIdx = gen
	if timeout {
		gen = -gen
	}
	e.q.push(qitem{t: j.endTime, kind: qEnd, seq: e.seq, job: j.Ref, gen: gen})
}

func (e *Engine) chargeReplica(n NodeID, gs []GPUID, milli MilliGPU, cpu, mem int64, sign int) {
	c := e.cluster
	for _, gpu := range gs {
		if sign > 0 && c.gpuUsed[gpu] == 0 {
			e.busyGPUs++
			if e.share != nil {
				e.share.busy[c.GPUMode(gpu)]++
			}
		}
	}
	if sign > 0 {
		c.allocate(n, gs, milli, cpu, mem)
	} else {
		c.release(n, gs, milli, cpu, mem)
		for _, gpu := range gs {
			if c.gpuUsed[gpu] == 0 {
				e.busyGPUs--
				if e.share != nil {
					e.share.busy[c.GPUMode(gpu)]--
				}
			}
		}
	}
}

func (e *Engine) carveNodes(src []NodeID) []NodeID {
	if len(e.nodeSlab) < len(src) {
		e.nodeSlab = make([]NodeID, max(4096, len(src)))
	}
	out := e.nodeSlab[:len(src):len(src)]
	copy(out, src)
	e.nodeSlab = e.nodeSlab[len(src):]
	return out
}

func (e *Engine) carveGPUs(src []GPUID) []GPUID {
	if len(src) == 0 {
		return nil
	}
	if len(e.gpuSlab) < len(src) {
		e.gpuSlab = make([]GPUID, max(16384, len(src)))
	}
	out := e.gpuSlab[:len(src):len(src)]
	copy(out, src)
	e.gpuSlab = e.gpuSlab[len(src):]
	return out
}

// stop releases a running job's resources (its memory too unless keepMem) and
// removes it from the running set.
func (e *Engine) stop(j *Job, keepMem bool) {
	sp := &j.Spec
	g := int(sp.GPUsPerReplica)
	mem := sp.MemoryMiB
	if keepMem {
		mem = 0
	}
	if e.pow != nil {
		e.powerStop(j)
	}
	if e.sto != nil {
		e.stoStop(j)
	}
	if e.tel != nil {
		e.telStop(j)
	}
	if j.Spec.Elastic != nil {
		e.elasticSeg(j, 0)
	}
	if e.share != nil {
		e.stopRated(j, mem)
		return
	}
	for r, n := range j.Nodes {
		e.chargeReplica(n, ReplicaSlice(j.GPUs, r, g), sp.GPUMilli, sp.CPUMilli, mem, -1)
	}
	e.removeRunning(j)
}

// removeRunning takes j out of the running set (swap with the last, O(1)) and
// invalidates its pending end event.
func (e *Engine) removeRunning(j *Job) {
	i := e.runIdx[j.Ref]
	last := len(e.running) - 1
	e.running[i] = e.running[last]
	e.runIdx[e.running[i].Ref] = i
	e.running = e.running[:last]
	e.runIdx[j.Ref] = -1
	j.heapIdx++ // invalidates the pending end event
}

func (e *Engine) finish(it qitem) bool {
	j := &e.jobs[it.job]
	gen := it.gen
	timeout := gen < 0
	if timeout {
		gen = -gen
	}
	if j.State != StateRunning || gen != j.heapIdx {
		return false // stale: the job was preempted after this end was scheduled
	}
	e.events++
	e.ended++
	e.stop(j, false)
	j.End = e.now
	e.lastEnd = e.now
	e.busyAtLast = e.busy
	el := Duration(e.now - j.LastStart)
	if e.share != nil {
		// rate-based: stop closed the run state at now
		if timeout {
			j.State = StateTimeout
			j.Done = j.sh.rs.done
			j.Wasted += el
			j.Overhead += j.sh.rs.ovh
			e.record(EvTimeout, j.Ref, 0)
		} else {
			e.preemptRun = 0
			e.lastFinish = e.now
			j.State = StateCompleted
			j.Done = j.Spec.Duration
			j.Wasted += j.sh.rs.ovh
			j.Overhead += j.sh.rs.ovh
			e.record(EvFinish, j.Ref, 0)
		}
		return true
	}
	if timeout {
		j.State = StateTimeout
		done, _, ovh := e.runProgress(j, el)
		j.Done = done
		j.Wasted += el
		j.Overhead += ovh
		e.record(EvTimeout, j.Ref, 0)
	} else {
		e.preemptRun = 0
		e.lastFinish = e.now
		j.State = StateCompleted
		ovh := el - Duration(math.Ceil(float64(j.Spec.Duration-j.runDone)/j.speed))
		if j.speed == 1 {
			ovh = el - (j.Spec.Duration - j.runDone)
		}
		ovh = max(0, ovh)
		j.Done = j.Spec.Duration
		j.Wasted += ovh
		j.Overhead += ovh
		e.record(EvFinish, j.Ref, 0)
	}
	return true
}

func (e *Engine) applyPreempt(p *Preempt) error {
	if p.Job < 0 || int(p.Job) >= len(e.jobs) {
		return fmt.Errorf("unknown job ref %d", p.Job)
	}
	j := &e.jobs[p.Job]
	if j.State != StateRunning {
		return fmt.Errorf("job is %s, not running", j.State)
	}
	if p.Mode > PreemptMigrate {
		return fmt.Errorf("unknown preemption mode %d", p.Mode)
	}
	if !j.Preemptible(e.now) {
		return fmt.Errorf("job is protected from preemption until t=%s (minimum run time / anti-churn window)", j.protectedUntil)
	}
	if j.Spec.Elastic != nil && p.Mode == PreemptSuspend {
		return errors.New("an elastic job cannot be suspended (preempt it with a lease or requeue instead)")
	}
	if p.Grace < 0 {
		return fmt.Errorf("negative grace %s", p.Grace)
	}
	if p.Delay < 0 {
		return fmt.Errorf("negative migration delay %s", p.Delay)
	}
	if lim := e.cfg.LivelockPreemptions; lim > 0 && e.preemptRun >= lim {
		return fmt.Errorf("%w: %d preemptions and no job finished since t=%s; the policy keeps preempting (jobs evict each other in a cycle): set simulation.preemptMinRuntime or preemptAntiChurn, or change the preemption settings", ErrLivelock, e.preemptRun, e.lastFinish)
	}
	e.preemptRun++
	e.events++
	if e.share != nil {
		return e.preemptRated(j, p)
	}
	e.stop(j, p.Mode == PreemptSuspend)
	el := Duration(e.now - j.LastStart)
	done, ckpt, ovh := e.runProgress(j, el)
	j.Preempted++
	j.lastPreempt = e.now
	switch p.Mode {
	case PreemptKill:
		e.killed(j, done, el, ovh)
		return nil
	case PreemptSuspend:
		j.usedWall += el
		j.suspended = true
		j.GPUs = nil // Nodes stay: the job resumes there
		ckpt = done
	case PreemptLease, PreemptMigrate:
		ckpt = done // all work kept (a lease end, an iteration boundary)
		j.restore = true
		if p.Mode == PreemptMigrate {
			j.migrated, j.migDelay = true, p.Delay
		}
		j.Nodes, j.GPUs = nil, nil
	default:
		if c := e.cfg.CheckpointSave; e.cfg.CheckpointOnSignal && p.Grace >= c && p.Grace > 0 && el >= c {
			// saved in the last c of the grace period: the work done when the save
			// began survives
			sd, _, so := e.runProgress(j, el-c)
			ckpt, ovh = max(ckpt, sd), so+c
		}
		j.restore = true
		j.Nodes, j.GPUs = nil, nil
	}
	// Wall time not turned into surviving work: el minus the productive time of
	// the kept work.
	j.Overhead += ovh
	kept := ckpt - j.runDone
	prod := Duration(float64(kept) / j.speed)
	j.Wasted += max(0, el-prod)
	j.Done = ckpt
	e.repend(j, p.Mode)
	return nil
}

// killed ends a job stopped for good by its policy: work done (kept in
// Job.Done), the whole run el wasted, overhead ovh, and a kill event.
// applyEvict logs the eviction of pending job j before it started (Plan.Evict).
func (e *Engine) applyEvict(r JobRef) error {
	if r < 0 || int(r) >= len(e.jobs) {
		return fmt.Errorf("no job %d", r)
	}
	j := &e.jobs[r]
	if j.State != StatePending || int(r) >= e.nextArr {
		return fmt.Errorf("job is %s, not pending", j.State)
	}
	j.Preempted++
	e.record(EvEvict, r, 0)
	return nil
}

func (e *Engine) killed(j *Job, done, el, ovh Duration) {
	j.Done = done
	j.Wasted += el
	j.Overhead += ovh
	j.State = StateKilled
	e.ended++
	j.End = e.now
	e.lastEnd = e.now
	e.busyAtLast = e.busy
	e.record(EvKill, j.Ref, 0)
	if e.dag != nil {
		e.dagCancel(j.Ref)
	}
}

// repend puts a preempted job back in the pending queue and logs the preemption
// (a suspend or a preempt event).
func (e *Engine) repend(j *Job, mode PreemptMode) {
	j.State = StatePending
	e.pendPush(j)
	if mode == PreemptSuspend {
		e.record(EvSuspend, j.Ref, 0)
	} else {
		e.record(EvPreempt, j.Ref, 0)
	}
}

// runWall is the wall time a run needs to take a job from work d0 to work total at
// speed s, including periodic checkpoint saves (a checkpoint at every multiple of
// the interval strictly between d0 and total) but not the restore time.
func (e *Engine) runWall(d0, total Duration, s float64, iv Duration) Duration {
	rem := max(0, total-d0)
	w := rem
	if s != 1 {
		w = Duration(math.Ceil(float64(rem) / s))
	}
	if c := e.cfg.CheckpointSave; iv > 0 && c > 0 && total > 0 {
		n := (total-1)/iv - d0/iv // multiples k*iv with d0 < k*iv < total
		if n > 0 {
			w += Duration(n) * c
		}
	}
	return w
}

// runProgress returns, el after the start of j's current run, the work done, the
// work saved by the latest completed checkpoint (at least the run's starting
// work), and the wall time spent so far restoring and saving.
func (e *Engine) runProgress(j *Job, el Duration) (done, ckpt, overhead Duration) {
	if e.sto != nil && e.sto.jobs[j.Ref].on {
		return e.stoProgress(j, el)
	}
	d0, total, s := j.runDone, j.Spec.Duration, j.speed
	ck0 := d0 // checkpointed work at the run's start
	if e.tel != nil {
		ck0 = e.segCkpt(j)
	}
	if el <= j.runRestore {
		return d0, ck0, max(0, el)
	}
	overhead = j.runRestore
	t := float64(el - j.runRestore) // productive + saving time, µs
	iv, c := e.ivOf(j), e.cfg.CheckpointSave
	if iv <= 0 {
		done = min(total, d0+Duration(t*s))
		return done, ck0, overhead
	}
	if c <= 0 {
		done = min(total, d0+Duration(t*s))
		return done, max(ck0, done/iv*iv), overhead
	}
	next := (d0/iv + 1) * iv
	if next >= total { // no checkpoint before the end
		return min(total, d0+Duration(t*s)), ck0, overhead
	}
	tn := float64(next-d0) / s
	if t < tn {
		return d0 + Duration(t*s), ck0, overhead
	}
	t -= tn
	if t < float64(c) { // saving the first checkpoint
		return next, ck0, overhead + Duration(t)
	}
	t -= float64(c)
	overhead += c
	cyc := float64(iv)/s + float64(c)
	k := Duration(t / cyc)
	// checkpoints after next: at most those strictly before total
	maxK := (total-1)/iv - next/iv
	if k > maxK {
		k = maxK
	}
	ckpt = next + k*iv
	overhead += k * c
	t -= float64(k) * cyc
	if ckpt+iv >= total || t < float64(iv)/s {
		return min(total, ckpt+Duration(t*s)), ckpt, overhead
	}
	// saving the checkpoint at ckpt+iv
	return ckpt + iv, ckpt, overhead + Duration(t-float64(iv)/s)
}

func (e *Engine) progress() Progress {
	p := Progress{Now: e.now, Events: e.events, Ended: e.ended, Total: len(e.jobs)}
	if len(e.jobs) > 0 {
		p.LastSubm = e.jobs[len(e.jobs)-1].Spec.Submit
	}
	return p
}

func (e *Engine) sample() {
	e.samples = append(e.samples, Sample{Time: e.nextSamp, AllocMilli: e.cluster.allocMilli,
		BusyGPUs: e.busyGPUs, Running: int32(len(e.running)), Pending: int32(e.pendN), PendingGPUs: e.pendGPUs,
		LargestFree: e.cluster.domMax})
	if e.share != nil {
		s := &e.samples[len(e.samples)-1]
		s.UsefulGPUs, s.SharedGPUs = e.share.rateSum, e.share.shared
	}
	if e.pow != nil || e.fail != nil {
		e.samplePhys()
	}
}

func (e *Engine) noteWait(j JobRef, r Reason) {
	if j < 0 || int(j) >= len(e.jobs) || e.waitWhy[j] == r || e.jobs[j].State != StatePending {
		return
	}
	e.waitWhy[j] = r
	e.record(EvWait, j, int64(r))
}

// bitset2 is a two-level bitset: next(i) skips empty 64-bit words through a summary
// bitset, so it costs O(n/4096) in the worst case and O(1) typically.
type bitset2 struct {
	words bitset
	sum   bitset // bit w set iff words[w] != 0
}

func newBitset2(n int) bitset2 {
	w := (n + 63) / 64
	return bitset2{words: make(bitset, w), sum: make(bitset, (w+63)/64)}
}

func (b *bitset2) set(i int) {
	b.words.set(i)
	b.sum.set(i >> 6)
}

func (b *bitset2) clear(i int) {
	b.words.clear(i)
	if b.words[i>>6] == 0 {
		b.sum.clear(i >> 6)
	}
}

// next returns the first set index >= i, or -1.
func (b *bitset2) next(i int) int {
	w := i >> 6
	if w >= len(b.words) {
		return -1
	}
	if x := b.words[w] >> (uint(i) & 63); x != 0 {
		return i + bits.TrailingZeros64(x)
	}
	nw := b.sum.next(w + 1)
	if nw < 0 {
		return -1
	}
	return nw<<6 + bits.TrailingZeros64(b.words[nw])
}
