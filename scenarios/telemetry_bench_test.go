package scenarios

import (
	"fmt"
	"slices"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// BenchmarkAllOnRatio is the cost target for telemetry stragglers:
// BenchmarkRun's 1M-job / 10,240-GPU fifo replay plain (off) and with
// failures (the published default rates, full restart), telemetry stragglers
// (every node an episode per 720 h, mean 8 h, clock 0.5-0.85) and power
// accounting (DefaultGPUPower, CAISO carbon) all on, and with failures and
// power only (telemetry's own share). As BenchmarkPowerRunRatio it interleaves
// rounds after a warm-up round and times each run in CPU time (getrusage); it
// reports the min and median all-on/off ratio (target <= 1.5) and the median
// all-on / failures+power ratio.
//
//	go test ./scenarios -run '^$' -bench '^BenchmarkAllOnRatio$' -benchtime 1x -timeout 30m
func BenchmarkAllOnRatio(b *testing.B) {
	if testing.Short() {
		b.Skip("1M-job runs")
	}
	const rounds = 5
	cs, err := LoadCarbonCSV(caisoCSV, "", "2022-06-01T00:00:00Z")
	if err != nil {
		b.Fatal(err)
	}
	c, jobs := benchSetup(b, 1280, 1_000_000, 0.9)
	y := fmt.Sprintf("%sfailures: {strategy: restart}\ntelemetry: {model: {every: 720h, duration: {mean: 8h}, clock: {min: 0.5, max: 0.85}}}\n", minimal)
	sc, err := Parse([]byte(y), "bench.yaml", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var cpu [3][]float64
		var slowed, interrupts int64
		for r := 0; r <= rounds; r++ {
			for m := range 3 {
				p, err := policies.New("fifo", nil)
				if err != nil {
					b.Fatal(err)
				}
				cfg := sim.Config{Cluster: c, Jobs: jobs, Policy: p, Seed: 1, EnforceWalltime: true, SampleInterval: 60 * sim.Second}
				c0 := cpuTime()
				if m >= 1 {
					if cfg.Failures, err = sc.FailureConfig(0, c); err != nil {
						b.Fatal(err)
					}
					cfg.Power = &sim.PowerConfig{Models: DefaultGPUPower, Carbon: cs}
				}
				if m == 2 {
					if cfg.Telemetry, err = sc.TelemetryConfig(c); err != nil {
						b.Fatal(err)
					}
				}
				res := simtest.RunConfig(b, cfg)
				if res.Events < int64(len(jobs)) {
					b.Fatal("run did not schedule the workload")
				}
				if m == 2 {
					if res.Telemetry.JobsSlowed == 0 || res.Failures.Interruptions == 0 || !(res.Power.EnergyJ > 0) {
						b.Fatalf("all-on run saw no straggler, failure or energy: %+v", res.Telemetry)
					}
					slowed, interrupts = res.Telemetry.JobsSlowed, res.Failures.Interruptions
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
		b.ReportMetric(cpu[2][0], "on-cpu-s-min")
		b.ReportMetric(cpu[2][0]/cpu[0][0], "on/off-min")
		b.ReportMetric(med(cpu[2])/med(cpu[0]), "on/off-median")
		b.ReportMetric(med(cpu[2])/med(cpu[1]), "on/failpower-median")
		b.ReportMetric(float64(slowed), "jobs-slowed")
		b.ReportMetric(float64(interrupts), "interruptions")
	}
}
