package sim

import (
	"fmt"
	"strings"
)

// JobID is the user-visible identifier of a job, taken from the trace.
type JobID string

// JobClass is the workload class of a job.
type JobClass string

// The job classes gpusim knows. The empty class is reported as "unknown".
const (
	ClassTraining       JobClass = "training"
	ClassExperiment     JobClass = "experiment"
	ClassPreprocessing  JobClass = "preprocessing"
	ClassBatchInference JobClass = "batch-inference"
	ClassServing        JobClass = "serving"
	ClassUnknown        JobClass = "unknown"
)

// Classes lists every known class in a fixed order (for reports).
var Classes = []JobClass{ClassTraining, ClassExperiment, ClassPreprocessing, ClassBatchInference, ClassServing, ClassUnknown}

// ParseClass validates a class name; "" maps to ClassUnknown.
func ParseClass(s string) (JobClass, error) {
	if s == "" {
		return ClassUnknown, nil
	}
	for _, c := range Classes {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown job class %q (want one of %s)", s, classList())
}

func classList() string {
	var b strings.Builder
	for i, c := range Classes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(c))
	}
	return b.String()
}

// MilliGPU is a share of one GPU in thousandths (1000 = a whole GPU).
type MilliGPU int32

// WholeGPU is a full GPU in MilliGPU.
const WholeGPU MilliGPU = 1000

// JobSpec is a job as submitted: what a trace row or a generator produces. All
// resource amounts are integers. A job is a gang of Replicas replicas, each needing
// GPUsPerReplica GPUs on one node (plus CPUMilli and MemoryMiB on that node); the
// gang starts all-or-nothing.
type JobSpec struct {
	ID             JobID
	Submit         Time
	Queue          string
	User           string
	Team           string
	Class          JobClass
	Priority       int32
	Replicas       int32    // >= 1
	GPUsPerReplica int32    // >= 0 (0 = CPU-only replica)
	GPUMilli       MilliGPU // share of each requested GPU, 1..1000; < 1000 only for a single 1-GPU replica
	GPUModels      []string // allowed GPU models; empty = any
	CPUMilli       int64    // per replica
	MemoryMiB      int64    // per replica
	Duration       Duration // true run time at reference speed (ground truth; hidden from policies)
	Walltime       Duration // the user's estimate / time limit; 0 = none given

	// Device-level sharing (used only when the run has Config.Sharing; see
	// docs/sharing.md). Optional trace columns; zero values mean "exclusive,
	// unknown".
	Sharing JobSharing // GPU sharing the job accepts; non-exclusive needs 1 replica x 1 GPU

	// LastReplicaGPUs, when > 0, makes the gang unequal: replicas 0..Replicas-2
	// need GPUsPerReplica GPUs each and the last replica only LastReplicaGPUs
	// (1..GPUsPerReplica-1). This is the "full nodes plus a remainder" shape of
	// Philly and Helios jobs (a 20-GPU job on 8-GPU nodes: 8+8+4; docs/shapes.md).
	// 0 (the default) means every replica needs GPUsPerReplica. Whole GPUs only.
	// (Placed after Sharing, in its padding, so JobSpec does not grow.)
	LastReplicaGPUs int32

	GPUMemMiB  int64   // peak GPU memory per GPU (MiB); 0 = unknown (not checked)
	MIGProfile string  // requested MIG profile (e.g. "1g.10gb"); "" = none
	SMUtil     float64 // solo SM utilisation in [0, 1]; 0 = unknown
	Workload   string  // interference-matrix key; "" = unknown

	// Serving makes the job a serving job (docs/serving.md): its request load
	// and P99 latency SLA; nil for other jobs. Copies of a spec share it.
	Serving *ServingSpec

	// DAG makes the job part of a pipeline: its dependencies and stage name
	// (docs/dag.md); nil for other jobs. Copies of a spec share it.
	DAG *JobDAG

	// Elastic makes the job an elastic gang (docs/elastic.md): Replicas is then
	// its preferred size; nil for rigid jobs. Copies of a spec share it.
	Elastic *ElasticSpec
}

