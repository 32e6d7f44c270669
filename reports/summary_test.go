package reports

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpusim/gpusim/sim"
)

// TestSummarizeSmall checks every headline metric against hand-computed values.
//
// Cluster: 2 nodes x 4 GPUs. Strict FIFO.
//
//	job  submit  run  GPUs   start  end   wait  jct   slowdown
//	j1   0       100  1x4    0      100   0     100   100/100 = 1
//	j2   0       50   1x4    0      50    0     50    50/50   = 1
//	j3   10      20   2x4    100    120   90    110   110/20  = 5.5
//	j4   20      5    1x1    120    125   100   105   105/10  = 10.5 (bounded: run < 10 s)
//	j5   30      5    4x4    never (needs 4 nodes)
//
// Busy GPU-s = 400+200+160+5 = 765 over capacity 8 x 125 -> utilization 0.765.
func TestSummarizeSmall(t *testing.T) {
	res := smallResult(t)
	prov := Provenance{Version: "v-test", GoVersion: "go-test", Seed: 1, Scenario: "small", ScenarioSHA256: "abc"}
	s := Summarize(res, prov, 2*time.Second)

	want := &Summary{
		Schema: SummarySchema, Policy: "fifo-test", Scenario: "small",
		Jobs:     JobCounts{Total: 5, Completed: 4, Unfinished: 1, Pending: 1, NeverStarted: 1},
		WaitS:    Stats{Mean: 47.5, P50: 0, P95: 100, P99: 100, Max: 100},
		JCTS:     Stats{Mean: 91.25, P50: 100, P95: 110, P99: 110, Max: 110},
		Slowdown: Stats{Mean: 4.5, P50: 1, P95: 10.5, P99: 10.5, Max: 10.5},
		Classes: map[string]GroupSummary{
			// GPU-hours: training 400+160 GPU-s, experiment 200+5 GPU-s, of 765.
			"training": {Jobs: 2, Completed: 2, WaitS: Stats{45, 0, 90, 90, 90},
				JCTS: Stats{105, 100, 110, 110, 110}, Slowdown: Stats{3.25, 1, 5.5, 5.5, 5.5},
				GPUHours: 0.155556, Share: 0.732026},
			"experiment": {Jobs: 2, Completed: 2, WaitS: Stats{50, 0, 100, 100, 100},
				JCTS: Stats{77.5, 50, 105, 105, 105}, Slowdown: Stats{5.75, 1, 10.5, 10.5, 10.5},
				GPUHours: 0.056944, Share: 0.267974},
			"serving": {Jobs: 1},
		},
		PerQueue: map[string]GroupSummary{
			"q1": {Jobs: 2, Completed: 2, WaitS: Stats{45, 0, 90, 90, 90},
				JCTS: Stats{105, 100, 110, 110, 110}, Slowdown: Stats{3.25, 1, 5.5, 5.5, 5.5},
				GPUHours: 0.155556, Share: 0.732026},
			"q2": {Jobs: 2, Completed: 2, WaitS: Stats{50, 0, 100, 100, 100},
				JCTS: Stats{77.5, 50, 105, 105, 105}, Slowdown: Stats{5.75, 1, 10.5, 10.5, 10.5},
				GPUHours: 0.056944, Share: 0.267974},
			"q3": {Jobs: 1},
		},
		PerUser: map[string]GroupSummary{
			"alice": {Jobs: 2, Completed: 2, WaitS: Stats{45, 0, 90, 90, 90},
				JCTS: Stats{105, 100, 110, 110, 110}, Slowdown: Stats{3.25, 1, 5.5, 5.5, 5.5},
				GPUHours: 0.155556, Share: 0.732026},
			"bob": {Jobs: 2, Completed: 2, WaitS: Stats{50, 0, 100, 100, 100},
				JCTS: Stats{77.5, 50, 105, 105, 105}, Slowdown: Stats{5.75, 1, 10.5, 10.5, 10.5},
				GPUHours: 0.056944, Share: 0.267974},
			"carol": {Jobs: 1},
		},
		PerTeam: map[string]GroupSummary{
			"unknown": {Jobs: 5, Completed: 4, WaitS: Stats{47.5, 0, 100, 100, 100},
				JCTS: Stats{91.25, 100, 110, 110, 110}, Slowdown: Stats{4.5, 1, 10.5, 10.5, 10.5},
				GPUHours: 0.2125, Share: 1},
		},
		// 81 / (2 x (3.25^2 + 5.75^2)) = 0.9283667...
		Fairness:         Fairness{JainUsers: 0.928367, JainQueues: 0.928367},
		MakespanS:        125,
		EndS:             125,
		GPUUtilization:   0.765,
		GPUCapacity:      8,
		Events:           res.Events,
		SchedulingPoints: res.SchedulingPoints,
		WallSeconds:      2,
		EventsPerSecond:  float64(res.Events) / 2,
		Provenance:       prov,
	}
	if d := cmp.Diff(want, s); d != "" {
		t.Fatalf("summary mismatch (-want +got):\n%s", d)
	}
	// Showback: 560 GPU-s of q1 at 3.6 per GPU-hour = 0.56; a per-model price wins.
	priced := SummarizeWith(res, prov, 2*time.Second, Prices{Default: 3.6})
	if got := priced.PerQueue["q1"].Cost; got != 0.56 {
		t.Errorf("q1 cost %g, want 0.56", got)
	}
	priced = SummarizeWith(res, prov, 2*time.Second, Prices{Default: 3.6, PerModel: map[string]float64{"a100": 7.2}})
	if got := priced.PerUser["bob"].Cost; got != 0.41 {
		t.Errorf("bob cost %g, want 205 GPU-s x 7.2 / 3600 = 0.41", got)
	}
	// arrivals 5 + ends 4 at least
	if res.Events < 9 {
		t.Fatalf("events = %d, want >= 9", res.Events)
	}

	// Round trip through summary.json.
	dir := t.TempDir()
	if err := WriteRunDir(dir, res, s); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary(filepath.Join(dir, SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(s, back); d != "" {
		t.Fatalf("summary.json round trip (-want +got):\n%s", d)
	}
}

func TestPercentileNearestRank(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {95, 10}, {99, 10}, {10, 1}, {11, 2}, {0, 1}, {100, 10}} {
		if got := Percentile(xs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("empty percentile not 0")
	}
	if (ComputeStats(nil) != Stats{}) {
		t.Error("empty stats not zero")
	}
}

func TestJain(t *testing.T) {
	if got := Jain([]float64{2, 2, 2}); got != 1 {
		t.Errorf("equal = %v", got)
	}
	if got := Jain([]float64{1, 0, 0, 0}); got != 0.25 {
		t.Errorf("one of four = %v", got)
	}
	if Jain(nil) != 0 {
		t.Error("empty not 0")
	}
}

func TestSummarizeNil(t *testing.T) {
	s := Summarize(nil, Provenance{Scenario: "x"}, 0)
	if s.Scenario != "x" || s.Jobs.Total != 0 {
		t.Fatalf("%+v", s)
	}
	if _, err := MarshalSummary(s); err != nil {
		t.Fatal(err)
	}
}

func TestParseSummaryErrors(t *testing.T) {
	if _, err := ParseSummary("a.json", []byte("{")); err == nil || !contains(err.Error(), "a.json") {
		t.Fatalf("err = %v", err)
	}
	if _, err := ParseSummary("b.json", []byte(`{"schema":"other"}`)); err == nil {
		t.Fatal("want schema error")
	}
	if _, err := ReadSummary(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("want error")
	}
}

// TestSummaryJSONGolden pins the summary.json text: key order, indentation and
// number formatting.
func TestSummaryJSONGolden(t *testing.T) {
	res := smallResult(t)
	b, err := MarshalSummary(Summarize(res, Provenance{Version: "v-test", GoVersion: "go-test", Seed: 1, Scenario: "small"}, 0))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "small/summary.json", b)
}

// TestGPUHoursRequeueDelay: held time ends at preempt and suspend; the delay to the
// next start is the requeue delay.
func TestGPUHoursRequeueDelay(t *testing.T) {
	s := func(sec float64) sim.Time { return sim.Time(sim.Seconds(sec)) }
	res := &sim.Result{
		Jobs: []sim.Job{{Spec: sim.JobSpec{ID: "a", Replicas: 1, GPUsPerReplica: 2, GPUMilli: sim.WholeGPU}, Wasted: sim.Seconds(36), End: s(50)}},
		Log: []sim.Event{{Time: 0, Kind: sim.EvStart}, {Time: s(10), Kind: sim.EvPreempt}, {Time: s(25), Kind: sim.EvStart},
			{Time: s(30), Kind: sim.EvSuspend}, {Time: s(40), Kind: sim.EvStart}, {Time: s(50), Kind: sim.EvFinish}},
		End: s(50),
	}
	held, wasted, requeue := gpuHours(res)
	if held[0] != 25*2/3600.0 || wasted[0] != 36*2/3600.0 {
		t.Errorf("held %g wasted %g", held[0]*3600, wasted[0]*3600)
	}
	if fmt.Sprint(requeue[0]) != "[15 10]" {
		t.Errorf("requeue delays %v, want [15 10]", requeue[0])
	}
}
