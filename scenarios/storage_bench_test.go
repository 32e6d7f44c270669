package scenarios

import (
	"fmt"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkStorageRun is BenchmarkRun's fifo replay with checkpoints every
// 30 minutes of work: ckpt=fixed saves in a fixed 60 s (the closed form,
// storage off), storage=cluster and storage=leaf write 12 GB per GPU into one
// 1,000 GB/s pool or one per leaf (40 leaves). ckpt=none is BenchmarkRun's
// run. It reports the saves and the peak of saves in flight besides the
// times (docs/checkpoint-io.md).
//
//	go test ./scenarios -run '^$' -bench '^BenchmarkStorageRun$/jobs=1000000' -benchtime 1x -count 3 -benchmem
func BenchmarkStorageRun(b *testing.B) {
	for _, size := range []struct{ nodes, jobs int }{{16, 10_000}, {1280, 1_000_000}} {
		if testing.Short() && size.jobs > 100_000 {
			continue
		}
		var c *sim.Cluster
		var jobs []sim.JobSpec
		for _, mode := range []string{"ckpt=none", "ckpt=fixed", "storage=cluster", "storage=leaf"} {
			b.Run(fmt.Sprintf("policy=fifo/jobs=%d/gpus=%d/%s", size.jobs, size.nodes*8, mode), func(b *testing.B) {
				if c == nil {
					c, jobs = benchSetup(b, size.nodes, size.jobs, 0.9)
				}
				cfg := sim.Config{Cluster: c, Jobs: jobs, Seed: 1, EnforceWalltime: true, SampleInterval: 60 * sim.Second}
				if mode != "ckpt=none" {
					cfg.CheckpointInterval = 30 * sim.Minute
				}
				switch mode {
				case "ckpt=fixed":
					cfg.CheckpointSave = 60 * sim.Second
				case "storage=cluster", "storage=leaf":
					cfg.Storage = &sim.StorageConfig{BandwidthGBps: 1000, PerDomain: mode == "storage=leaf", Level: sim.LevelLeaf,
						SizeGB: func(s *sim.JobSpec) float64 { return 12 * float64(s.TotalGPUs()) }}
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				var events, saves, peak int64
				for i := 0; i < b.N; i++ {
					p, err := policies.New("fifo", nil)
					if err != nil {
						b.Fatal(err)
					}
					cfg.Policy = p
					res := simtest.RunConfig(b, cfg)
					if res.Jobs[len(res.Jobs)-1].State != sim.StateCompleted && res.Events < int64(len(jobs)) || cfg.Storage != nil && res.Storage.Saves == 0 {
						b.Fatalf("run did not schedule the workload")
					}
					events += res.Events
					if res.Storage != nil {
						saves += res.Storage.Saves
						peak = max(peak, int64(res.Storage.PeakConcurrent))
					}
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*int64(len(jobs))), "ns/job")
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(int64(b.N)*int64(len(jobs))), "cpu-ns/job")
				b.ReportMetric(float64(saves)/float64(b.N), "saves")
				b.ReportMetric(float64(peak), "peak-saves")
			})
		}
	}
}
