//go:build unix

package scenarios

import (
	"context"
	"fmt"
	"syscall"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// BenchmarkSharing is issue 11's cost measurement: a 1M-job replay (fifo +
// best-fit, load 0.9, 10,240 GPUs) with 30% of the jobs shareable (1-GPU jobs
// marked sharing: any, 8-32 GiB of GPU memory) on time-slicing GPUs (4 clients,
// fallback factors 0.6 per pair), against the same jobs on exclusive GPUs. Run
// each alone so that maxrss-MiB (the process's peak RSS) is the run's own:
//
//	go test ./scenarios -run '^$' -bench 'BenchmarkSharing/mode=exclusive/jobs=1000000' -benchtime 1x
//	go test ./scenarios -run '^$' -bench 'BenchmarkSharing/mode=timeslice/jobs=1000000' -benchtime 1x
func BenchmarkSharing(b *testing.B) {
	for _, size := range []struct{ nodes, jobs int }{{16, 10_000}, {1280, 1_000_000}} {
		if testing.Short() && size.jobs > 100_000 {
			continue
		}
		for _, mode := range []string{"exclusive", "timeslice"} {
			b.Run(fmt.Sprintf("mode=%s/jobs=%d/gpus=%d", mode, size.jobs, size.nodes*8), func(b *testing.B) {
				c, jobs := benchSetup(b, size.nodes, size.jobs, 0.9)
				shareable := markShareable(jobs, 0.3)
				var shCfg *sim.SharingConfig
				if mode == "timeslice" {
					specs := make([]sim.NodeSpec, c.NumNodes())
					for i := range specs {
						specs[i] = *c.Node(sim.NodeID(i))
						specs[i].Sharing, specs[i].SharingClients = sim.ShareTimeSlice, 4
					}
					var err error
					if c, err = sim.NewCluster(specs); err != nil {
						b.Fatal(err)
					}
					in, err := newTableInterference(InterferenceSpec{Default: 0.6})
					if err != nil {
						b.Fatal(err)
					}
					shCfg = &sim.SharingConfig{Interference: in}
				}
				var node yaml.Node
				if err := yaml.Unmarshal([]byte("placement: best-fit"), &node); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				cpu0 := cpuNanos()
				b.ResetTimer()
				var events int64
				var res *sim.Result
				for i := 0; i < b.N; i++ {
					p, err := policies.New("fifo", node.Content[0])
					if err != nil {
						b.Fatal(err)
					}
					e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: p, Seed: 1, EnforceWalltime: true,
						SampleInterval: 60 * sim.Second, NoLog: true, Sharing: shCfg})
					if err != nil {
						b.Fatal(err)
					}
					if res, err = e.Run(context.Background()); err != nil {
						b.Fatal(err)
					}
					events += res.Events
				}
				b.StopTimer()
				cpu := cpuNanos() - cpu0
				done := 0
				for i := range res.Jobs {
					if res.Jobs[i].State == sim.StateCompleted {
						done++
					}
				}
				if done == 0 {
					b.Fatal("nothing completed")
				}
				if mode == "timeslice" && (res.Sharing == nil || res.Sharing.SharedGPUSeconds == 0) {
					b.Fatal("no GPU was shared")
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*int64(len(jobs))), "ns/job")
				b.ReportMetric(float64(shareable)/float64(len(jobs)), "shareable")
				// CPU time is steadier than wall time on a shared machine
				b.ReportMetric(float64(cpu)/float64(int64(b.N)*int64(len(jobs))), "cpu-ns/job")
				var ru syscall.Rusage
				if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
					b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB")
				}
			})
		}
	}
}

// cpuNanos is the process's user + system CPU time.
func cpuNanos() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// markShareable marks about frac of all jobs shareable: 1-GPU single-replica
// jobs, spread evenly by index, with 8-32 GiB of GPU memory. It returns how many.
func markShareable(jobs []sim.JobSpec, frac float64) int {
	single := 0
	for i := range jobs {
		if jobs[i].Replicas == 1 && jobs[i].GPUsPerReplica == 1 && jobs[i].GPUMilli == sim.WholeGPU {
			single++
		}
	}
	want := int(frac * float64(len(jobs)))
	if single == 0 {
		return 0
	}
	n, acc := 0, 0
	for i := range jobs {
		s := &jobs[i]
		if s.Replicas != 1 || s.GPUsPerReplica != 1 || s.GPUMilli != sim.WholeGPU {
			continue
		}
		acc += want
		if acc >= single { // Bresenham: want of every single jobs
			acc -= single
			s.Sharing = sim.AcceptAny
			s.GPUMemMiB = int64(8192 * (1 + i%4))
			n++
		}
	}
	return n
}
