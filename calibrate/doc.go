// Package calibrate measures a real GPU node so gpusim can simulate it: which
// workloads slow each other down when they share a GPU (time-slicing, MPS, MIG) and
// by how much, plus the node's GPUs and topology.
//
// It is independent of the simulation engine except for the file formats it
// writes:
//
//   - a node template (NodeTemplate) that a scenario accepts as a custom pool
//     template;
//   - an InterferenceMatrix document (apiVersion gpusim/v1alpha1), read later by the
//     simulator's co-location policies;
//   - Parquet files of NVML samples (samples.parquet, telemetry).
//
// All hardware access goes through the small Probe interface. The real
// implementation (package calibrate/nvml) wraps github.com/NVIDIA/go-nvml; Fake is a
// deterministic DGX-like node used by `gpusim calibrate --fake` and by the tests, so
// everything except the real-GPU path is testable on machines without a GPU.
//
// Safety contract of the runner (see Run): every workload process runs in its own
// process group and the whole group is killed on timeout, cancellation or when a
// measurement ends; the tool never changes MIG mode, clocks or any other GPU
// setting; every finished cell is journaled before the next one starts, so an
// interrupted run resumes without measuring a finished cell again.
package calibrate