// TotalGPUs is the number of GPUs the gang occupies (whole or shared):
// Replicas x GPUsPerReplica, less the remainder's shortfall for an unequal gang.
func (s *JobSpec) TotalGPUs() int32 {
	t := s.Replicas * s.GPUsPerReplica
	if s.LastReplicaGPUs > 0 {
		t -= s.GPUsPerReplica - s.LastReplicaGPUs
	}
	return t
}

// GPUDemandMilli is the gang's GPU demand in milli-GPU (GPUs x share).
func (s *JobSpec) GPUDemandMilli() int64 {
	return int64(s.TotalGPUs()) * int64(s.GPUMilli)
}

// Unequal reports whether the gang's last replica is smaller than the others
// (LastReplicaGPUs > 0).
func (s *JobSpec) Unequal() bool { return s.LastReplicaGPUs > 0 }

// ReplicaGPUs is the number of GPUs replica r (0-based) needs: GPUsPerReplica,
// or LastReplicaGPUs for the last replica of an unequal gang.
func (s *JobSpec) ReplicaGPUs(r int) int32 {
	if s.LastReplicaGPUs > 0 && r == int(s.Replicas)-1 {
		return s.LastReplicaGPUs
	}
	return s.GPUsPerReplica
}

// ReplicaSlice returns replica r's GPUs out of a gang's GPU list laid out as
// placements lay it out: replica r at gpus[r*g:(r+1)*g] with g = GPUsPerReplica,
// the last replica of an unequal gang cut short at the end of the list. It
// never allocates.
func ReplicaSlice(gpus []GPUID, r, g int) []GPUID {
	return gpus[r*g : min((r+1)*g, len(gpus))]
}

// Fractional reports whether the job shares a GPU (GPUMilli < 1000).
func (s *JobSpec) Fractional() bool { return s.GPUsPerReplica > 0 && s.GPUMilli < WholeGPU }

// Accepts is the GPU sharing the job accepts in effect: its Sharing field, except
// that a fractional job (gpu_milli < 1000, e.g. an openb pod) with the default
// exclusive accepts any shared mode, since it is a GPU share by nature.
func (s *JobSpec) Accepts() JobSharing {
	if s.Sharing == AcceptExclusive && s.Fractional() {
		return AcceptAny
	}
	return s.Sharing
}

// AllowsModel reports whether the job may run on GPUs of model m.
func (s *JobSpec) AllowsModel(m string) bool {
	if len(s.GPUModels) == 0 {
		return true
	}
	for _, x := range s.GPUModels {
		if x == m {
			return true
		}
	}
	return false
}

