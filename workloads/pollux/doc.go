// Package pollux is the job model of the Pollux OSDI'21 artifact
// (petuum/adaptdl, branch osdi21-artifact, commit de25dcc9, simulator/): six
// profiled applications whose step time depends on the GPU placement and the
// per-GPU batch size (applications.py:Application.get_throughput), whose
// statistical efficiency comes from the gradient noise scale of their
// validation curves (get_grad_stats), and whose progress is counted in
// iterations at the initial batch size up to a fixed number of epochs
// (get_progress, get_completion_epoch); adaptdl's goodput model
// (goodput.py:GoodputFunction, fit_perf_params); and the artifact's workload
// CSVs. The artifact's data is embedded (data/README.md; Apache-2.0).
//
// The round-based simulator and its policies are in policies/pollux; see
// docs/pollux.md.
package pollux
