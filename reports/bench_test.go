package reports

import (
	"fmt"
	"testing"
	"time"

	"github.com/gpusim/gpusim/sim"
)

// bigResult builds a synthetic finished result with n jobs (3 events each) without
// running the engine.
func bigResult(tb testing.TB, n int) *sim.Result {
	c := testCluster(tb, 100, 8)
	res := &sim.Result{Policy: "synthetic", Cluster: c, Jobs: make([]sim.Job, n), Log: make([]sim.Event, 0, 3*n)}
	classes := []sim.JobClass{sim.ClassTraining, sim.ClassExperiment, sim.ClassServing}
	nodes := make([]sim.NodeID, n)
	for i := range res.Jobs {
		sub := sim.Time(i) * sim.Time(sim.Second)
		start := sub + sim.Time(i%97)*sim.Time(sim.Second)
		dur := sim.Duration(30+i%3600) * sim.Second
		nodes[i] = sim.NodeID(i % 100)
		res.Jobs[i] = sim.Job{Spec: sim.JobSpec{ID: sim.JobID(fmt.Sprintf("job-%07d", i)), Submit: sub,
			Queue: fmt.Sprintf("q%d", i%7), User: fmt.Sprintf("u%d", i%101), Class: classes[i%3],
			Replicas: 1, GPUsPerReplica: 1 + int32(i%8), GPUMilli: 1000, Duration: dur},
			Ref: sim.JobRef(i), State: sim.StateCompleted, Estimate: dur,
			FirstStart: start, LastStart: start, End: start.Add(dur), Nodes: nodes[i : i+1]}
		res.Log = append(res.Log, sim.Event{Time: sub, Kind: sim.EvArrive, Job: sim.JobRef(i)},
			sim.Event{Time: start, Kind: sim.EvStart, Job: sim.JobRef(i)},
			sim.Event{Time: start.Add(dur), Kind: sim.EvFinish, Job: sim.JobRef(i)})
		if i%10 == 0 {
			res.Samples = append(res.Samples, sim.Sample{Time: sub, AllocMilli: int64(i % 800000), Running: 100, Pending: 5})
		}
	}
	res.Makespan = res.Jobs[n-1].End
	res.End = res.Makespan
	res.Events = int64(len(res.Log))
	return res
}

// BenchmarkWriteRunDir1M measures Summarize + WriteRunDir on 1,000,000 jobs and
// 3,000,000 events: go test -run X -bench WriteRunDir1M -benchtime 1x ./reports
func BenchmarkWriteRunDir1M(b *testing.B) {
	res := bigResult(b, 1_000_000)
	dir := b.TempDir()
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		s := Summarize(res, Provenance{}, time.Second)
		t1 := time.Now()
		if err := WriteRunDir(dir, res, s); err != nil {
			b.Fatal(err)
		}
		b.Logf("summarize %v, write %v", t1.Sub(t0), time.Since(t1))
	}
}

// BenchmarkBuildReport100k measures a report over one run of 100,000 jobs and
// 300,000 events (events are read for the per-queue share plot):
// go test -run X -bench BuildReport100k -benchtime 1x ./reports
func BenchmarkBuildReport100k(b *testing.B) {
	res := bigResult(b, 100_000)
	dir := b.TempDir()
	if err := WriteRunDir(dir+"/run", res, Summarize(res, Provenance{}, time.Second)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		rep, err := LoadReport([]string{dir + "/run"})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		qs := QueueShares(rep.Runs[0])
		t2 := time.Now()
		if err := rep.Write(dir + "/report"); err != nil {
			b.Fatal(err)
		}
		b.Logf("load %v, queue shares %v (%d queues), write %v", t1.Sub(t0), t2.Sub(t1), len(qs.Queues), time.Since(t2))
	}
}