// Validate checks the spec's own consistency (not whether a cluster can hold it).
// Errors name the field.
func (s *JobSpec) Validate() error {
	var errs []string
	if s.ID == "" {
		errs = append(errs, "id: must not be empty")
	}
	if s.Submit < 0 {
		errs = append(errs, "submit_s: must be >= 0")
	}
	if s.Replicas < 1 {
		errs = append(errs, "replicas: must be >= 1")
	}
	if s.GPUsPerReplica < 0 {
		errs = append(errs, "gpus: must be >= 0")
	}
	if s.GPUsPerReplica > 0 && (s.GPUMilli < 1 || s.GPUMilli > WholeGPU) {
		errs = append(errs, "gpu_milli: must be in 1..1000")
	}
	if s.GPUMilli < WholeGPU && s.GPUsPerReplica > 0 && (s.GPUsPerReplica != 1 || s.Replicas != 1) {
		errs = append(errs, "gpu_milli: a fractional GPU share needs exactly 1 replica with 1 GPU")
	}
	if s.LastReplicaGPUs != 0 && (s.LastReplicaGPUs < 0 || s.LastReplicaGPUs >= s.GPUsPerReplica || s.Replicas < 2 || s.GPUMilli != WholeGPU || s.Sharing != AcceptExclusive) {
		errs = append(errs, "last_replica_gpus: must be in 1..gpus-1, with at least 2 replicas of whole, exclusive GPUs")
	}
	if s.Duration < 0 {
		errs = append(errs, "duration_s: must be >= 0")
	}
	if s.Walltime < 0 {
		errs = append(errs, "walltime_s: must be >= 0")
	}
	if s.CPUMilli < 0 {
		errs = append(errs, "cpu_milli: must be >= 0")
	}
	if s.MemoryMiB < 0 {
		errs = append(errs, "memory_mib: must be >= 0")
	}
	if s.Sharing >= numJobSharing {
		errs = append(errs, "sharing: unknown value")
	}
	if s.Sharing != AcceptExclusive && (s.Replicas != 1 || s.GPUsPerReplica != 1) {
		errs = append(errs, "sharing: a job that shares a GPU needs exactly 1 replica with 1 GPU")
	}
	if s.GPUMemMiB < 0 {
		errs = append(errs, "gpu_mem_mib: must be >= 0")
	}
	if !(s.SMUtil >= 0 && s.SMUtil <= 1) {
		errs = append(errs, "sm_util: must be in [0, 1]")
	}
	if s.MIGProfile != "" && s.Sharing != AcceptMIG && s.Sharing != AcceptAny {
		errs = append(errs, "mig_profile: needs sharing mig or any")
	}
	if s.Serving != nil {
		if err := s.Serving.Validate(); err != nil {
			errs = append(errs, "serving: "+err.Error())
		}
	}
	if s.Elastic != nil {
		errs = append(errs, s.Elastic.validate(s)...)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// JobState is a job's lifecycle state. Legal transitions:
//
//	Pending -> Running -> Completed
//	Running -> Pending   (preempted with requeue)
//	Running -> Killed    (preempted with kill, or walltime exceeded)
//	Pending  at the end of the run is reported as unfinished.
type JobState uint8

// Job states.
const (
	StatePending JobState = iota
	StateRunning
	StateCompleted
	StateKilled
	StateTimeout
)

var stateNames = [...]string{"pending", "running", "completed", "killed", "timeout"}

// String returns the state's lower-case name.
func (s JobState) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", s)
}

// JobRef is the dense index of a job inside one simulation: jobs are sorted by
// (Submit, ID) and numbered from 0. Comparing JobRefs is the canonical ID tie-break.
type JobRef int32

// Job is a job inside a running simulation. Policies read it through the View and
// must not modify it.
type Job struct {
	Spec  JobSpec
	Ref   JobRef
	State JobState

	// Estimate is the run time the policy may use: the walltime estimate, or the
	// true duration under oracle mode. Always > 0.
	Estimate Duration

	FirstStart Time  // first time the job started; Never if it has not started
	LastStart  Time  // start of the current (or last) run; Never if it has not started
	End        Time  // completion/kill time; Never while unfinished
	Preempted  int32 // preemptions of any mode (requeue, kill, suspend)
	// Done is the work completed (at reference speed) that survives a preemption.
	Done Duration
	// Wasted is the wall time of its runs that produced no surviving work: work lost
	// since the last checkpoint, checkpoint save and restore time, and whole runs
	// ended by a kill. Multiply by the job's GPUs for wasted GPU time.
	Wasted Duration
	// Overhead is the part of Wasted spent saving and restoring checkpoints.
	Overhead Duration

	// Placement of the current run (nil when not running). Replica r occupies
	// Nodes[r] and GPUs[r*GPUsPerReplica:(r+1)*GPUsPerReplica] (ReplicaSlice: the
	// last replica of an unequal gang is cut short at the end of GPUs).
	Nodes []NodeID
	GPUs  []GPUID

	speed              float64  // current speed factor (1 = reference)
	endTime            Time     // scheduled end of the current run
	runDone            Duration // Done when the current run started
	runRestore         Duration // restore time at the start of the current run
	protectedUntil     Time     // preemption refused before this time
	lastPreempt        Time     // time of the last preemption (Never if none)
	usedWall           Duration // run time of the current allocation before a suspension (walltime accounting)
	restore            bool     // the next start restores from a checkpoint (after a requeue)
	suspended          bool
	migrated           bool     // the next start restores for migDelay (PreemptMigrate)
	migDelay           Duration // restore time of the next start after a migration
	heapIdx            int32
	pendPrev, pendNext *Job
	queued             bool

	sh *jobShare // rate-based progress and sharing metrics (Config.Sharing only)
}

// jobShare is a job's rate-based state, allocated only in runs with sharing (so
// runs without it keep Job small).
type jobShare struct {
	rs          runState
	scheduled   bool    // the current run's end event is scheduled
	sharedSeg   bool    // the current speed segment runs on a GPU with other jobs
	withServing bool    // ... and one of them is a serving job (not itself)
	migIdx      int16   // MIG instance index on its GPU
	wl          int32   // interned workload (-1 = unknown)
	base        float64 // placement speed (SpeedModel) of the current run
	factor      float64 // sharing factor on its GPU (1 = alone)
	speedInt    float64 // integral of speed over running wall time (µs)
	speedWall   Duration
	sharedWall  Duration
	minSpeed    float64
}

// MeanSpeed is the job's time-weighted mean speed over all its runs (sharing
// runs only; 0 otherwise or if it never ran).
func (j *Job) MeanSpeed() float64 {
	if j.sh == nil || j.sh.speedWall == 0 {
		return 0
	}
	return j.sh.speedInt / float64(j.sh.speedWall)
}

// MinSpeed is the lowest speed the job ran at (sharing runs only; 0 otherwise).
func (j *Job) MinSpeed() float64 {
	if j.sh == nil {
		return 0
	}
	return j.sh.minSpeed
}

// SharedTime is the wall time the job ran on a GPU shared with other jobs
// (sharing runs only).
func (j *Job) SharedTime() Duration {
	if j.sh == nil {
		return 0
	}
	return j.sh.sharedWall
}

// EstimatedEnd is when the policy expects the current run to end: LastStart plus the
// remaining estimate. It uses estimates only, never the true duration (unless oracle).
func (j *Job) EstimatedEnd() Time {
	if j.State != StateRunning {
		return Never
	}
	rem := j.Estimate - j.Done
	if rem < 0 {
		rem = 0
	}
	return j.LastStart.Add(rem)
}

// String returns the job ID.
func (j *Job) String() string { return string(j.Spec.ID) }

// Preemptible reports whether the engine lets a policy preempt j at now: j is
// running and not protected by the preemption settings (a minimum run time after
// each start, an anti-churn window after its last preemption). Victim searches
// must skip jobs for which it is false; preempting one is a PlanError.
func (j *Job) Preemptible(now Time) bool {
	return j.State == StateRunning && now >= j.protectedUntil
}

// ProtectedUntil is the time from which a running job may be preempted (see
// Preemptible).
func (j *Job) ProtectedUntil() Time { return j.protectedUntil }

// Suspended reports whether j is a pending job paused by PreemptSuspend: it keeps
// Nodes (its memory is still allocated there) and can only resume on them.
func (j *Job) Suspended() bool { return j.suspended }

// Speed returns the speed factor of the job's current (or last) run under the
// scenario's speed model (1 = reference speed; 0.8 = 25% longer), or 0 if it never
// started. Ground truth: for outputs, not for policies.
func (j *Job) Speed() float64 {
	if j.FirstStart == Never {
		return 0
	}
	return j.speed
}

// WorkloadID is the job's workload as interned by the run's
// SharingConfig.Interference (-1 when unknown, or in runs without sharing).
func (j *Job) WorkloadID() int32 {
	if j.sh == nil {
		return -1
	}
	return j.sh.wl
}
