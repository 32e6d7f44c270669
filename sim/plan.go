package sim

import "fmt"

// PreemptMode says what happens to a preempted job.
type PreemptMode uint8

// Preemption modes.
const (
	// PreemptRequeue stops the job and puts it back in the pending queue. Work since
	// its last checkpoint is lost (all of it when checkpointing is off).
	PreemptRequeue PreemptMode = iota
	// PreemptKill stops the job for good (state killed).
	PreemptKill
	// PreemptSuspend pauses the job (Slurm PreemptMode=SUSPEND): it stops making
	// progress but keeps all its work, its GPUs and CPUs are released while its
	// memory stays allocated on its nodes, and it returns to the pending list with
	// Job.Suspended() true and Job.Nodes kept. It can only be resumed (AddStart) on
	// the same node per replica; resuming costs no restore time.
	PreemptSuspend
	// PreemptLease ends a round-based policy's lease (Gavel, Pollux, Sia): the
	// job stops, keeps all its work (as if checkpointed at this instant at no
	// cost), releases its nodes and returns to the pending queue. Its next start
	// pays Config.CheckpointRestore, like any restart after a requeue. A policy
	// that keeps a job on the same GPUs for the next round simply does not
	// preempt it.
	PreemptLease
	// PreemptMigrate stops the job at an iteration boundary so that it can restart
	// elsewhere (Gandiva's suspend-resume migration): as PreemptLease it keeps all
	// its work and releases all its resources, but its next start, on any nodes,
	// spends Preempt.Delay restoring before it makes progress (instead of the
	// scenario's CheckpointRestore). Only policies that migrate use it; see
	// Plan.AddMigrate.
	PreemptMigrate
)

var preemptModeNames = [...]string{"requeue", "kill", "suspend", "lease", "migrate"}

// String returns the mode's name.
func (m PreemptMode) String() string {
	if int(m) < len(preemptModeNames) {
		return preemptModeNames[m]
	}
	return fmt.Sprintf("mode(%d)", m)
}

// Start asks the engine to start a pending job. Replica r runs on Nodes[r] using
// GPUs[r*g:(r+1)*g] where g is the job's GPUsPerReplica (ReplicaSlice: the last
// replica of an unequal gang has only LastReplicaGPUs, so len(GPUs) is the job's
// TotalGPUs); each GPU must belong to its replica's node.
type Start struct {
	Job   JobRef
	Nodes []NodeID
	GPUs  []GPUID
}

// Preempt asks the engine to stop a running job.
type Preempt struct {
	Job    JobRef
	Mode   PreemptMode
	Reason string
	// Grace is how long the job was signalled before this stop (the policy kept it
	// running through its termination grace period). With the checkpoint model's
	// OnSignal, a grace of at least the save cost lets the job checkpoint its work.
	Grace Duration
	// Delay (PreemptMigrate only) is the restore time of the job's next start.
	Delay Duration
}

// Reservation records, for explanation only, that the policy holds resources for a
// job from time At (e.g. the EASY backfill shadow reservation).
type Reservation struct {
	Job JobRef
	At  Time
}

// Plan is a policy's decision at one scheduling point.
//
// Inside a simulation the plan is bound to the engine: AddStart and AddPreempt
// validate the decision against the current state and apply it at once, so the
// View (free GPUs, pending queue) reflects every earlier decision of the same call,
// and an invalid decision returns a *PlanError (the run then fails with it, even if
// the policy ignores the error). Observer notifications for the applied decisions
// are delivered after Schedule returns. A Plan not bound to an engine (tests,
// harnesses) only records. Plans are reused between calls: a policy must not keep
// references into one.
type Plan struct {
	Starts       []Start
	Preempts     []Preempt
	Resizes      []Resize // elastic jobs (AddResize, elastic.go)
	Rates        []Rerate // elastic jobs' rate changes (AddRate, rerate.go)
	Reservations []Reservation
	// WakeAt asks for another scheduling point at that time (Never = none). The
	// engine ignores times not after now.
	WakeAt Time
	// ReleaseAt is when a hold the policy placed on a pending job expires
	// (Never = none): unlike WakeAt, the engine keeps this scheduling point
	// even when an idle one (nothing running, no arrivals left) did nothing.
	ReleaseAt Time

	nodeBuf []NodeID
	gpuBuf  []GPUID
	eng     *Engine
	err     error
}

// Reset empties the plan, keeping its buffers.
func (p *Plan) Reset() {
	p.Starts = p.Starts[:0]
	p.Preempts = p.Preempts[:0]
	p.Resizes = p.Resizes[:0]
	p.Rates = p.Rates[:0]
	p.Reservations = p.Reservations[:0]
	p.WakeAt = Never
	p.ReleaseAt = Never
	p.nodeBuf = p.nodeBuf[:0]
	p.gpuBuf = p.gpuBuf[:0]
	p.err = nil
}

