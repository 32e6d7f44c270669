// Package live runs gpusim's policies on a real machine: the same sim.Policy
// code that was compared in simulation schedules real processes, unchanged.
//
// A Runner drives a sim.Live (the engine driven by external events, on a
// scaled wall clock) with the local backend: each job runs as a process (by
// default `sleep <duration/scale>`, or a configured command) in its own
// process group, with CUDA_VISIBLE_DEVICES set to the GPUs of its placement.
// Walltimes are enforced, preemption is SIGTERM then SIGKILL after a grace
// period, and every launch, start, end and stop is appended to a fsynced
// journal (journal.go), so a runner killed and started again resumes: it
// re-adopts runs whose process is still alive (same PID and start time),
// ends those that finished meanwhile from their status file, marks the others
// lost, and never starts a journalled run again.
//
//	runner loop:  clock -> Live.Advance(now, ended runs) -> operator requests
//	              -> Live.Schedule: policy.Schedule(View, Plan) -> validate
//	              -> Local.Stop (preempts) / Local.Start (starts) -> journal
//
// The package imports sim (and the standard library); the command line wires
// the scenario, the policy and NVML discovery (calibrate) to it. A Kubernetes
// backend would implement sim.Backend the same way (see docs/live.md).
package live
