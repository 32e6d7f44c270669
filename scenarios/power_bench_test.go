package scenarios

import (
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkPowerRun is BenchmarkRun's fifo replay (power=off, the same run)
// and with power accounting on (DefaultGPUPower curves, the CAISO 2022 carbon
// series; cap=admit adds a cluster cap at 80% of full power that every start
// is checked against). The target: power=on at most 1.5x power=off.
// Besides wall time it reports the process's CPU time per job (cpu-ns/job,
// getrusage), which a machine shared with other work disturbs much less.
//
//	go test ./scenarios -run '^$' -bench '^BenchmarkPowerRun$/policy=fifo/jobs=1000000' -benchtime 1x -count 3
func BenchmarkPowerRun(b *testing.B) {
	cs, err := LoadCarbonCSV(caisoCSV, "", "2022-06-01T00:00:00Z")
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []struct{ nodes, jobs int }{{16, 10_000}, {1280, 1_000_000}} {
		if testing.Short() && size.jobs > 100_000 {
			continue
		}
		var c *sim.Cluster
		var jobs []sim.JobSpec
		for _, mode := range []string{"off", "on", "on/cap=admit"} {
			name := fmt.Sprintf("policy=fifo/jobs=%d/gpus=%d/power=%s", size.jobs, size.nodes*8, mode)
			b.Run(name, func(b *testing.B) {
				if c == nil {
					c, jobs = benchSetup(b, size.nodes, size.jobs, 0.9)
				}
				var pc *sim.PowerConfig
				if mode != "off" {
					pc = &sim.PowerConfig{Models: DefaultGPUPower, Carbon: cs}
				}
				if mode == "on/cap=admit" {
					h := DefaultGPUPower["H100-SXM-80GB"]
					pc.CapW = 0.8 * h.MaxW * float64(c.NumGPUs())
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := cpuTime()
				var events int64
				for i := 0; i < b.N; i++ {
					p, err := policies.New("fifo", nil)
					if err != nil {
						b.Fatal(err)
					}
					res := simtest.RunConfig(b, sim.Config{Cluster: c, Jobs: jobs, Policy: p, Seed: 1, EnforceWalltime: true, SampleInterval: 60 * sim.Second, Power: pc})
					if res.Jobs[len(res.Jobs)-1].State != sim.StateCompleted && res.Events < int64(len(jobs)) || pc != nil && res.Power.EnergyJ <= 0 {
						b.Fatalf("run did not schedule the workload")
					}
					events += res.Events
				}
				b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(int64(b.N)*int64(len(jobs))), "ns/job")
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(int64(b.N)*int64(len(jobs))), "cpu-ns/job")
			})
		}
	}
}

// cpuTime is the process's user + system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPowerRunRatio measures what BenchmarkPowerRun does in one process,
// interleaved: after a warm-up round, rounds of power=off, power=on and
// power=on/cap=admit 1M-job fifo replays, each timed in CPU time (getrusage).
// It reports the min and median of on/off and cap/off: on a machine shared
// with other work, interleaving and CPU time cancel most of the noise that
// separate wall-clock benchmarks suffer. Each op is 3 x rounds runs.
//
//	go test ./scenarios -run '^$' -bench '^BenchmarkPowerRunRatio$' -benchtime 1x -timeout 30m
func BenchmarkPowerRunRatio(b *testing.B) {
	if testing.Short() {
		b.Skip("1M-job runs")
	}
	const rounds = 6
	cs, err := LoadCarbonCSV(caisoCSV, "", "2022-06-01T00:00:00Z")
	if err != nil {
		b.Fatal(err)
	}
	c, jobs := benchSetup(b, 1280, 1_000_000, 0.9)
	h := DefaultGPUPower["H100-SXM-80GB"]
	modes := []*sim.PowerConfig{nil, {Models: DefaultGPUPower, Carbon: cs},
		{Models: DefaultGPUPower, Carbon: cs, CapW: 0.8 * h.MaxW * float64(c.NumGPUs())}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var cpu [3][]float64
		for r := 0; r <= rounds; r++ {
			for m, pc := range modes {
				p, err := policies.New("fifo", nil)
				if err != nil {
					b.Fatal(err)
				}
				c0 := cpuTime()
				res := simtest.RunConfig(b, sim.Config{Cluster: c, Jobs: jobs, Policy: p, Seed: 1, EnforceWalltime: true, SampleInterval: 60 * sim.Second, Power: pc})
				if res.Events < int64(len(jobs)) {
					b.Fatal("run did not schedule the workload")
				}
				if r > 0 { // round 0 warms the heap
					cpu[m] = append(cpu[m], (cpuTime() - c0).Seconds())
				}
			}
		}
		for m := range cpu {
			slices.Sort(cpu[m])
		}
		med := func(x []float64) float64 { return x[len(x)/2] }
		b.ReportMetric(cpu[0][0], "off-cpu-s-min")
		b.ReportMetric(cpu[1][0]/cpu[0][0], "on/off-min")
		b.ReportMetric(med(cpu[1])/med(cpu[0]), "on/off-median")
		b.ReportMetric(med(cpu[2])/med(cpu[0]), "cap/off-median")
	}
}
