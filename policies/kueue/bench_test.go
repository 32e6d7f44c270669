package kueue

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// manyQueues writes manifests for cqs ClusterQueues spread over cohorts cohorts,
// each with gpusPerCQ nominal GPUs, borrowing allowed, reclaim by preemption.
func manyQueues(cqs, cohorts int, gpusPerCQ int) string {
	var b strings.Builder
	b.WriteString("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n")
	for i := 0; i < cqs; i++ {
		fmt.Fprintf(&b, `---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq-%03d}
spec:
  cohort: cohort-%02d
  preemption: {reclaimWithinCohort: Any}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: %d}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: lq-%03d}
spec: {clusterQueue: cq-%03d}
`, i, i%cohorts, gpusPerCQ, i, i)
	}
	return b.String()
}

// benchCQs, benchCohorts and benchNodes size BenchmarkKueue's cluster: 100
// ClusterQueues in 10 cohorts on 160 8-GPU nodes (1,280 GPUs).
const benchCQs, benchCohorts, benchNodes = 100, 10, 160

// benchJobs is BenchmarkKueue's workload of n jobs: Poisson arrivals at an offered
// load of about 0.9, spread uniformly over the LocalQueues, 1-8 GPUs, priority 0-2.
func benchJobs(n int) []sim.JobSpec {
	r := sim.Stream(7, "bench")
	jobs := make([]sim.JobSpec, n)
	var t sim.Time
	for i := range jobs {
		t += sim.Time(r.ExpFloat64() * 4.1e6) // offered load ~0.9 of 1,280 GPUs
		jobs[i] = simtest.MakeJob(fmt.Sprintf("j%07d", i)).Queue(fmt.Sprintf("lq-%03d", r.IntN(benchCQs))).
			GPUs(int32(1 << r.IntN(4))).Prio(int32(r.IntN(3))).Dur(60 + r.ExpFloat64()*2400).Obj()
		jobs[i].Submit = t
	}
	return jobs
}

// runBench runs the benchmark scenario on jobs (with the event log unless noLog).
func runBench(tb testing.TB, c *sim.Cluster, m string, jobs []sim.JobSpec, noLog bool) (*sim.Result, *Kueue) {
	tb.Helper()
	g := policies.Dur(DefaultEvictionGrace)
	k, err := New(Params{Inline: m, EvictionGracePeriod: &g}, policies.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: k, NoLog: noLog})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return res, k
}

// BenchmarkKueue: 100 ClusterQueues in 10 cohorts, 200,000 jobs on 1,280 GPUs (issue
// 16's target: under 10 s on this machine). TestKueueBenchDecisions pins its
// decisions on 20,000 jobs.
//
//	go test ./policies/kueue -run '^$' -bench BenchmarkKueue -benchtime 1x
func BenchmarkKueue(b *testing.B) {
	n := 200_000
	if testing.Short() {
		n = 20_000
	}
	m := manyQueues(benchCQs, benchCohorts, benchNodes*8/benchCQs)
	jobs := benchJobs(n)
	c := simtest.Cluster(b, simtest.Nodes(benchNodes, 8))
	b.ResetTimer()
	var events int64
	for i := 0; i < b.N; i++ {
		res, k := runBench(b, c, m, jobs, true)
		done := 0
		for j := range res.Jobs {
			if res.Jobs[j].State == sim.StateCompleted {
				done++
			}
		}
		if done < n*9/10 {
			b.Fatalf("only %d of %d jobs completed", done, n)
		}
		events += res.Events
		pre := 0
		for j := range res.Jobs {
			pre += int(res.Jobs[j].Preempted)
		}
		b.Logf("jobs %d events %d preemptions %d admitted-total %d cycles %d evictions %d jobs-hash %016x", n, res.Events, pre, k.seq, k.cycles, k.evicted, jobsHash(res))
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
