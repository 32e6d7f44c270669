package slurm

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkSlurm: 20,000 jobs of 8 users in 2 accounts on 64 nodes (512 GPUs) at
// an offered load of about 0.9, with Fair Tree and age weighted, walltimes 1-3x
// the duration (backfill on time limits) and two partitions.
//
//	go test ./policies/slurm -run '^$' -bench BenchmarkSlurm -benchtime 1x
func BenchmarkSlurm(b *testing.B) { benchSlurm(b, "") }

// BenchmarkSlurmWindows is BenchmarkSlurm with willRun: windows (Slurm's
// backfill start search).
func BenchmarkSlurmWindows(b *testing.B) { benchSlurm(b, "windows") }

func benchSlurm(b *testing.B, willRun string) {
	const nodes = 64
	n := 20_000
	if testing.Short() {
		n = 2_000
	}
	r := sim.Stream(7, "bench")
	jobs := make([]sim.JobSpec, n)
	// mean GPU-seconds per job 3.75 GPUs x 2460 s; gaps for load 0.9
	gap := 3.75 * 2460 / (nodes * 8 * 0.9) * 1e6
	var t sim.Time
	for i := range jobs {
		dur := 60 + r.ExpFloat64()*2400
		g := int32(1 << r.IntN(4))
		t += sim.Time(r.ExpFloat64() * gap)
		jobs[i] = simtest.MakeJob(fmt.Sprintf("j%07d", i)).GPUs(g).Dur(dur).Wall(dur * (1 + 2*r.Float64())).Obj()
		jobs[i].Submit = t
		jobs[i].User = fmt.Sprintf("u%d", r.IntN(8))
		if r.IntN(4) == 0 {
			jobs[i].Queue = "short"
			jobs[i].Walltime = min(jobs[i].Walltime, sim.Hour)
			jobs[i].Duration = min(jobs[i].Duration, jobs[i].Walltime)
		}
	}
	c := simtest.Cluster(b, simtest.Nodes(nodes, 8))
	b.ResetTimer()
	var events int64
	for i := 0; i < b.N; i++ {
		s, err := New(Params{
			Partitions: []PartitionConf{
				{Name: "batch", Nodes: NodeList{"ALL"}, Default: true},
				{Name: "short", Nodes: NodeList{"0-15"}, PriorityTier: ptr(2)},
			},
			Priority: PriorityConf{Weights: struct {
				Age       uint32 `yaml:"age"`
				FairShare uint32 `yaml:"fairshare"`
				JobSize   uint32 `yaml:"jobSize"`
				Partition uint32 `yaml:"partition"`
				QOS       uint32 `yaml:"qos"`
			}{Age: 1000, FairShare: 10000}},
			Accounts: []AccountConf{
				{Name: "a", Users: []UserConf{{Name: "u0"}, {Name: "u1"}, {Name: "u2"}, {Name: "u3"}}},
				{Name: "b", Users: []UserConf{{Name: "u4"}, {Name: "u5"}, {Name: "u6"}, {Name: "u7"}}},
			},
			WillRun: willRun,
		})
		if err != nil {
			b.Fatal(err)
		}
		res := simtest.RunConfig(b, sim.Config{Cluster: c, Jobs: jobs, Policy: s, NoLog: true, EnforceWalltime: true})
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
		b.Logf("jobs %d events %d scheduling points %d makespan %v", n, res.Events, res.SchedulingPoints, res.Makespan)
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
}
