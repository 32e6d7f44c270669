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
//     borrowWithinCohort) with Kueue's candidate ordering and fill-back;
//     preempt-then-admit-later: victims keep running and hold quota for the
//     eviction grace period, the preemptor stays at its queue's head;
//   - placement after admission (kube-scheduler's role) on the assigned flavors'
//     nodes; an admitted workload that does not fit the free nodes holds its quota
//     and waits (the quota-vs-capacity gap);
//   - topology-aware scheduling (tas.go): Topology levels mapped to sim levels,
//     ResourceFlavors with topologyName, required / preferred / unconstrained
//     requests per workload (params.topologyRequests; implied unconstrained in
//     TAS-only ClusterQueues), a topology assignment after the quota check on the
//     live free capacity (quota fit without a domain becomes Preempt, and NoFit
//     if not even an empty cluster has one), preemption until quota and topology
//     fit, and admitted TAS workloads start exactly on their assignment.
//
// Not simulated yet (reported as warnings when manifests use them): fair sharing
// (DRS ordering and fair preemption), Admission Fair Sharing, waitForPodsReady,
// admission checks, partial admission; of TAS: PodSet slices and groups,
// TASBalancedPlacement, delayed (second-pass) assignments, failed-node
// replacement, and the empty-cluster reservation of a preemptor without victims.
package kueue
