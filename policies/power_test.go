package policies

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// curve50x300 is a GPU of 50 W idle, 300 W at full load (250 W dynamic), and
// a 100 W minimum power limit.
var curve50x300 = map[string]sim.GPUPower{"h100": {IdleW: 50, MaxW: 300, MinCapW: 100}}

func runPower(t *testing.T, nodes []sim.NodeSpec, pol sim.Policy, pc *sim.PowerConfig, jobs ...sim.JobSpec) *sim.Result {
	t.Helper()
	return RunConfig(t, sim.Config{Cluster: Cluster(t, nodes), Jobs: jobs, Policy: pol, Seed: 1, Power: pc})
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// Energy of one job by hand: one node of 2 GPUs (50 W idle, 300 W full); one
// 1-GPU job of 3600 s at t=0; carbon 100 g/kWh for the first half hour, 300
// for the second.
//
//	job:     (50 + 250) W x 3600 s = 1,080,000 J = 0.3 kWh;
//	         0.3 kW x 0.5 h x 100 + 0.3 kW x 0.5 h x 300 = 15 + 45 = 60 g
//	cluster: (2 x 50 + 250) W = 350 W peak; 350 x 3600 = 1,260,000 J;
//	         0.35 x 0.5 x 100 + 0.35 x 0.5 x 300 = 70 g
func TestPowerEnergyOfOneJobByHand(t *testing.T) {
	cs, err := sim.NewCarbonSeries(30*sim.Minute, []float64{100, 300})
	if err != nil {
		t.Fatal(err)
	}
	res := runPower(t, Nodes(1, 2), mustPolicy(t, "fifo"), &sim.PowerConfig{Models: curve50x300, Carbon: cs},
		MakeJob("A").GPUs(1).Dur(3600).Obj())
	p := res.Power
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"job energy J", p.JobEnergyJ[0], 1_080_000},
		{"job carbon g", p.JobCarbonG[0], 60},
		{"job peak W", p.JobPeakW[0], 300},
		{"run energy J", p.EnergyJ, 1_260_000},
		{"run carbon g", p.CarbonG, 70},
		{"run peak W", p.PeakW, 350},
		{"idle W", p.IdleW, 100},
	} {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	// A half-GPU job is attributed half the GPU: (25 + 125) W x 3600 s.
	res = runPower(t, Nodes(1, 2), mustPolicy(t, "fifo"), &sim.PowerConfig{Models: curve50x300},
		MakeJob("H").GPUs(1).Milli(500).Dur(3600).Obj())
	if got := res.Power.JobEnergyJ[0]; !near(got, 150*3600) {
		t.Errorf("half-GPU job energy = %v J, want %v", got, 150*3600)
	}
	if got := res.Power.EnergyJ; !near(got, (100+125)*3600) {
		t.Errorf("half-GPU run energy = %v J, want %v", got, (100+125)*3600)
	}
}

