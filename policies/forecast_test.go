package policies

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

func forecastPolicy(t *testing.T, name, params string) sim.Policy {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(params), &n); err != nil {
		t.Fatal(err)
	}
	p, err := New(name, n.Content[0])
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func user(s sim.JobSpec, u string) sim.JobSpec { s.User = u; return s }

// One 8-GPU node, ana's 8-GPU gangs G1 at 0 and G2 at 30 (10 s each): the
// gap predicts G3 at 60, held (8 GPUs) from 50. At 52 bob's S1 (2 GPUs,
// walltime 25, would end at 77 > 60) is held; S2 (walltime 5, ends 57 <= 60)
// starts. G3 comes at 60 (a hit) and starts at once; S1 starts at 70 when
// G3 ends. The next prediction (gap 30) is 90, held from 80; no gang comes.
// S3 (4 GPUs, 100 s) at 85 waits while the hold leaves < 4 GPUs for it:
// held = ceil(8·(20−over)/20) after 90 is 6 at 95 (S1 ends), 5 at 97.5 and 4
// at 100, when S3 starts (a miss). Held: 8·10 (50–60) + 8·10 (80–90) + the
// decay 2.5·(8+7+…+1) = 90 → 250 GPU-s. Without the forecast S1 takes the
// GPUs at 52 and G3 waits until 77.
func TestForecastHoldsAndDecays(t *testing.T) {
	jobs := []sim.JobSpec{
		user(MakeJob("G1").GPUs(8).Dur(10).Obj(), "ana"),
		user(MakeJob("G2").GPUs(8).Dur(10).At(30).Obj(), "ana"),
		user(MakeJob("S1").GPUs(2).Dur(25).Wall(25).At(52).Obj(), "bob"),
		user(MakeJob("S2").GPUs(2).Dur(5).Wall(5).At(52).Obj(), "bob"),
		user(MakeJob("G3").GPUs(8).Dur(10).At(60).Obj(), "ana"),
		user(MakeJob("S3").GPUs(4).Dur(100).Wall(100).At(85).Obj(), "bob"),
	}
	pol := forecastPolicy(t, "fifo", "{strict: false, forecast: {minGPUs: 8, horizon: 10s, decay: 20s}}")
	res := Run(t, Nodes(1, 8), pol, jobs...)
	want := map[string]float64{"G1": 0, "G2": 30, "S1": 70, "S2": 52, "G3": 60, "S3": 100}
	if d := cmp.Diff(want, Starts(res)); d != "" {
		t.Errorf("with forecast, starts (-want +got):\n%s\n%s", d, Schedule(res))
	}
	st, ok := pol.(ForecastReporter).ForecastStats(res.End)
	if !ok {
		t.Fatal("no forecast stats")
	}
	wantSt := ForecastStats{MinGPUs: 8, HeldGPUSeconds: 250, Hits: 1, Misses: 1, Predictions: 2}
	if d := cmp.Diff(wantSt, st); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}
	res = Run(t, Nodes(1, 8), forecastPolicy(t, "fifo", "{strict: false}"), jobs...)
	want = map[string]float64{"G1": 0, "G2": 30, "S1": 52, "S2": 52, "G3": 77, "S3": 87}
	if d := cmp.Diff(want, Starts(res)); d != "" {
		t.Errorf("without forecast, starts (-want +got):\n%s\n%s", d, Schedule(res))
	}
}

// A pending large gang holds its GPUs (forecast.queue): G (8 GPUs, at 1)
// waits for A (ends 10) and B (ends 20), so its hold is due at 20. C (4 GPUs,
// walltime 20, would end 32) is held at 12; D (walltime 3) ends before 20
// and starts. G starts at 20 (wait 19) instead of 32 (wait 31) behind C.
// Queue hold: 8 GPUs over [1, 20) = 152 GPU-s.
func TestForecastQueueHold(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("A").GPUs(4).Dur(10).Obj(),
		MakeJob("B").GPUs(4).Dur(20).Obj(),
		MakeJob("G").GPUs(8).Dur(10).At(1).Obj(),
		MakeJob("C").GPUs(4).Dur(20).Wall(20).At(12).Obj(),
		MakeJob("D").GPUs(4).Dur(3).Wall(3).At(12).Obj(),
	}
	pol := forecastPolicy(t, "fifo", "{strict: false, forecast: {minGPUs: 8, horizon: 1h}}")
	res := Run(t, Nodes(1, 8), pol, jobs...)
	want := map[string]float64{"A": 0, "B": 0, "G": 20, "C": 30, "D": 12}
	if d := cmp.Diff(want, Starts(res)); d != "" {
		t.Errorf("with forecast, starts (-want +got):\n%s\n%s", d, Schedule(res))
	}
	st, _ := pol.(ForecastReporter).ForecastStats(res.End)
	if st.QueueHeldGPUSeconds != 152 || st.Predictions != 0 {
		t.Errorf("stats = %+v, want 152 queue-held GPU-s and no prediction", st)
	}
	res = Run(t, Nodes(1, 8), forecastPolicy(t, "fifo", "{strict: false}"), jobs...)
	want = map[string]float64{"A": 0, "B": 0, "G": 32, "C": 12, "D": 20}
	if d := cmp.Diff(want, Starts(res)); d != "" {
		t.Errorf("without forecast, starts (-want +got):\n%s\n%s", d, Schedule(res))
	}
}

func TestForecastParamErrors(t *testing.T) {
	for params, want := range map[string]string{
		"{forecast: {horizon: 1h}}":                    "forecast.minGPUs: must be >= 1",
		"{forecast: {minGPUs: 8}}":                     "forecast.horizon: must be > 0",
		"{forecast: {minGPUs: 8, horizon: 1h, by: x}}": `forecast.by: want user, queue, class or all (got "x")`,
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(params), &n); err != nil {
			t.Fatal(err)
		}
		_, err := New("easy-backfill", n.Content[0])
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", params, err, want)
		}
	}
	var n yaml.Node
	_ = yaml.Unmarshal([]byte("{forecast: {minGPUs: 8, horizon: 1h}}"), &n)
	if _, err := New("conservative-backfill", n.Content[0]); err == nil || !strings.Contains(err.Error(), "not supported with conservative-backfill") {
		t.Errorf("conservative: err = %v", err)
	}
}
