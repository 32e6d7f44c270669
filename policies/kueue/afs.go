package kueue

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// Admission Fair Sharing (Kueue pkg/util/admissionfairsharing, localqueue
// controller): a ClusterQueue with admissionScope UsageBasedAdmissionFairSharing
// orders its workloads by their LocalQueue's decayed usage first.

// afsRes are the resources AFS counts, in Kueue's units: GPUs, CPU cores, memory
// bytes (Kueue weighs Quantity.AsApproximateFloat64 values).
var afsRes = [...]string{ResGPU, ResCPU, ResMemory}

// lqState is one LocalQueue's AFS usage.
type lqState struct {
	key      string
	cq       *clusterQueue
	weight   float64    // LocalQueue fairSharing.weight (default 1)
	consumed [3]float64 // decayed admitted usage per afsRes
	penalty  [3]float64 // entry penalties since the last sample
}

type afsState struct {
	cfg     *AdmissionFairSharingConfig
	lqs     map[string]*lqState
	weights [3]float64 // resourceWeights per afsRes
	last    sim.Time   // time of the last usage sample (samples at multiples of the interval)
}

func (k *Kueue) afsOn() bool { return k.afs.cfg != nil }

func (k *Kueue) setupAFS() {
	if k.m.Config == nil || k.m.Config.AdmissionFairSharing == nil {
		return
	}
	cfg := k.m.Config.AdmissionFairSharing
	k.afs.cfg = cfg
	for i, r := range afsRes {
		k.afs.weights[i] = 1
		if w, ok := cfg.ResourceWeights[r]; ok {
			k.afs.weights[i] = w
		}
	}
	for _, cq := range k.cqs {
		if sc := k.m.ClusterQueues[cq.name].AdmissionScope; sc != nil && sc.AdmissionMode == "UsageBasedAdmissionFairSharing" {
			cq.afsOn = true
		}
	}
	k.afs.lqs = map[string]*lqState{}
	for _, key := range slices.Sorted(maps.Keys(k.m.LocalQueues)) {
		lq := k.m.LocalQueues[key]
		cq := k.cqByName[lq.ClusterQueue]
		k.afs.lqs[key] = &lqState{key: key, cq: cq, weight: weightOf(lq.FairSharing)}
		cq.afsLQs++
	}
}

// lqKeyOf resolves a job's LocalQueue key like localQueue does.
func (k *Kueue) lqKeyOf(j *sim.Job) string {
	norm := func(name string) string {
		if name != "" && !strings.Contains(name, "/") {
			name = "default/" + name
		}
		return name
	}
	q := j.Spec.Queue
	if mapped, ok := k.p.QueueMapping.Map[q]; ok {
		q = mapped
	}
	if _, ok := k.m.LocalQueues[norm(q)]; ok {
		return norm(q)
	}
	return norm(k.p.QueueMapping.Default)
}

// afsAmounts converts a job's requests to Kueue units per afsRes.
func afsAmounts(s *sim.JobSpec) [3]float64 {
	r := requests(s)
	return [3]float64{float64(r[ResGPU]), float64(r[ResCPU]) / 1000, float64(r[ResMemory]) * (1 << 20)}
}

// alpha is Kueue's decay rate for an elapsed time: 1 - 0.5^(dt/halfLife)
// (0 when halfLife is 0).
func alpha(dt, halfLife sim.Duration) float64 {
	if halfLife == 0 {
		return 0
	}
	return 1 - math.Pow(0.5, float64(dt)/float64(halfLife))
}

// afsAdvance takes the usage samples due up to now. Kueue's LocalQueue controller
// samples every usageSamplingInterval:
//
//	consumed <- (1-alpha(dt))*consumed + alpha(dt)*admittedUsage + penalty; penalty <- 0
//
// (consumed reset to 0 when usageHalfLifeTime is 0). Admitted usage only changes
// at scheduling points and events, so samples are taken lazily when time next
// advances: the first one with the penalties, the others (same admitted usage) in
// closed form.
func (k *Kueue) afsAdvance(now sim.Time) {
	a := &k.afs
	if a.cfg == nil {
		return
	}
	iv := a.cfg.UsageSamplingInterval
	n := int64(now-a.last) / int64(iv)
	if n <= 0 {
		return
	}
	a.last = a.last.Add(sim.Duration(n) * iv)
	hl := a.cfg.UsageHalfLifeTime
	adm := k.afsAdmitted()
	for _, key := range slices.Sorted(maps.Keys(a.lqs)) {
		lq := a.lqs[key]
		if hl == 0 {
			lq.consumed, lq.penalty = [3]float64{}, [3]float64{}
			continue
		}
		al := alpha(iv, hl)
		rest := math.Pow(0.5, float64(sim.Duration(n-1)*iv)/float64(hl))
		for r := range lq.consumed {
			c := (1-al)*lq.consumed[r] + al*adm[lq][r] + lq.penalty[r]
			lq.consumed[r] = adm[lq][r] + (c-adm[lq][r])*rest
		}
		lq.penalty = [3]float64{}
	}
}

