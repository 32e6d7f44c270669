// Package pollux reproduces the Pollux OSDI'21 artifact's simulator
// (simulator/simulator.py:Cluster) as a standalone round-based driver: elastic
// jobs on a cluster of identical nodes, a policy run every 60 s, 30 s without
// progress after every allocation change, and the artifact's three policies:
// Tiresias+TunedJobs (tiresias.py), Optimus+Oracle+TunedJobs (optimus.py) and
// Pollux (pollux.py, with a deterministic greedy optimiser in place of
// NSGA-II). It is not a sim.Policy: the event engine has no elastic gangs. The
// job model is workloads/pollux; docs/pollux.md has the details and the
// reproduction table.
package pollux
