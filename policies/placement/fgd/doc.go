// Package fgd implements the placement policies, the fragmentation measure and the
// "fill" experiment of the FGD paper (Weng et al., "Beware of Fragmentation:
// Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", USENIX
// ATC'23) for clusters whose GPUs can be shared in milli-GPU units.
//
// # Pieces
//
//   - TargetWorkload: the "typical pods" the fragmentation is measured against: the
//     most popular task shapes (CPU, GPU count, milli-GPU per GPU, allowed GPU
//     models) and their renormalised frequencies (NewTargetWorkload).
//   - Fragmentation: NodeFragMilli and ClusterFrag compute the paper's
//     workload-relative fragmentation over a sim.Cluster: for every typical shape m
//     with frequency p_m, a node contributes p_m x (all its idle milli-GPU) when m
//     cannot run there, and p_m x (the idle milli on GPUs whose free share is
//     smaller than m's per-GPU request) when it can.
//   - Placer: one placement decision at a time for the policies random,
//     dot-product, gpu-clustering, gpu-packing, best-fit and fgd, with the
//     semantics of the authors' simulator (hkust-adsl/kubernetes-scheduler-simulator):
//     integer plugin scores in 0..100, highest score wins, ties broken by a seeded
//     uniform draw (as kube-scheduler's selectHost does), GPU index chosen by
//     best fit (random for random, fragmentation for fgd).
//   - RunFill: the paper's fill experiment (pods arrive in a seeded random order,
//     never leave, and metrics are sampled at every 1 % of arrived GPU demand).
//
// # Determinism
//
// Every random draw comes from sim.Stream(seed, name) with the names
// "fgd/shuffle", "fgd/tune" and "fgd/policy/<policy>". Node and shape orders are
// fixed (node id, then a total order on shapes), so a run is a pure function of
// its inputs and seed.
//
// See docs/fgd.md for the semantics in detail and the fidelity table against the
// authors' published results.
package fgd