// AddStart starts job j with the given placement (see Start), copying nodes and
// gpus (callers may reuse their slices). Bound to an engine, it validates and applies
// the start immediately and returns a *PlanError if it is invalid.
func (p *Plan) AddStart(j JobRef, nodes []NodeID, gpus []GPUID) error {
	if p.eng != nil {
		if err := p.eng.applyStart(&Start{Job: j, Nodes: nodes, GPUs: gpus}); err != nil {
			return p.fail(fmt.Sprintf("starts[%d] (job %s)", len(p.Starts), p.eng.jobName(j)), err)
		}
	}
	n0, g0 := len(p.nodeBuf), len(p.gpuBuf)
	p.nodeBuf = append(p.nodeBuf, nodes...)
	p.gpuBuf = append(p.gpuBuf, gpus...)
	p.Starts = append(p.Starts, Start{Job: j, Nodes: p.nodeBuf[n0:len(p.nodeBuf):len(p.nodeBuf)], GPUs: p.gpuBuf[g0:len(p.gpuBuf):len(p.gpuBuf)]})
	return nil
}

// AddPreempt stops running job j. Bound to an engine, it validates and applies the
// preemption immediately (the job's resources are free for later starts of the
// same call) and returns a *PlanError if it is invalid.
//
// The engine refuses (PlanError) to preempt a job that is protected by the
// preemption policy (minimum runtime, anti-churn window): check Job.Preemptible.
func (p *Plan) AddPreempt(j JobRef, mode PreemptMode, reason string) error {
	return p.AddPreemptAfterGrace(j, mode, reason, 0)
}

// AddPreemptAfterGrace is AddPreempt for a job that the policy signalled grace
// ago and kept running since (a termination grace period): see Preempt.Grace.
func (p *Plan) AddPreemptAfterGrace(j JobRef, mode PreemptMode, reason string, grace Duration) error {
	pr := Preempt{Job: j, Mode: mode, Reason: reason, Grace: grace}
	if p.eng != nil {
		if err := p.eng.applyPreempt(&pr); err != nil {
			return p.fail(fmt.Sprintf("preempts[%d] (job %s)", len(p.Preempts), p.eng.jobName(j)), err)
		}
	}
	p.Preempts = append(p.Preempts, pr)
	return nil
}

// AddMigrate stops running job j for a migration (PreemptMigrate): it keeps its
// work and its next start spends delay restoring. The policy restarts it with
// AddStart, in the same call or later. Validation is AddPreempt's.
func (p *Plan) AddMigrate(j JobRef, delay Duration, reason string) error {
	pr := Preempt{Job: j, Mode: PreemptMigrate, Reason: reason, Delay: delay}
	if p.eng != nil {
		if err := p.eng.applyPreempt(&pr); err != nil {
			return p.fail(fmt.Sprintf("preempts[%d] (job %s)", len(p.Preempts), p.eng.jobName(j)), err)
		}
	}
	p.Preempts = append(p.Preempts, pr)
	return nil
}

// Evict records that the policy admitted pending job j and evicted it again
// before it started, within this scheduling point (Kueue admitting a borrowing
// workload in one cycle and reclaiming its quota in the next, at the same
// instant, with a zero eviction grace period). The real system admits and
// evicts it, so the engine logs EvEvict and counts it in Job.Preempted; the job
// lost no work and stays pending. Bound to an engine it returns a *PlanError if
// j is not pending.
func (p *Plan) Evict(j JobRef) error {
	if p.eng != nil {
		if err := p.eng.applyEvict(j); err != nil {
			return p.fail(fmt.Sprintf("evict (job %s)", p.eng.jobName(j)), err)
		}
	}
	return nil
}

func (p *Plan) fail(decision string, err error) error {
	pe := &PlanError{Policy: p.eng.policy.Name(), At: p.eng.now, Decision: decision, Err: err}
	if p.err == nil {
		p.err = pe
	}
	return pe
}

// Reserve appends an informational reservation.
func (p *Plan) Reserve(j JobRef, at Time) {
	p.Reservations = append(p.Reservations, Reservation{Job: j, At: at})
}

// Wait records why pending job j stays pending at this scheduling point
// (informational, for explanations). The engine logs it only when it differs from
// the job's previous reason.
func (p *Plan) Wait(j JobRef, r Reason) {
	if p.eng != nil {
		p.eng.noteWait(j, r)
	}
}

// Wake asks for a scheduling point at t (the earliest requested time wins).
func (p *Plan) Wake(t Time) {
	if t < p.WakeAt {
		p.WakeAt = t
	}
}

// Release asks for a scheduling point at t, when a hold the policy placed
// on a pending job expires (the earliest requested time wins). It is also a
// Wake.
func (p *Plan) Release(t Time) {
	p.Wake(t)
	if t < p.ReleaseAt {
		p.ReleaseAt = t
	}
}

// PlanError is an invalid decision: it names the policy, the time and the decision.
type PlanError struct {
	Policy   string
	At       Time
	Decision string
	Err      error
}

func (e *PlanError) Error() string {
	return fmt.Sprintf("policy %q at t=%s: invalid plan: %s: %v", e.Policy, e.At, e.Decision, e.Err)
}

func (e *PlanError) Unwrap() error { return e.Err }
