package kueue

import (
	"encoding/binary"
	"hash/fnv"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// jobsHash is an FNV-64a hash of every job's outcome (state, first and last start,
// end, preemptions, wasted time), in JobRef order.
//
// Evictions of workloads that never started (EvEvict, logged and counted in
// Preempted since issue 17) are left out of both hashes, so they still pin the
// decisions recorded before the issue-16 speed work.
func jobsHash(res *sim.Result) uint64 {
	evicts := make([]int32, len(res.Jobs))
	for _, e := range res.Log {
		if e.Kind == sim.EvEvict {
			evicts[e.Job]++
		}
	}
	h := fnv.New64a()
	var buf [8]byte
	put := func(v int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		put(int64(j.State))
		put(int64(j.FirstStart))
		put(int64(j.LastStart))
		put(int64(j.End))
		put(int64(j.Preempted) - int64(evicts[i]))
		put(int64(j.Wasted))
	}
	return h.Sum64()
}

// logHash is an FNV-64a hash of the event log (time, kind, job, value of each event).
func logHash(res *sim.Result) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	put := func(v int64) {
		binary.LittleEndian.PutUint64(buf[:], uint64(v))
		h.Write(buf[:])
	}
	for _, e := range res.Log {
		if e.Kind == sim.EvEvict {
			continue
		}
		put(int64(e.Time))
		put(int64(e.Kind))
		put(int64(e.Job))
		put(e.Value)
	}
	return h.Sum64()
}

// TestKueueBenchDecisions pins BenchmarkKueue's decisions on 20,000 jobs (100
// ClusterQueues in 10 cohorts, 1,280 GPUs): the admission, eviction, preemption
// and cycle counts and hashes of every job's outcome and of the event log, as
// recorded before the issue-16 speed work. An optimisation of the scheduling hot
// paths must leave every one of them unchanged.
func TestKueueBenchDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 20,000 jobs through 100 ClusterQueues")
	}
	m := manyQueues(benchCQs, benchCohorts, benchNodes*8/benchCQs)
	c := simtest.Cluster(t, simtest.Nodes(benchNodes, 8))
	res, k := runBench(t, c, m, benchJobs(20_000), false)
	pre := 0
	for j := range res.Jobs {
		pre += int(res.Jobs[j].Preempted)
	}
	got := [...]int64{res.Events, int64(pre), k.seq, k.cycles, int64(k.evicted), int64(len(res.Log))}
	// Preemptions include the 901 evictions of admitted workloads that had not
	// started (logged as EvEvict): every eviction is now a preemption.
	want := [...]int64{58106, 10736, 30736, 178883, 10736, 111962 + 901}
	if got != want {
		t.Errorf("events, preemptions, admissions, cycles, evictions, log length = %v, want %v", got, want)
	}
	if h := jobsHash(res); h != 0xa89c208a2df90cb2 {
		t.Errorf("jobs hash %016x, want a89c208a2df90cb2", h)
	}
	if h := logHash(res); h != 0x916aabfe0341cb1b {
		t.Errorf("log hash %016x, want 916aabfe0341cb1b", h)
	}
}
