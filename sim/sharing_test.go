package sim_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// fakeInterf is a test Interference: factors per sorted tuple of workload names,
// listed in the tuple's order; unknown tuples fall back to an even split.
type fakeInterf struct {
	names   []string
	factors map[string][]float64 // "a+b" (sorted) -> factors in that order
}

func (f *fakeInterf) WorkloadID(name string) (int32, bool) {
	i := slices.Index(f.names, name)
	return int32(i), i >= 0
}

func (f *fakeInterf) Factors(_ string, _ sim.SharingMode, ws []int32, _ []float64, out []float64) bool {
	idx := make([]int, len(ws))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return strings.Compare(f.name(ws[a]), f.name(ws[b])) })
	var key []string
	for _, i := range idx {
		key = append(key, f.name(ws[i]))
	}
	fs, ok := f.factors[strings.Join(key, "+")]
	for k, i := range idx {
		if ok {
			out[i] = fs[k]
		} else {
			out[i] = 1 / float64(len(ws))
		}
	}
	return ok
}

func (f *fakeInterf) name(id int32) string {
	if id < 0 {
		return "?"
	}
	return f.names[id]
}

// pin starts each pending job on the GPU its ID maps to, as soon as the engine
// accepts it there (CanShare for sharers, free otherwise), and preempts by script.
type pin struct {
	gpu  map[sim.JobID]sim.GPUID
	acts []action
	hold map[sim.JobID]float64 // a suspended job is not resumed before this time (s)
}

func (p *pin) Name() string { return "pin" }

func (p *pin) Schedule(v *sim.View, pl *sim.Plan) error {
	now := v.Now().Seconds()
	for _, a := range p.acts {
		if a.at == now {
			for _, j := range v.Running() {
				if string(j.Spec.ID) == a.job {
					if err := pl.AddPreemptAfterGrace(j.Ref, a.mode, "script", sim.Seconds(a.grace)); err != nil {
						return err
					}
				}
			}
		} else if a.at > now {
			pl.Wake(sim.Time(sim.Seconds(a.at)))
		}
	}
	c := v.Cluster()
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		g := p.gpu[j.Spec.ID]
		if h := p.hold[j.Spec.ID]; h > now && j.Suspended() {
			pl.Wake(sim.Time(sim.Seconds(h)))
			j = next
			continue
		}
		if c.CanShare(&j.Spec, g) || c.GPUUsed(g) == 0 {
			if err := pl.AddStart(j.Ref, []sim.NodeID{c.GPUNode(g)}, []sim.GPUID{g}); err != nil {
				return err
			}
		}
		j = next
	}
	return nil
}

func shareNodes(mode sim.SharingMode, gpus int32) []sim.NodeSpec {
	return []sim.NodeSpec{{Name: "n0", GPUModel: "h100", GPUs: gpus, GPUMemMiB: 80000, CPUMilli: 64000, MemoryMiB: 1 << 20, Sharing: mode}}
}

func shareJob(id string, dur float64, wl string) sim.JobSpec {
	return sim.JobSpec{ID: sim.JobID(id), Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU,
		Duration: sim.Seconds(dur), Sharing: sim.AcceptAny, Workload: wl}
}

func runShare(t *testing.T, cfg sim.Config) *sim.Result {
	t.Helper()
	return simtest.RunConfig(t, cfg)
}

func jobByID(t *testing.T, res *sim.Result, id string) *sim.Job {
	t.Helper()
	for i := range res.Jobs {
		if string(res.Jobs[i].Spec.ID) == id {
			return &res.Jobs[i]
		}
	}
	t.Fatalf("no job %s", id)
	return nil
}

func us(t sim.Time) int64 { return int64(t) }

