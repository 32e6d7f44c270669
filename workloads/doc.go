// Package workloads generates synthetic GPU-cluster workloads and fits their
// parameters to real traces.
//
// A Synthetic (the `workload.synthetic` block of a scenario) describes a job mix:
// classes (training, experiment, preprocessing, batch-inference, serving) with their
// GPU-size distribution, log-normal run time, walltime over-estimation, priority and
// per-GPU CPU/memory; how jobs map to queues and teams/users; and an arrival process
// (poisson, diurnal or bursty) whose mean rate is set so the generated workload
// offers a target load to the cluster:
//
//	D    = sum over jobs of replicas * gpusPerReplica * gpuMilli/1000 * duration_s
//	rate = jobs * load * clusterGPUs / D          (jobs per second)
//
// so that the expected arrival span is D / (load * clusterGPUs) and the offered load
// D / span / clusterGPUs equals load.
//
// Determinism: Generate draws only from sim.Stream(seed, "workload/<purpose>")
// streams, one per purpose (class, sizes, share, durations, walltime, queues,
// users, arrivals), so the same seed always gives the same jobs and changing one
// aspect of the mix does not reshuffle the others' draws.
//
// Fit estimates a Synthetic from an imported trace (class mix, per-class GPU sizes,
// log-normal durations by maximum likelihood, walltime factors, and the arrival
// process: poisson, diurnal or bursty), so a larger synthetic workload
// statistically like a real one can be generated.
//
// SpeedModel is a placement-dependent sim.SpeedModel: per-GPU-model throughput
// plus a ring all-reduce bound by the slowest topology level a gang crosses.
//
// The user documentation of every YAML field is docs/workloads.md.
package workloads
