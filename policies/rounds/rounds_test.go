package rounds_test

import (
	"testing"

	"github.com/gpusim/gpusim/policies/rounds"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// table gives each job (by index) a scripted count per round: round k (at
// k·60 s, k ≥ 1) uses counts[k-1], the last entry afterwards.
type table struct {
	counts [][]int32
	calls  []sim.Time
}

func (t *table) Allocate(v *sim.View, active []*sim.Job, want []int32) error {
	t.calls = append(t.calls, v.Now())
	k := min(len(t.calls), len(t.counts)) - 1
	for i, j := range active {
		want[i] = t.counts[k][j.Ref]
	}
	return nil
}

// TestRoundsHandWorked: two elastic jobs on 2 nodes × 4 GPUs, 60 s rounds,
// 30 s restarts (lease and rescale). Job a (preferred 2 replicas, 300 s of
// work at 2) and job b (preferred 4, 240 s at 4), both submitted at t=0.
//
//	round 60:  a→2, b→4 (starts: no restore on a first start)
//	round 120: a→4 (grow, +30 s), b→0 (lease end, keeps its work)
//	round 180: a→4 (unchanged: keeps its GPUs, no cost), b→4 (restart, +30 s)
//
// a: 60..120 at rate 1 → 60 s; 120..150 rescale; 150.. at rate 2 → 240 s of
// work left, 120 s: ends at 270.
// b: 60..120 at rate 1 → 60 s; 180..210 restore; 210.. at rate 1 → 180 s
// left: ends at 390.
func TestRoundsHandWorked(t *testing.T) {
	el := func(id string, pref int32, dur float64) sim.JobSpec {
		s := simtest.MakeJob(id).GPUs(1).Replicas(pref).Dur(dur).Obj()
		s.Elastic = &sim.ElasticSpec{Min: 1, Max: 8, Step: 1}
		return s
	}
	tb := &table{counts: [][]int32{{2, 4}, {4, 0}, {4, 4}}}
	d, err := rounds.New("table", 60*sim.Second, tb)
	if err != nil {
		t.Fatal(err)
	}
	delay := 30 * sim.Second
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(2, 4)), Jobs: []sim.JobSpec{el("a", 2, 300), el("b", 4, 240)},
		Policy: d, CheckpointRestore: delay, RescaleDelay: &delay})
	want := map[string]float64{"a": 270, "b": 390}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		if got := j.End.Seconds(); j.State != sim.StateCompleted || got != want[string(j.Spec.ID)] {
			t.Errorf("job %s: %s at %gs, want completed at %gs", j, j.State, got, want[string(j.Spec.ID)])
		}
	}
	if res.Elastic.Resizes[0] != 1 || res.Elastic.Resizes[1] != 0 || res.Jobs[1].Preempted != 1 {
		t.Errorf("resizes %v, b preempted %d; want [1 0] and 1", res.Elastic.Resizes, res.Jobs[1].Preempted)
	}
	// Rounds at 60, 120, 180, 240 (a still running), 300, 360 (b still running).
	if len(tb.calls) != 6 || tb.calls[0] != sim.Time(60*sim.Second) || tb.calls[5] != sim.Time(360*sim.Second) {
		t.Errorf("rounds at %v", tb.calls)
	}
	segs := res.Elastic.Segs[0]
	if len(segs) != 3 || segs[0].At != sim.Time(60*sim.Second) || segs[1].Replicas != 4 || segs[1].At != sim.Time(120*sim.Second) {
		t.Errorf("a's segments %v", segs)
	}
}

// TestRoundsKeepsUnchanged: a rigid job given its size every round starts
// once and is never preempted; a count that is not one of a job's sizes is
// an error.
func TestRoundsKeepsUnchanged(t *testing.T) {
	tb := &table{counts: [][]int32{{2}}}
	d, _ := rounds.New("table", 60*sim.Second, tb)
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(1, 4)), Jobs: []sim.JobSpec{simtest.MakeJob("r").GPUs(1).Replicas(2).Dur(500).Obj()}, Policy: d})
	if j := &res.Jobs[0]; j.End != sim.Time(560*sim.Second) || j.Preempted != 0 || res.Elastic != nil {
		t.Errorf("rigid job: end %s, preempted %d", j.End, j.Preempted)
	}
	if _, err := rounds.New("x", 0, tb); err == nil {
		t.Error("round 0 accepted")
	}
}

// TestRoundsRepackCycle: with Repack, changed jobs are planned together in
// ascending target count on a cluster where their GPUs are free. 2 nodes ×
// 4 GPUs; round 60: b→3 goes first (node 0, GPUs 0-2), a→4 on node 1. Round
// 120: a→3 first takes node 0's GPUs 0-2 (b's), b→4 then node 1 (a's): a
// cycle. a, the first waiting job, ends its lease; b resizes onto node 1;
// a restarts on GPUs 0-2.
func TestRoundsRepackCycle(t *testing.T) {
	el := func(id string) sim.JobSpec {
		s := simtest.MakeJob(id).GPUs(1).Replicas(1).Dur(10000).Obj()
		s.Elastic = &sim.ElasticSpec{Min: 1, Max: 4, Step: 1}
		return s
	}
	tb := &table{counts: [][]int32{{4, 3}, {3, 4}}}
	d, err := rounds.New("table", 60*sim.Second, tb)
	if err != nil {
		t.Fatal(err)
	}
	d.Repack = true
	delay, restore := 10*sim.Second, 20*sim.Second
	var at120 [2][]sim.GPUID
	check := &probe{Policy: d, at: sim.Time(180 * sim.Second), fn: func(v *sim.View) {
		for r := range 2 {
			at120[r] = append([]sim.GPUID(nil), v.Job(sim.JobRef(r)).GPUs...)
		}
	}}
	res := simtest.RunConfig(t, sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(2, 4)), Jobs: []sim.JobSpec{el("a"), el("b")},
		Policy: check, CheckpointRestore: restore, RescaleDelay: &delay})
	a, b := &res.Jobs[0], &res.Jobs[1]
	if a.Preempted != 1 || b.Preempted != 0 || res.Elastic.Resizes[0] != 0 || res.Elastic.Resizes[1] != 1 {
		t.Errorf("a preempted %d resized %d, b preempted %d resized %d; want 1 0 0 1", a.Preempted, res.Elastic.Resizes[0], b.Preempted, res.Elastic.Resizes[1])
	}
	if got := at120[0]; len(got) != 3 || got[0] != 0 || got[2] != 2 {
		t.Errorf("a after round 120 on GPUs %v, want 0-2", got)
	}
	if got := at120[1]; len(got) != 4 || got[0] != 4 || got[3] != 7 {
		t.Errorf("b after round 120 on GPUs %v, want 4-7", got)
	}
}

// probe runs fn at the scheduling point at time at, before the policy.
type probe struct {
	sim.Policy
	at sim.Time
	fn func(v *sim.View)
}

func (p *probe) Schedule(v *sim.View, pl *sim.Plan) error {
	if v.Now() == p.at {
		p.fn(v)
	}
	return p.Policy.Schedule(v, pl)
}