// A power cap blocking an admission: one node of 4 GPUs; cap 700 W = 4 x 50 W
// idle + 2 x 250 W. A (100 s) and B (200 s) start at 0; C finds free GPUs but
// its 250 W would break the cap: it waits for power-cap until A ends at 100 s.
func TestPowerCapAdmitBlocksAdmission(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("A").GPUs(1).Dur(100).Obj(),
		MakeJob("B").GPUs(1).Dur(200).Obj(),
		MakeJob("C").GPUs(1).Dur(50).Obj(),
	}
	for _, name := range []string{"fifo", "easy-backfill", "conservative-backfill", "sjf"} {
		t.Run(name, func(t *testing.T) {
			res := runPower(t, Nodes(1, 4), mustPolicy(t, name), &sim.PowerConfig{Models: curve50x300, CapW: 700, Mode: sim.PowerCapAdmit}, jobs...)
			want, held := map[string]float64{"A": 0, "B": 0, "C": 100}, "C"
			if name == "sjf" { // shortest first: C (50 s), A, then B waits until C ends
				want, held = map[string]float64{"A": 0, "B": 50, "C": 0}, "B"
			}
			if d := cmp.Diff(want, Starts(res)); d != "" {
				t.Fatalf("starts (-want +got):\n%s\n%s", d, Schedule(res))
			}
			if !strings.Contains(Schedule(res), "t=0 wait "+held+" power-cap") {
				t.Errorf("no power-cap wait for %s:\n%s", held, Schedule(res))
			}
			if res.Power.PeakW != 700 {
				t.Errorf("peak %v W, want 700 (the cap)", res.Power.PeakW)
			}
		})
	}
	// Without the cap, C starts at 0 and the peak is 4 x 50 + 3 x 250 = 950 W.
	res := runPower(t, Nodes(1, 4), mustPolicy(t, "fifo"), &sim.PowerConfig{Models: curve50x300}, jobs...)
	if got := Starts(res)["C"]; got != 0 {
		t.Errorf("uncapped C starts at %v", got)
	}
	if res.Power.PeakW != 950 {
		t.Errorf("uncapped peak %v W, want 950", res.Power.PeakW)
	}
}

// Throttle: with the same 700 W cap, C's minimum (a 100 W limit: 50 W above
// idle) does not fit in the 0 W of headroom, so it waits; with an 825 W cap it
// starts at 0 throttled to 125/250 = 0.5 of its dynamic power, so
// with speedExponent 1 it runs at speed 0.5: 50 s of work take 100 s and it
// draws 50 + 125 = 175 W (17,500 J).
func TestPowerCapThrottleSlowsJob(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("A").GPUs(1).Dur(100).Obj(),
		MakeJob("B").GPUs(1).Dur(200).Obj(),
		MakeJob("C").GPUs(1).Dur(50).Obj(),
	}
	pc := &sim.PowerConfig{Models: curve50x300, CapW: 700, Mode: sim.PowerCapThrottle, SpeedExponent: 1}
	res := runPower(t, Nodes(1, 4), mustPolicy(t, "fifo"), pc, jobs...)
	if got := Starts(res)["C"]; got != 100 {
		t.Errorf("cap 700 W: C starts at %v, want 100 (its minimum power does not fit before)", got)
	}
	pc.CapW = 825
	res = runPower(t, Nodes(1, 4), mustPolicy(t, "fifo"), pc, jobs...)
	c := &res.Jobs[2]
	if c.FirstStart != 0 || c.End != sim.Time(100*sim.Second) {
		t.Errorf("cap 825 W: C ran [%s, %s], want [0s, 100s]", c.FirstStart, c.End)
	}
	if !near(res.Power.JobEnergyJ[2], 175*100) || res.Power.JobPeakW[2] != 175 || res.Power.Throttled != 1 {
		t.Errorf("C energy %v J, peak %v W, throttled %d; want 17500, 175, 1", res.Power.JobEnergyJ[2], res.Power.JobPeakW[2], res.Power.Throttled)
	}
	if res.Power.PeakW != 825 {
		t.Errorf("peak %v W, want the 825 W cap", res.Power.PeakW)
	}
}

