package sim

import (
	"fmt"
	"iter"
	"math/rand/v2"
)

// Policy decides what to do at a scheduling point.
//
// Schedule is called once per scheduling point (after every event at the current
// time has been applied) with a read-only View and an empty Plan to fill. It must
// not modify anything reachable from the View, must not read the wall clock or
// global randomness (use View.Rand), and must be deterministic given the View and
// its own state. An error aborts the run.
type Policy interface {
	Name() string
	Schedule(v *View, p *Plan) error
}

// Observer is an optional Policy capability: the engine type-asserts it and delivers
// every lifecycle event, in order, as it is applied (before the next Schedule call).
// Policies use it to maintain their own queues and accounting incrementally.
type Observer interface {
	Observe(v *View, e Event)
}

// EventKind is the kind of a lifecycle event.
type EventKind uint8

// Lifecycle events. Within one virtual time the engine applies ends first, then
// arrivals, then wake-ups, and calls the policy once after all of them.
const (
	EvArrive EventKind = iota
	EvStart
	EvFinish  // completed its work
	EvPreempt // stopped and requeued
	EvKill    // stopped for good by a policy
	EvTimeout // stopped at its walltime
	EvReserve // informational reservation (Value = reserved start time in µs)
	EvWait    // informational: why a pending job was not started (Value = a Reason), logged when the reason changes
	EvSuspend // paused (PreemptSuspend): keeps its work and memory, resumes with EvStart on the same nodes
	EvEvict   // admitted by the policy and evicted before it started (Plan.Evict): counted as a preemption, no work lost
	numEventKinds
)

var eventNames = [...]string{"arrive", "start", "finish", "preempt", "kill", "timeout", "reserve", "wait", "suspend", "evict"}

// String returns the event kind's name (as written to events.parquet).
func (k EventKind) String() string {
	if k < numEventKinds {
		return eventNames[k]
	}
	return "unknown"
}

// EventKindNames lists event kind names in kind order.
func EventKindNames() []string { return append([]string(nil), eventNames[:]...) }

// Event is one record of the event log.
type Event struct {
	Time  Time
	Kind  EventKind
	Job   JobRef
	Value int64 // kind-specific: reservation time for EvReserve, Reason for EvWait, else 0
}

// Reason says why a policy left a pending job waiting. Policies report it with
// Plan.Wait; the engine logs it (EvWait) only when a job's reason changes, so
// recording reasons costs almost nothing.
type Reason uint8

// Wait reasons.
const (
	ReasonNone        Reason = iota
	ReasonNoCapacity         // not enough free GPUs (of the allowed models), CPU or memory
	ReasonTopology           // enough free capacity in total, but the gang cannot be placed (per node or topology domain)
	ReasonQuota              // a quota (nominal + borrowing limit) is exhausted
	ReasonBlocked            // behind an earlier job in strict queue order (head-of-line blocking)
	ReasonReservation        // backfill: would delay the head job's reservation
	ReasonFairShare          // another queue or user is ahead by fair share
	ReasonNotTested          // beyond the backfill test limit (maxJobsTest / window)
	ReasonPreempting         // waiting for preempted victims to release resources
	ReasonPowerCap           // starting it would exceed the power cap (Config.Power)
	ReasonCarbon             // held for a lower-carbon window (carbon-aware policy)
	numReasons
)

var reasonNames = [...]string{"none", "no-capacity", "topology", "quota", "blocked", "reservation", "fair-share", "not-tested", "preempting", "power-cap", "carbon"}

var reasonText = [...]string{
	"",
	"not enough free GPUs of the allowed models (or CPU/memory)",
	"free capacity exists but the gang cannot be placed on whole nodes / within its topology domain",
	"quota exhausted",
	"blocked behind an earlier job in queue order",
	"would delay the head job's reservation",
	"another queue or user comes first by fair share",
	"not examined: beyond the backfill test limit",
	"waiting for preempted jobs to release resources",
	"starting it would exceed the cluster power cap",
	"held for a lower-carbon window (until its chosen start or its deadline)",
}

// String returns the reason's short name (as written to events.parquet "detail").
func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", r)
}

// Text returns a sentence describing the reason.
func (r Reason) Text() string {
	if r < numReasons {
		return reasonText[r]
	}
	return r.String()
}

// ParseReason maps a short name back to a Reason.
func ParseReason(s string) (Reason, bool) {
	for i, n := range reasonNames {
		if n == s {
			return Reason(i), true
		}
	}
	return 0, false
}

// View is the read-only state handed to a policy. Its methods return live engine
// data: callers must not modify returned jobs, slices or the cluster.
type View struct {
	e *Engine
}

// Now returns the current virtual time.
func (v *View) Now() Time { return v.e.now }

// Cluster returns the cluster with its live allocation state.
func (v *View) Cluster() *Cluster { return v.e.cluster }

// Job returns job r.
func (v *View) Job(r JobRef) *Job { return &v.e.jobs[r] }

// NumJobs returns the number of jobs in the run (arrived or not).
func (v *View) NumJobs() int { return len(v.e.jobs) }

// Pending iterates over pending (arrived, not running, not finished) jobs in
// (Submit, ID) order, i.e. ascending JobRef. Jobs requeued after preemption keep
// their original position.
func (v *View) Pending() iter.Seq[*Job] {
	return func(yield func(*Job) bool) {
		for j := v.e.pendHead; j != nil; j = j.pendNext {
			if !yield(j) {
				return
			}
		}
	}
}

// PendingHead returns the first pending job, or nil.
func (v *View) PendingHead() *Job { return v.e.pendHead }

// NextPending returns the pending job after j in queue order, or nil.
func (v *View) NextPending(j *Job) *Job { return j.pendNext }

// PendingCount returns the number of pending jobs.
func (v *View) PendingCount() int { return v.e.pendN }

// Running returns the running jobs in an unspecified but deterministic order. Do not
// modify the slice.
func (v *View) Running() []*Job { return v.e.running }

// Rand returns the policy's own seeded random stream ("policy/<name>").
func (v *View) Rand() *rand.Rand { return v.e.policyRand }

// Oracle reports whether Job.Estimate is the true duration.
func (v *View) Oracle() bool { return v.e.cfg.Oracle }

// Seed returns the run's seed (sim.Config.Seed): policies and placers derive their
// own named streams from it (sim.Stream) so that their draws do not depend on
// anyone else's.
func (v *View) Seed() uint64 { return v.e.cfg.Seed }

// RestoreCost is the wall time a requeued or leased-out job spends at each
// restart before it makes progress (Config.CheckpointRestore): round-based
// policies plan their rounds with it.
func (v *View) RestoreCost() Duration { return v.e.cfg.CheckpointRestore }

// Sharing returns the run's device-level sharing model (Config.Sharing; nil
// without sharing). Its Factors method gives the co-location speed factors the
// engine will apply, so a placement can predict them.
func (v *View) Sharing() *SharingConfig { return v.e.cfg.Sharing }
