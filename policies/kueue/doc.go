// Package kueue simulates Kueue's admission (kubernetes-sigs/kueue): real
// ResourceFlavor / ClusterQueue / Cohort / LocalQueue / WorkloadPriorityClass
// manifests (v1beta1 and v1beta2) are loaded and each job is a Workload with one
// PodSet of `replicas` pods.
//
// Simulated:
//   - the quota tree with Kueue's formulas (SubtreeQuota, localQuota under
//     lendingLimit, usage bubbling, available() with borrowingLimit,
//     potentialAvailable), hierarchical cohorts with their own quota;
//   - the scheduling cycle: one head per ClusterQueue per cycle, nomination (flavor
//     assignment in ClusterQueue order with flavorFungibility), classical ordering
//     (non-borrowing first, priority, timestamp), re-check against the cycle's
//     earlier admissions, requeue: StrictFIFO keeps the head (blocking its queue),
//     BestEffortFIFO parks it until a workload of the cohort tree finishes or is
//     evicted; cycles run back to back at one virtual time until one admits nothing;
//   - classical preemption (withinClusterQueue, reclaimWithinCohort,
//     borrowWithinCohort) with Kueue's hierarchical candidate generator
//     (candidates only for the flavor-resources needing preemption,
//     hierarchical-advantage / without-borrowing / while-borrowing variants,
//     attempt order), candidate ordering and fill-back;
//     preempt-then-admit-later: victims keep running and hold quota for the
//     eviction grace period, the preemptor stays at its queue's head and
//     reserves its quota meanwhile (params.preemptorReservation, default true:
//     a simplification); with preemptorReservation false it is re-nominated
//     every cycle as in Kueue, re-targeting its terminating victims (sorted
//     first among candidates) without evicting them again, and competes for
//     the freed quota like any head (docs/kueue.md);
//   - placement after admission (kube-scheduler's role) on the assigned flavors'
//     nodes; an admitted workload that does not fit the free nodes holds its quota
//     and waits (the quota-vs-capacity gap);
//   - topology-aware scheduling (tas.go): Topology levels mapped to sim levels,
//     ResourceFlavors with topologyName, required / preferred / unconstrained
//     requests per workload (params.topologyRequests; implied unconstrained in
//     TAS-only ClusterQueues), a topology assignment after the quota check on the
//     live free capacity (quota fit without a domain becomes Preempt, and NoFit
//     if not even an empty cluster has one), preemption until quota and topology
//     fit, and admitted TAS workloads start exactly on their assignment;
//   - Kueue's controller Configuration (config.go; kind Configuration,
//     config.kueue.x-k8s.io/v1beta1 or v1beta2, with each version's defaults),
//     which turns on the next three features;
//   - fair sharing (fairsharing.go): Dominant Resource Shares of ClusterQueues
//     and Cohorts with fairSharing weights, the fair-sharing tournament ordering
//     the cycle's heads, and fair preemption (target ClusterQueue by highest DRS,
//     re-selected after every eviction; shares compared at the almost-LCA level;
//     LessThanOrEqualToFinalShare / LessThanInitialShare; preemption within
//     nominal quota);
//   - Admission Fair Sharing (afs.go): LocalQueue usage with half-life decay
//     sampled every usageSamplingInterval, entry penalties, resource weights,
//     ordering inside ClusterQueues with admissionScope
//     UsageBasedAdmissionFairSharing and of preemption candidates;
//   - waitForPodsReady (podsready.go): admitted workloads not started within the
//     timeout are evicted and requeued with exponential backoff and the Eviction
//     or Creation timestamp, deactivated after backoffLimitCount requeues;
//     blockAdmission.
//
// docs/kueue.md documents every parameter and field, with worked examples.
//
// Not simulated yet (reported as warnings when manifests use them): admission
// checks, partial admission, recoveryTimeout, feature gates (Kueue's defaults are
// used); of TAS: PodSet slices and groups, TASBalancedPlacement, delayed (second-pass) assignments, failed-node
// replacement, and the empty-cluster reservation of a preemptor without victims.
package kueue