// A and B each need 100 s alone; time-sliced on one GPU at 0.6 and 0.7, B leaves
// at its 50 s walltime: A has done 50 x 0.6 = 30 s of work and does the other 70 s
// alone, ending at 120 s. B has done 50 x 0.7 = 35 s.
func TestTimeSliceLeaveHandWorked(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	in := &fakeInterf{names: []string{"a", "b"}, factors: map[string][]float64{"a+b": {0.6, 0.7}}}
	a := shareJob("A", 100, "a")
	b := shareJob("B", 100, "b")
	b.Walltime = 50 * sim.Second
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{a, b}, EnforceWalltime: true,
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0}}, Sharing: &sim.SharingConfig{Interference: in}})
	ja, jb := jobByID(t, res, "A"), jobByID(t, res, "B")
	if ja.State != sim.StateCompleted || us(ja.End) != 120_000_000 {
		t.Errorf("A: %s at %d µs, want completed at 120 s", ja.State, us(ja.End))
	}
	if jb.State != sim.StateTimeout || us(jb.End) != 50_000_000 || jb.Done != 35*sim.Second {
		t.Errorf("B: %s at %d µs with %d µs done, want timeout at 50 s with 35 s", jb.State, us(jb.End), jb.Done)
	}
	if got := ja.MinSpeed(); got != 0.6 {
		t.Errorf("A min speed %v, want 0.6", got)
	}
	// mean speed: (50 s x 0.6 + 70 s x 1) / 120 s
	if got, want := ja.MeanSpeed(), (50*0.6+70)/120; abs(got-want) > 1e-12 {
		t.Errorf("A mean speed %v, want %v", got, want)
	}
	if ja.SharedTime() != 50*sim.Second || jb.SharedTime() != 50*sim.Second {
		t.Errorf("shared time A %s B %s, want 50s", ja.SharedTime(), jb.SharedTime())
	}
	st := res.Sharing
	if st == nil || st.Measured != 1 || st.Fallback != 0 {
		t.Fatalf("stats %+v, want 1 measured co-location", st)
	}
	// useful: A 30+70, B 35 GPU-seconds of reference work; loss: max(0, 1-1.3)=0
	if abs(st.UsefulGPUSeconds-135) > 1e-9 || st.InterferenceLossGPUSeconds != 0 || abs(st.SharedGPUSeconds-50) > 1e-9 {
		t.Errorf("stats %+v", st)
	}
	if abs(st.GPUSecondsByMode[sim.ShareTimeSlice]-120) > 1e-9 {
		t.Errorf("timeslice GPU time %v, want 120", st.GPUSecondsByMode[sim.ShareTimeSlice])
	}
}

// Three-way time slicing with a triple factor, then a pair factor, then alone:
// A 100 s, B 60 s, C 20 s of work. Triple: A 0.5, B 0.3, C 0.2, so C ends at
// 100 s (A 50, B 30 done). Pair A 0.6, B 0.7: B needs 30 s of work: wallFor(30e6,
// 0.7) = 42,857,143 µs, so B ends at 142,857,143 µs; A gains floor(42,857,143 x
// 0.6) = 25,714,285 µs and does its last 24,285,715 µs alone: 167,142,858 µs.
func TestTimeSliceThreeWayHandWorked(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	in := &fakeInterf{names: []string{"a", "b", "c"}, factors: map[string][]float64{
		"a+b+c": {0.5, 0.3, 0.2}, "a+b": {0.6, 0.7}}}
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{shareJob("C", 20, "c"), shareJob("A", 100, "a"), shareJob("B", 60, "b")},
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0, "C": 0}}, Sharing: &sim.SharingConfig{Interference: in}})
	for id, want := range map[string]int64{"C": 100_000_000, "B": 142_857_143, "A": 167_142_858} {
		if j := jobByID(t, res, id); j.State != sim.StateCompleted || us(j.End) != want {
			t.Errorf("%s: %s at %d µs, want %d", id, j.State, us(j.End), want)
		}
	}
	// started in (Submit, ID) order: A alone, A+B measured, A+B+C measured; C
	// leaves: A+B measured; B leaves: A alone (no lookup)
	if res.Sharing.Measured != 3 || res.Sharing.Fallback != 0 {
		t.Errorf("measured %d fallback %d, want 3, 0", res.Sharing.Measured, res.Sharing.Fallback)
	}
	// loss: 100 s at 1-1.0=0 (triple sums to 1), pair sums to 1.3 -> 0
	if res.Sharing.InterferenceLossGPUSeconds != 0 {
		t.Errorf("loss %v", res.Sharing.InterferenceLossGPUSeconds)
	}
}

// MPS without a matrix: an even split capped by the active-thread percentage
// (gpu_milli / 10). A (100%) and B (30%) of 100 s and 30 s of work: A runs at 0.5,
// B at min(0.5, 0.3) = 0.3, so B ends at 100 s; A has 50 s left alone: 150 s.
// Interference loss: 100 s x (1 - 0.8) = 20 GPU-seconds.
func TestMPSHandWorked(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareMPS, 1))
	a := shareJob("A", 100, "")
	b := shareJob("B", 30, "")
	b.GPUMilli = 300
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{a, b},
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0}}, Sharing: &sim.SharingConfig{}})
	if j := jobByID(t, res, "B"); us(j.End) != 100_000_000 {
		t.Errorf("B ends at %d µs, want 100 s", us(j.End))
	}
	if j := jobByID(t, res, "A"); us(j.End) != 150_000_000 {
		t.Errorf("A ends at %d µs, want 150 s", us(j.End))
	}
	if st := res.Sharing; abs(st.InterferenceLossGPUSeconds-20) > 1e-9 || st.Fallback != 1 {
		t.Errorf("stats %+v, want loss 20, 1 fallback", st)
	}
}

