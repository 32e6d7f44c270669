// Package sim is gpusim's discrete-event engine: virtual time, the event queue,
// seeded random streams, the cluster model with its topology tree and incremental
// free-capacity indexes, the job lifecycle, and the policy contract (View -> Plan).
// It imports nothing outside the standard library.
//
// The event loop:
//
//	+--------------------------------------------------------------+
//	|  next time t = min(queue top, next arrival)                  |
//	|  advance clock: integrate utilization, emit samples < t      |
//	|  apply all events at t:  ends -> arrivals -> wake-ups        |
//	|       (each logged and delivered to an Observer policy)      |
//	|  policy.Schedule(View, Plan)      one call per time point    |
//	|  validate + apply Plan: preempts -> starts -> reservations   |
//	|  schedule end events, the requested wake-up                  |
//	+--------------------------------------------------------------+
//
// # Determinism contract
//
//  1. One goroutine runs one simulation; no wall clock, no global randomness.
//  2. Event order is total: (time, kind, seq) with kind order end < arrival < wake,
//     and seq a monotonic insertion counter.
//  3. Jobs are numbered (JobRef) in (Submit, ID) order, so input order never
//     matters; every ordering ends with a JobRef (= ID) tie-break.
//  4. Random draws come from named streams derived from one master seed (Stream).
//  5. Resources are integers (GPUs, milli-GPU, millicores, MiB, microseconds).
//
// # Device-level GPU sharing
//
// With Config.Sharing, GPUs of nodes in a shared mode (time slicing, MPS, MIG)
// hold several jobs, whose speeds change as co-runners come and go. The engine
// then tracks each running job's remaining work as integers (progress.go:
// floor-rounded credit per speed segment, end = now + least wall time that
// completes the work) and reschedules only the jobs of the GPU whose occupancy
// changed (sharing.go, rated.go, mig.go). Without it nothing of this runs and
// outputs are unchanged. See docs/sharing.md.
//
// # Policies see estimates, not truth
//
// A Policy sees Job.Estimate (the user's walltime, or the true duration only when
// the scenario sets oracle: true). The true duration and the SpeedModel are used
// by the engine alone.
package sim