// A carbon-window delay with its deadline. Hourly intensity 300, 200, 100,
// 400, 50 g/kWh. D (1 h, walltime 1 h, deferrable) arrives at 0:
//
//	maxDelay 5h: candidates 0..4h; the 4h slot (50) wins
//	maxDelay 2h: the deadline: 2h (100) wins, the better 4h slot is past it
//	maxDelay 90m: candidates 0, 1h: 1h (200)
//
// S (class serving, not deferrable) starts at 0 whatever the intensity.
func TestCarbonAwareWindowAndDeadline(t *testing.T) {
	cs, err := sim.NewCarbonSeries(sim.Hour, []float64{300, 200, 100, 400, 50})
	if err != nil {
		t.Fatal(err)
	}
	d := MakeJob("D").GPUs(1).Dur(3600).Wall(3600).Obj()
	d.Class = sim.ClassTraining
	s := MakeJob("S").GPUs(1).Dur(600).Obj()
	s.Class = sim.ClassServing
	for delay, want := range map[string]float64{"5h": 4 * 3600, "2h": 2 * 3600, "90m": 3600} {
		t.Run(delay, func(t *testing.T) {
			pol, err := New("carbon-aware", yamlNode(t, "maxDelay: "+delay+"\ndeferrable: {classes: [training]}"))
			if err != nil {
				t.Fatal(err)
			}
			res := runPower(t, Nodes(1, 2), pol, &sim.PowerConfig{Models: curve50x300, Carbon: cs}, d, s)
			if got := Starts(res); got["D"] != want || got["S"] != 0 {
				t.Fatalf("starts %v, want D at %v and S at 0\n%s", got, want, Schedule(res))
			}
			if !strings.Contains(Schedule(res), "t=0 wait D carbon") {
				t.Errorf("no carbon wait:\n%s", Schedule(res))
			}
			// D's emissions: 0.3 kW x 1 h x the intensity of its hour.
			ci := cs.At(sim.Time(sim.Seconds(want)))
			if got := res.Power.JobCarbonG[0]; !near(got, 0.3*ci) {
				t.Errorf("D carbon %v g, want %v", got, 0.3*ci)
			}
		})
	}
}

func TestCarbonAwareParamErrors(t *testing.T) {
	_, err := New("carbon-aware", yamlNode(t, "deferrable: {classes: [nope]}"))
	if err == nil || !strings.Contains(err.Error(), "deferrable.classes[0]") {
		t.Errorf("err = %v", err)
	}
	_, err = New("carbon-aware", yamlNode(t, "maxDelay: -1h"))
	if err == nil || !strings.Contains(err.Error(), "line 1: maxDelay") {
		t.Errorf("err = %v", err)
	}
}

// greedy starts every pending job on the first free GPU, never asking
// View.PowerFits: the engine must refuse the start that breaks the cap.
type greedy struct{}

func (greedy) Name() string { return "greedy" }

func (greedy) Schedule(v *sim.View, p *sim.Plan) error {
	c := v.Cluster()
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j) // a start takes j out of the pending list
		for g := sim.GPUID(0); g < sim.GPUID(c.NumGPUs()); g++ {
			if c.GPUUsed(g) == 0 {
				if err := p.AddStart(j.Ref, []sim.NodeID{c.GPUNode(g)}, []sim.GPUID{g}); err != nil {
					return err
				}
				break
			}
		}
		j = next
	}
	return nil
}

func TestPowerCapEnforcedByEngine(t *testing.T) {
	e, err := sim.NewEngine(sim.Config{Cluster: Cluster(t, Nodes(1, 4)), Policy: greedy{}, Seed: 1,
		Power: &sim.PowerConfig{Models: curve50x300, CapW: 700},
		Jobs:  []sim.JobSpec{MakeJob("A").GPUs(1).Dur(100).Obj(), MakeJob("B").GPUs(1).Dur(100).Obj(), MakeJob("C").GPUs(1).Dur(100).Obj()}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(context.Background())
	var pe *sim.PlanError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "job C") || !strings.Contains(err.Error(), "power cap: the job needs 250.0 W at full power, 0.0 W of the 700.0 W cap is free") {
		t.Errorf("err = %v, want a PlanError for C's start", err)
	}
	// A GPU model without a curve is refused when the engine is built.
	_, err = sim.NewEngine(sim.Config{Cluster: Cluster(t, Nodes(1, 4)), Policy: greedy{}, Power: &sim.PowerConfig{},
		Jobs: []sim.JobSpec{MakeJob("A").GPUs(1).Dur(100).Obj()}})
	if err == nil || !strings.Contains(err.Error(), `no power curve for GPU model "h100"`) {
		t.Errorf("err = %v", err)
	}
}