// Periodic checkpoints compose with speed changes: A (100 s, checkpoint every 20 s
// of work, 2 s to save) runs alone for 10 s, then shares with B at 0.5 each (even
// split, no matrix). A reaches 20 s of work at t = 30, saves until 32, does 9 s
// more by t = 50 when B (20 s of work from t = 10) ends, then alone: 40 at 61
// (save to 63), 60 at 83 (85), 80 at 105 (107), 100 at 127. Overhead 4 x 2 s.
func TestCheckpointWithSpeedChanges(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	b := shareJob("B", 20, "")
	b.Submit = sim.Time(10 * sim.Second)
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{shareJob("A", 100, ""), b},
		CheckpointInterval: 20 * sim.Second, CheckpointSave: 2 * sim.Second,
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0}}, Sharing: &sim.SharingConfig{}})
	ja, jb := jobByID(t, res, "A"), jobByID(t, res, "B")
	if us(jb.End) != 50_000_000 || us(ja.End) != 127_000_000 {
		t.Errorf("B ends %d, A ends %d µs; want 50 s, 127 s", us(jb.End), us(ja.End))
	}
	if ja.Overhead != 8*sim.Second || ja.Wasted != 8*sim.Second {
		t.Errorf("A overhead %s wasted %s, want 8s", ja.Overhead, ja.Wasted)
	}
}

// A requeue preemption of a sharer keeps the work of its last checkpoint and
// speeds its co-runner up. A and B (100 s each) share at 0.5; checkpoint every
// 10 s of work, instant. B is preempted at 30 s (15 s done, 10 kept) and requeued;
// it restarts at once on the same GPU (pin), so nothing changes for A's speed
// except the instant: A ends as if B never left: both at 0.5 until one finishes.
// A: 100 s of work at 0.5 -> ends at 200 s (B restarted at 30 with 90 s left,
// needs 180 s at 0.5, but A leaves at 200 when B has 95 done: 5 s alone -> 205 s).
func TestPreemptSharerRequeue(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{shareJob("A", 100, ""), shareJob("B", 100, "")},
		CheckpointInterval: 10 * sim.Second,
		Policy:             &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0}, acts: []action{{at: 30, job: "B", mode: sim.PreemptRequeue}}},
		Sharing:            &sim.SharingConfig{}})
	ja, jb := jobByID(t, res, "A"), jobByID(t, res, "B")
	if us(ja.End) != 200_000_000 || us(jb.End) != 205_000_000 {
		t.Errorf("A ends %d, B ends %d µs; want 200 s, 205 s", us(ja.End), us(jb.End))
	}
	// B lost 5 s of work = 10 s of wall at 0.5
	if jb.Wasted != 10*sim.Second || jb.Preempted != 1 {
		t.Errorf("B wasted %s preempted %d, want 10s, 1", jb.Wasted, jb.Preempted)
	}
}

// Time-sliced jobs' memory must fit together: a start that overflows the GPU's
// memory is a PlanError.
func TestTimeSliceMemoryPlanError(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	a, b := shareJob("A", 10, ""), shareJob("B", 10, "")
	a.GPUMemMiB, b.GPUMemMiB = 50000, 40000
	e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{a, b}, Policy: &force{}, Sharing: &sim.SharingConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Run(context.Background())
	var pe *sim.PlanError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "50000 of 80000 MiB") {
		t.Fatalf("err = %v, want a PlanError about GPU memory", err)
	}
}

// force starts every pending job on GPU 0 without checking.
type force struct{}

func (force) Name() string { return "force" }
func (force) Schedule(v *sim.View, p *sim.Plan) error {
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		err := p.AddStart(j.Ref, []sim.NodeID{0}, []sim.GPUID{0})
		j = next
		if err != nil {
			return err
		}
	}
	return nil
}