// afsAdmitted sums admitted (quota-holding) workloads per LocalQueue.
func (k *Kueue) afsAdmitted() map[*lqState][3]float64 {
	out := map[*lqState][3]float64{}
	for _, cq := range k.cqs {
		for _, w := range cq.admitted {
			if w.lq == nil {
				continue
			}
			u := out[w.lq]
			am := afsAmounts(&w.job.Spec)
			for r := range u {
				u[r] += am[r]
			}
			out[w.lq] = u
		}
	}
	return out
}

// afsOnAdmit adds the entry penalty alpha(samplingInterval) * requests to the
// workload's LocalQueue, so a burst is throttled before the next sample.
func (k *Kueue) afsOnAdmit(w *workload) {
	if k.afs.cfg == nil || w.lq == nil {
		return
	}
	al := alpha(k.afs.cfg.UsageSamplingInterval, k.afs.cfg.UsageHalfLifeTime)
	am := afsAmounts(&w.job.Spec)
	for r := range am {
		w.lq.penalty[r] += al * am[r]
	}
}

// LocalQueueUsage is the AFS ordering key of a LocalQueue ("namespace/name"):
// sum over resources of weight * (consumed + penalty), divided by the LocalQueue's
// weight (+Inf for weight 0). ok is false without AFS or for an unknown queue.
func (k *Kueue) LocalQueueUsage(key string) (usage float64, ok bool) {
	lq := k.afs.lqs[key]
	if lq == nil {
		return 0, false
	}
	return k.lqUsage(lq), true
}

func (k *Kueue) lqUsage(lq *lqState) float64 {
	if lq.weight <= 0 {
		return math.Inf(1)
	}
	var u float64
	for r := range lq.consumed {
		u += k.afs.weights[r] * (lq.consumed[r] + lq.penalty[r])
	}
	return u / lq.weight
}

// afsHead returns the head of an AFS ClusterQueue: the first queued workload (in
// priority, timestamp order) of the LocalQueue with the lowest usage; ties keep
// queue order. The scan stops once every LocalQueue of the ClusterQueue has been
// seen (it walks the whole queue only while some LocalQueue has nothing queued).
func (k *Kueue) afsHead(cq *clusterQueue) *workload {
	// The first queued workload of each LocalQueue, over every bucket (each bucket
	// is in queue order, so a bucket's walk stops once it has seen every LocalQueue).
	var firsts []*workload
	var seen []*lqState
	for _, b := range cq.buckets {
		seen = seen[:0]
		for _, w := range *b.heap() {
			if slices.Contains(seen, w.lq) {
				continue
			}
			seen = append(seen, w.lq)
			i := slices.IndexFunc(firsts, func(f *workload) bool { return f.lq == w.lq })
			if i < 0 {
				firsts = append(firsts, w)
			} else if k.less(w, firsts[i]) {
				firsts[i] = w
			}
			if len(seen) >= cq.afsLQs {
				break
			}
		}
	}
	// The LocalQueue with the lowest usage wins; ties go to the one whose first
	// workload comes first in queue order.
	var best *workload
	bestU := 0.0
	for _, w := range firsts {
		u := math.Inf(1)
		if w.lq != nil {
			u = k.lqUsage(w.lq)
		}
		if best == nil || u < bestU || u == bestU && k.less(w, best) {
			best, bestU = w, u
		}
	}
	return best
}

// afsCandCmp orders preemption candidates of the same AFS ClusterQueue from
// different LocalQueues: higher LocalQueue usage first (-1: x first). 0 otherwise.
func (k *Kueue) afsCandCmp(x, y *workload) int {
	if k.afs.cfg == nil || x.cq != y.cq || !x.cq.afsOn || x.lq == y.lq || x.lq == nil || y.lq == nil {
		return 0
	}
	return -cmp.Compare(k.lqUsage(x.lq), k.lqUsage(y.lq))
}
