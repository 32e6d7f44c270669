package kueue

import "github.com/gpusim/gpusim/sim"

// Kueue's requeue batch period (params.requeueBatchPeriod; docs/kueue.md,
// docs/fidelity.md). When quota is freed (a workload finishes or an evicted
// one releases its quota), Kueue does not move the inadmissible workloads
// of the cohort tree back to their queues at once: the queue manager asks
// its requeuer (pkg/cache/queue/inadmissible_workloads.go, NewRequeuer,
// requeueBatchPeriod = 1 s; workqueue AddAfter, one request per root cohort
// or cohort-less ClusterQueue, so the requests of one period coalesce) and
// the workloads come back when the batch fires. The real controller showed
// this as a 1 s delay in the fidelity recordings. StrictFIFO heads are
// requeued immediately (ClusterQueue.RequeueIfNotPresent) and never parked,
// so only BestEffortFIFO queues are affected.
//
// With a period of 0 (the default) parked workloads are unparked at once,
// as before; outputs do not change.

// requeueAt is a pending batched requeue of the cohort tree holding root
// (root is the tree's first ClusterQueue, cq.peers[0]).
type requeueAt struct {
	root *clusterQueue
	at   sim.Time
}

// batchRequeue returns the parked workloads of cq's cohort tree to
// their queues: at once without a batch period, else when a batch for the
// tree that is already pending fires, or one batch period from now.
func (k *Kueue) batchRequeue(cq *clusterQueue, now sim.Time) {
	if k.batch == 0 {
		k.unpark(cq)
		return
	}
	root := cq.peers[0]
	for _, r := range k.requeues {
		if r.root == root {
			return
		}
	}
	k.requeues = append(k.requeues, requeueAt{root: root, at: now.Add(k.batch)})
}

// fireRequeues unparks the trees whose batch is due at now.
func (k *Kueue) fireRequeues(now sim.Time) {
	keep := k.requeues[:0]
	for _, r := range k.requeues {
		if r.at <= now {
			k.unpark(r.root)
			continue
		}
		keep = append(keep, r)
	}
	k.requeues = keep
}

// requeueWakes asks for a scheduling point at each pending batch.
func (k *Kueue) requeueWakes(p *sim.Plan) {
	for _, r := range k.requeues {
		p.Release(r.at)
	}
}