// An exclusive job on a time-slicing GPU holds it alone: a sharer waits.
func TestExclusiveOnSharedGPU(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	x := shareJob("X", 10, "")
	x.Sharing = sim.AcceptExclusive
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{x, shareJob("Y", 10, "")},
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"X": 0, "Y": 0}}, Sharing: &sim.SharingConfig{}})
	if jy := jobByID(t, res, "Y"); us(jy.FirstStart) != 10_000_000 || us(jy.End) != 20_000_000 {
		t.Errorf("Y ran %d..%d µs, want 10 s..20 s", us(jy.FirstStart), us(jy.End))
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// A fractional (openb-style, gpu_milli < 1000) job with the default sharing
// accepts any mode: on an MPS GPU two such pods share (even split 0.5 each), each
// capped by its active-thread percentage: A (500 milli) 0.5, B (250) 0.25. B's
// 10 s of work end at 40 s, when A has 20 s done; alone, A is still capped at 0.5:
// 30 s of work in 60 s, ending at 100 s.
func TestFractionalJobSharesMPS(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareMPS, 1))
	a, b := shareJob("A", 50, ""), shareJob("B", 10, "")
	a.Sharing, b.Sharing = sim.AcceptExclusive, sim.AcceptExclusive
	a.GPUMilli, b.GPUMilli = 500, 250
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{a, b},
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0}}, Sharing: &sim.SharingConfig{}})
	if ja, jb := jobByID(t, res, "A"), jobByID(t, res, "B"); us(jb.End) != 40_000_000 || us(ja.End) != 100_000_000 || us(jb.FirstStart) != 0 {
		t.Errorf("A ends %d, B runs %d..%d µs; want 100 s, 0..40 s", us(ja.End), us(jb.FirstStart), us(jb.End))
	}
}

// A suspended sharer keeps its work and leaves its co-runner alone on the GPU:
// A and B (100 s each) share at 0.5; B is suspended at 20 s (10 s done) and held
// until 60 s. A: 10 s done at 20 s, then 40 s alone (50 done at 60 s), then 0.5
// again with B: both have 50 s left -> A ends at 160 s, B (10 + 50 done at
// 160 s) has 40 s left alone -> 200 s. Suspension wastes nothing.
func TestSuspendSharer(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{shareJob("A", 100, ""), shareJob("B", 100, "")},
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0}, acts: []action{{at: 20, job: "B", mode: sim.PreemptSuspend}},
			hold: map[sim.JobID]float64{"B": 60}},
		Sharing: &sim.SharingConfig{}})
	ja, jb := jobByID(t, res, "A"), jobByID(t, res, "B")
	if us(ja.End) != 160_000_000 || us(jb.End) != 200_000_000 {
		t.Errorf("A ends %d, B ends %d µs; want 160 s, 200 s", us(ja.End), us(jb.End))
	}
	if jb.Wasted != 0 || jb.Preempted != 1 || jb.SharedTime() != 120*sim.Second {
		t.Errorf("B wasted %s, preempted %d, shared %s; want 0, 1, 120s", jb.Wasted, jb.Preempted, jb.SharedTime())
	}
}

// At a horizon, jobs still running have their speed metrics up to it: A and B
// share at 0.5 until the 30 s horizon.
func TestSharingMetricsAtHorizon(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{shareJob("A", 100, ""), shareJob("B", 100, "")}, Horizon: sim.Time(30 * sim.Second),
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0}}, Sharing: &sim.SharingConfig{}})
	for _, id := range []string{"A", "B"} {
		if j := jobByID(t, res, id); j.State != sim.StateRunning || j.MeanSpeed() != 0.5 || j.SharedTime() != 30*sim.Second {
			t.Errorf("%s: %s, mean speed %v, shared %s; want running, 0.5, 30s", id, j.State, j.MeanSpeed(), j.SharedTime())
		}
	}
	if st := res.Sharing; abs(st.UsefulGPUSeconds-30) > 1e-9 || abs(st.SharedGPUSeconds-30) > 1e-9 {
		t.Errorf("stats %+v", st)
	}
}

type halfSpeed struct{}

func (halfSpeed) Speed(*sim.Cluster, *sim.Job) float64 { return 0.5 }

// The placement speed model multiplies the sharing factor: A and B at 0.6 and
// 0.7 on a placement of speed 0.5 run at 0.3 and 0.35; B (35 s of work) ends at
// 100 s with A at 30 s done; A's 70 s left at 0.5 take 140 s: 240 s.
func TestSharingComposesWithSpeedModel(t *testing.T) {
	c, _ := sim.NewCluster(shareNodes(sim.ShareTimeSlice, 1))
	in := &fakeInterf{names: []string{"a", "b"}, factors: map[string][]float64{"a+b": {0.6, 0.7}}}
	res := runShare(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{shareJob("A", 100, "a"), shareJob("B", 35, "b")}, Speed: halfSpeed{},
		Policy: &pin{gpu: map[sim.JobID]sim.GPUID{"A": 0, "B": 0}}, Sharing: &sim.SharingConfig{Interference: in}})
	ja, jb := jobByID(t, res, "A"), jobByID(t, res, "B")
	if us(jb.End) != 100_000_000 || us(ja.End) != 240_000_000 {
		t.Errorf("A ends %d, B %d µs; want 240 s, 100 s", us(ja.End), us(jb.End))
	}
	if ja.MinSpeed() != 0.3 || jb.MinSpeed() != 0.35 {
		t.Errorf("min speeds %v, %v; want 0.3, 0.35", ja.MinSpeed(), jb.MinSpeed())
	}
}
