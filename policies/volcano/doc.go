// Package volcano simulates the Volcano batch scheduler (volcano-sh/volcano) as
// the policy "volcano". Every sim job is a PodGroup of Replicas identical tasks
// with minAvailable = Replicas; JobSpec.Queue names its Volcano Queue and
// JobSpec.Priority is the PodGroup priority.
//
// Simulated (docs/volcano.md has the details and the parameters):
//   - periodic sessions every schedulePeriod: decisions only at multiples of it;
//   - the actions enqueue (overcommit and proportion gates), allocate (queue
//     priority queue with shares recomputed after every job, Overused skip, gang
//     all-or-nothing, idle then future-idle node gradients), backfill (BestEffort
//     jobs only), preempt (intra-queue) and reclaim (cross-queue), in the
//     configured order;
//   - the plugins priority, gang, conformance, drf, proportion (weighted
//     water-filling of deserved shares), overcommit, predicates, nodeorder
//     (leastrequested, mostrequested, balancedresource) and binpack, combined by
//     tier as Volcano does (orderings: first deciding plugin; node scores: sum;
//     victims: intersection per tier, an empty tier defers to the next);
//   - evictions: a victim keeps running for evictionGracePeriod, then stops
//     (requeued); its preemptor is pipelined and starts at the first session
//     after the resources are free;
//   - HyperNode network topology (hard/soft, highestTierAllowed) for
//     multi-replica jobs, with tiers mapped onto gpusim topology levels.
//
// Not simulated: elastic jobs (minAvailable < replicas), per-task priorities,
// the capacity/sla/tdm plugins, hierarchical queues, affinities.
package volcano
