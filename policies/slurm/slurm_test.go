package slurm

import (
	"errors"
	"math"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// newSlurm builds the policy from YAML params through the registry (strict decode).
func newSlurm(t *testing.T, params string) *Slurm {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(params), &n); err != nil {
		t.Fatal(err)
	}
	var node *yaml.Node
	if len(n.Content) > 0 {
		node = n.Content[0]
	}
	p, err := policies.New("slurm", node)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Slurm)
}

func user(s sim.JobSpec, u string) sim.JobSpec { s.User = u; return s }

func wantStarts(t *testing.T, res *sim.Result, want map[string]float64) {
	t.Helper()
	got := Starts(res)
	for _, id := range SortedIDs(want) {
		if got[id] != want[id] {
			t.Errorf("%s started at %v, want %v", id, got[id], want[id])
		}
	}
	if t.Failed() {
		t.Logf("schedule:\n%s", Schedule(res))
	}
}

func job(res *sim.Result, id string) *sim.Job {
	for i := range res.Jobs {
		if string(res.Jobs[i].Spec.ID) == id {
			return &res.Jobs[i]
		}
	}
	return nil
}

// reservations returns the reserved start times (s) logged for job id before
// time before (s).
func reservationsBefore(res *sim.Result, id string, before float64) []float64 {
	var out []float64
	for _, e := range res.Log {
		if e.Kind == sim.EvReserve && string(res.Jobs[e.Job].Spec.ID) == id && e.Time.Seconds() < before {
			out = append(out, sim.Time(e.Value).Seconds())
		}
	}
	return out
}

func reservations(res *sim.Result, id string) []float64 {
	return reservationsBefore(res, id, math.Inf(1))
}

// All priority weights default to 0: every job has priority 1 and the queue is
// FIFO by job id (the trace priority is not a Slurm factor). Three 8-GPU jobs on
// one 8-GPU node run back to back in id order although j3 has the highest
// trace priority.
func TestDefaultWeightsFIFO(t *testing.T) {
	s := newSlurm(t, ``)
	res := Run(t, Nodes(1, 8), s,
		MakeJob("j1").GPUs(8).Dur(100).Wall(100).Obj(),
		MakeJob("j2").GPUs(8).Dur(100).Wall(100).Prio(5).Obj(),
		MakeJob("j3").GPUs(8).Dur(100).Wall(100).Prio(9).Obj())
	wantStarts(t, res, map[string]float64{"j1": 0, "j2": 100, "j3": 200})
}

const twoParts = `
partitions:
  - {name: a, nodes: n0, default: true}
  - {name: b, nodes: "n[1]"}
schedulerParameters: {bf_resolution: 10}
`

// Main scheduler blocking: in partition a (node n0) r1 holds 4 GPUs until 1000;
// the 8-GPU head "big" cannot start, so the main scheduler blocks partition a and
// "small" (2 GPUs, submitted at 10) waits although 4 GPUs are free. Only the
// backfill cycle at t=30 starts it (its 50 s limit ends before big's reservation
// at 1000). "other" in partition b starts at once (t=10).
func TestMainSchedulerBlocksPartition(t *testing.T) {
	s := newSlurm(t, twoParts)
	res := Run(t, Nodes(2, 8), s,
		MakeJob("a.r1").GPUs(4).Dur(1000).Wall(1000).Queue("a").Obj(),
		MakeJob("b.big").GPUs(8).Dur(100).Wall(100).Queue("a").Obj(),
		MakeJob("c.small").GPUs(2).Dur(50).Wall(50).At(10).Queue("a").Obj(),
		MakeJob("d.other").GPUs(2).Dur(50).Wall(50).At(10).Queue("b").Obj())
	wantStarts(t, res, map[string]float64{"a.r1": 0, "b.big": 1000, "c.small": 30, "d.other": 10})
	if got := reservations(res, "b.big"); len(got) == 0 || got[0] != 1000 {
		t.Errorf("big's reservations %v, want [1000 ...]", got)
	}
	if !strings.Contains(Schedule(res), "t=10 wait c.small blocked") {
		t.Errorf("small should wait as blocked at t=10:\n%s", Schedule(res))
	}
}

// Backfill plans with time limits, not runtimes: r1 (4 GPUs, limit 100) runs,
// the 8-GPU head reserves the node at 100. "short" needs only 10 s but its limit
// is 200, so [30, 230) overlaps the reservation and it is not backfilled: it gets
// a reservation after the head (200). "short2" (limit 20) is backfilled at 30.
func TestBackfillUsesTimeLimits(t *testing.T) {
	s := newSlurm(t, `schedulerParameters: {bf_resolution: 10}`)
	res := Run(t, Nodes(1, 8), s,
		MakeJob("a.r1").GPUs(4).Dur(100).Wall(100).Obj(),
		MakeJob("b.head").GPUs(8).Dur(100).Wall(100).Obj(),
		MakeJob("c.short").GPUs(4).Dur(10).Wall(200).At(1).Obj(),
		MakeJob("d.short2").GPUs(4).Dur(10).Wall(20).At(1).Obj())
	wantStarts(t, res, map[string]float64{"a.r1": 0, "b.head": 100, "c.short": 200, "d.short2": 30})
	if got := reservations(res, "c.short"); len(got) == 0 || got[0] != 200 {
		t.Errorf("short's reservations %v, want [200]", got)
	}
	// it fits now but would delay the head: wait reason "reservation"
	if !strings.Contains(Schedule(res), "t=30 wait c.short reservation") {
		t.Errorf("short should wait for the head's reservation at 30:\n%s", Schedule(res))
	}
}

// bf_resolution quantises reservations, not expected ends (SchedMD/slurm
// backfill.c _set_slot_time; cons_tres _future_run_test gives the exact end).
// r1 (4 GPUs) ends at 100 by its limit, so the 8-GPU head is expected to start
// at exactly 100, and its slot is [60, 240): the start rounded down and
// 100+100 rounded up to the default 60 s. "c.bf" (4 GPUs, limit 50) arrives at
// 1; at the backfill cycle at 30 its run [30, 80] overlaps the slot from 60, so
// it waits (reason "reservation") and reserves after the head, at 240; it starts
// at 200 when the head really ends. Rounding r1's end up to 120 instead would
// have let it backfill at 30. With bf_resolution 10 the slot is [100, 200) and
// c.bf is backfilled at 30.
func TestBackfillResolution(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("a.r1").GPUs(4).Dur(100).Wall(100).Obj(),
		MakeJob("b.head").GPUs(8).Dur(100).Wall(100).Obj(),
		MakeJob("c.bf").GPUs(4).Dur(50).Wall(50).At(1).Obj(),
	}
	res := Run(t, Nodes(1, 8), newSlurm(t, ``), jobs...)
	if got := reservations(res, "b.head"); len(got) != 1 || got[0] != 100 {
		t.Errorf("head's reservations %v, want [100]", got)
	}
	wantStarts(t, res, map[string]float64{"a.r1": 0, "b.head": 100, "c.bf": 200})
	if got := reservationsBefore(res, "c.bf", 31); len(got) != 1 || got[0] != 240 {
		t.Errorf("c.bf's reservations by 30: %v, want [240]", got)
	}
	if !strings.Contains(Schedule(res), "t=30 wait c.bf reservation") {
		t.Errorf("c.bf should wait for the head's slot at 30:\n%s", Schedule(res))
	}
	fine := Run(t, Nodes(1, 8), newSlurm(t, `schedulerParameters: {bf_resolution: 10}`), jobs...)
	wantStarts(t, fine, map[string]float64{"b.head": 100, "c.bf": 30})
}

// A backfill job whose run would end exactly when a reservation starts is kept
// off the reserved node: _attempt_backfill removes a node when a node_space
// record without it has begin_time <= the job's end time. r1 ends at 100, the
// head reserves [100, 200) (bf_resolution 10); at 30, "c.edge" (limit 70) would
// end at exactly 100 and waits until the head ends; "d.in" (limit 60) ends at 90
// and is backfilled at 30.
func TestBackfillReservationBoundary(t *testing.T) {
	res := Run(t, Nodes(1, 8), newSlurm(t, `schedulerParameters: {bf_resolution: 10}`),
		MakeJob("a.r1").GPUs(4).Dur(100).Wall(100).Obj(),
		MakeJob("b.head").GPUs(8).Dur(100).Wall(100).Obj(),
		MakeJob("c.edge").GPUs(2).Dur(70).Wall(70).At(1).Obj(),
		MakeJob("d.in").GPUs(2).Dur(60).Wall(60).At(1).Obj())
	wantStarts(t, res, map[string]float64{"b.head": 100, "c.edge": 200, "d.in": 30})
}

// bf_window: two 8-GPU nodes busy until 7200 (n1 half busy); the 16-GPU head's
// earliest start is 7200. With a 60-minute window it gets no reservation, so "x"
// (4 GPUs, limit 10000) is backfilled on n1 at 30 and delays the head to 10030.
// With a 180-minute window the head reserves both nodes at 7200 and x waits.
func TestBackfillWindow(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("a.r0").GPUs(8).Dur(7200).Wall(7200).Obj(),
		MakeJob("b.r1").GPUs(4).Dur(7200).Wall(7200).Obj(),
		MakeJob("c.head").GPUs(8).Replicas(2).Dur(100).Wall(100).Obj(),
		MakeJob("d.x").GPUs(4).Dur(10000).Wall(10000).At(1).Obj(),
	}
	t.Run("60min", func(t *testing.T) {
		res := Run(t, Nodes(2, 8), newSlurm(t, `schedulerParameters: {bf_window: 60, bf_resolution: 10}`), jobs...)
		// it is reserved only once 10030 comes within the window (at 6430)
		if got := reservationsBefore(res, "c.head", 10030-3600); len(got) != 0 {
			t.Errorf("head beyond the window got reservations %v", got)
		}
		wantStarts(t, res, map[string]float64{"d.x": 30, "c.head": 10030})
	})
	t.Run("180min", func(t *testing.T) {
		res := Run(t, Nodes(2, 8), newSlurm(t, `schedulerParameters: {bf_window: 3h, bf_resolution: 10}`), jobs...)
		if got := reservations(res, "c.head"); len(got) == 0 || got[0] != 7200 {
			t.Errorf("head's reservations %v, want [7200 ...]", got)
		}
		wantStarts(t, res, map[string]float64{"c.head": 7200, "d.x": 7300})
	})
}

// bf_job_part_count_reserve=1 is EASY: only the first job of the partition
// reserves. n0 is busy until 100 (r0), n1 half busy until 150 (r1). The head
// reserves n0 at 100; "second" (8 GPUs) would reserve n1 at 150. "late" (4 GPUs,
// limit 200) fits now on n1's free half: conservatively (the default) it would
// delay second's reservation and waits (second 150, late 200); with EASY second
// has no reservation, late is backfilled at 30 and second waits until 200.
func TestPartCountReserve(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("a.r0").GPUs(8).Dur(100).Wall(100).Obj(),
		MakeJob("b.r1").GPUs(4).Dur(150).Wall(150).Obj(),
		MakeJob("c.head").GPUs(8).Dur(100).Wall(100).Obj(),
		MakeJob("d.second").GPUs(8).Dur(100).Wall(100).Obj(),
		MakeJob("e.late").GPUs(4).Dur(200).Wall(200).At(1).Obj(),
	}
	cons := Run(t, Nodes(2, 8), newSlurm(t, `schedulerParameters: {bf_resolution: 10}`), jobs...)
	wantStarts(t, cons, map[string]float64{"c.head": 100, "d.second": 150, "e.late": 200})
	easy := Run(t, Nodes(2, 8), newSlurm(t, `schedulerParameters: {bf_resolution: 10, bf_job_part_count_reserve: 1}`), jobs...)
	wantStarts(t, easy, map[string]float64{"c.head": 100, "d.second": 200, "e.late": 30})
	if got := reservationsBefore(easy, "d.second", 100); len(got) != 0 {
		t.Errorf("EASY: second got reservations %v while the head was pending", got)
	}
}

// Fair Tree (policies.md 3.3): account A has used 100 of 110 GPU-s with equal
// shares, so it is over-served (LF 0.55) and B under-served (LF 5.5): every user
// of B ranks above every user of A, although a2's own LF (5) beats b1's (0.5).
// Factors are rank / #users: b2 (unused, LF inf) 1, b1 0.75, a2 0.5, a1 0.25.
func TestFairTreeRanks(t *testing.T) {
	tr, err := newTree([]AccountConf{
		{Name: "A", Users: []UserConf{{Name: "a1"}, {Name: "a2"}}},
		{Name: "B", Users: []UserConf{{Name: "b1"}, {Name: "b2"}}},
	}, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	for u, x := range map[string]float64{"a1": 90, "a2": 10, "b1": 10} {
		tr.charge(tr.users[u][0], x)
	}
	tr.recompute()
	want := map[string]float64{"b2": 1, "b1": 0.75, "a2": 0.5, "a1": 0.25}
	for u, f := range want {
		if got := tr.a[tr.users[u][0]].fs; got != f {
			t.Errorf("%s: fair share %v, want %v", u, got, f)
		}
	}
}

// Fair Tree ties, as SchedMD/slurm fair_tree.c _calc_tree_fs runs them:
// accounts X and Y have equal usage and shares (LF 1 each). Slurm's
// _count_tied_accounts breaks at the first following account, so their
// children are not merged: X is walked first (configuration order), x2 (LF 2.5)
// rank 4, x1 (LF 0.625) rank 3; Y is tied with X, so its first user y1 (LF 1)
// keeps rank 3, and y2 (LF 1) is tied with y1 and keeps it too. Factors 4/4,
// 3/4, 3/4, 3/4 (merging would have given x1 1/4).
func TestFairTreeTies(t *testing.T) {
	tr, err := newTree([]AccountConf{
		{Name: "X", Users: []UserConf{{Name: "x1"}, {Name: "x2"}}},
		{Name: "Y", Users: []UserConf{{Name: "y1"}, {Name: "y2"}}},
	}, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	for u, x := range map[string]float64{"x1": 40, "x2": 10, "y1": 25, "y2": 25} {
		tr.charge(tr.users[u][0], x)
	}
	tr.recompute()
	want := map[string]float64{"x2": 1, "x1": 0.75, "y1": 0.75, "y2": 0.75}
	for u, f := range want {
		if got := tr.a[tr.users[u][0]].fs; got != f {
			t.Errorf("%s: fair share %v, want %v", u, got, f)
		}
	}
}

// Classic fair share F = 2^(-UE/S): shares A 1, B 1, C 2 (S = .25, .25, .5). A used
// exactly its share (U = .25): F = 0.5; C unused: F = 1; B used .75: F = 2^-3.
func TestClassicFairShare(t *testing.T) {
	tr, err := newTree([]AccountConf{
		{Name: "A", Users: []UserConf{{Name: "a"}}},
		{Name: "B", Users: []UserConf{{Name: "b"}}},
		{Name: "C", Shares: ptr(2), Users: []UserConf{{Name: "c"}}},
	}, false, 1)
	if err != nil {
		t.Fatal(err)
	}
	tr.charge(tr.users["a"][0], 25)
	tr.charge(tr.users["b"][0], 75)
	tr.recompute()
	for u, f := range map[string]float64{"a": 0.5, "b": 0.125, "c": 1} {
		if got := tr.a[tr.users[u][0]].fs; math.Abs(got-f) > 1e-12 {
			t.Errorf("%s: fair share %v, want %v", u, got, f)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// probe wraps the policy to record state after each scheduling point.
type probe struct {
	*Slurm
	rec func(v *sim.View)
}

func (p *probe) Schedule(v *sim.View, pl *sim.Plan) error {
	err := p.Slurm.Schedule(v, pl)
	p.rec(v)
	return err
}

// Usage decays with the half-life and only at PriorityCalcPeriod steps: alice's
// 2-GPU job runs 0..300 (600 GPU-s, recorded at the step at 300). Between steps
// (t=301, 599) nothing changes; at 600 it has decayed by 2^(-300/3600); at 3900,
// one half-life after it was recorded, it is exactly half.
func TestUsageDecay(t *testing.T) {
	s := newSlurm(t, `
priority: {weights: {fairshare: 1000}, calcPeriod: 5m, decayHalfLife: 1h}
accounts: [{name: research, users: [{name: alice}]}]
`)
	got := map[float64]float64{}
	pr := &probe{Slurm: s}
	pr.rec = func(v *sim.View) {
		got[v.Now().Seconds()] = s.tree.a[s.tree.users["alice"][0]].usage
	}
	cpu := func(id string, at float64) sim.JobSpec { return user(MakeJob(id).GPUs(0).At(at).Obj(), "probe") }
	Run(t, Nodes(1, 8), pr,
		user(MakeJob("a").GPUs(2).Dur(300).Wall(300).Obj(), "alice"),
		cpu("p1", 301), cpu("p2", 599), cpu("p3", 600), cpu("p4", 3900))
	want := map[float64]float64{301: 600, 599: 600, 600: 600 * math.Exp2(-300.0/3600), 3900: 300}
	for at, w := range want {
		if math.Abs(got[at]-w) > 1e-9*w {
			t.Errorf("usage at %v = %v, want %v", at, got[at], w)
		}
	}
}

// With fair share weighted, the user with less recorded usage goes first: bob's
// job is submitted after alice's second one but starts before it.
func TestFairSharePriorityOrder(t *testing.T) {
	s := newSlurm(t, `
priority: {weights: {fairshare: 1000}, calcPeriod: 1m}
accounts: [{name: lab, users: [{name: alice}, {name: bob}]}]
`)
	res := Run(t, Nodes(1, 8), s,
		user(MakeJob("a1").GPUs(8).Dur(600).Wall(600).Obj(), "alice"),
		user(MakeJob("a2").GPUs(8).Dur(100).Wall(100).At(10).Obj(), "alice"),
		user(MakeJob("b1").GPUs(8).Dur(100).Wall(100).At(20).Obj(), "bob"))
	wantStarts(t, res, map[string]float64{"a1": 0, "b1": 600, "a2": 700})
}

func preemptNodes() []sim.NodeSpec {
	n := Nodes(2, 8)
	for i := range n {
		n[i].MemoryMiB = 1000
	}
	return n
}

// partition_prio preemption on two 8-GPU nodes: F fills n0, L runs on n1 from 0
// (limit 2000, 1000 s of work). H in the higher-tier partition arrives at 50
// and preempts L (F runs in the high tier, so L is the only candidate).
// REQUEUE: L is not eligible before 50 + requeueDelay (121 s) = 171, and is
// picked up by the next backfill cycle, at 180; it restarts from scratch there
// (ends 1180). CANCEL: L is killed.
// SUSPEND: L keeps its 600 MiB on n1 while H runs (free memory 100), keeps its
// 50 s of work and resumes on n1 at 150, ending at 1100.
func TestPartitionPrioPreemption(t *testing.T) {
	for _, tc := range []struct {
		mode  string
		state sim.JobState
		end   float64
	}{
		{"REQUEUE", sim.StateCompleted, 1180},
		{"CANCEL", sim.StateKilled, 50},
		{"SUSPEND", sim.StateCompleted, 1100},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			s := newSlurm(t, `
partitions:
  - {name: low, nodes: ALL, default: true, overSubscribe: "FORCE:1"}
  - {name: high, nodes: ALL, priorityTier: 2}
preemptType: preempt/partition_prio
preemptMode: `+tc.mode)
			var memAt50 int64 = -1
			var lNodes []sim.NodeID // L's node at each scheduling point where it runs
			pr := &probe{Slurm: s, rec: func(v *sim.View) {
				if v.Now() == sim.Time(50*sim.Second) {
					memAt50 = v.Cluster().NodeFreeMemory(1)
				}
				if l := v.Job(1); l.State == sim.StateRunning { // refs: F 0, L 1, H 2
					lNodes = append(lNodes, l.Nodes[0])
				}
			}}
			l := MakeJob("L").GPUs(8).Dur(1000).Wall(2000).Obj()
			l.MemoryMiB = 600
			h := MakeJob("H").GPUs(8).Dur(100).Wall(100).At(50).Queue("high").Obj()
			h.MemoryMiB = 300
			res := Run(t, preemptNodes(), pr, MakeJob("F").GPUs(8).Dur(5000).Wall(5000).Queue("high").Obj(), l, h)
			wantStarts(t, res, map[string]float64{"F": 0, "L": 0, "H": 50})
			lj := job(res, "L")
			if lj.State != tc.state || lj.End.Seconds() != tc.end || lj.Preempted != 1 {
				t.Errorf("L: state %v end %v preempted %d; want %v %v 1\n%s", lj.State, lj.End.Seconds(), lj.Preempted, tc.state, tc.end, Schedule(res))
			}
			if f := job(res, "F"); f.Preempted != 0 {
				t.Errorf("F was preempted")
			}
			wantMem := int64(1000 - 300)
			if tc.mode == "SUSPEND" {
				wantMem = 100
			}
			if memAt50 != wantMem {
				t.Errorf("free memory on n1 at 50 = %d, want %d", memAt50, wantMem)
			}
			for _, n := range lNodes {
				if tc.mode == "SUSPEND" && n != 1 {
					t.Errorf("L ran on node %d, want always n1", n)
				}
			}
			if tc.mode != "CANCEL" && (len(lNodes) < 2 || lNodes[len(lNodes)-1] != 1) {
				t.Errorf("L should run on n1 before and after the preemption: %v", lNodes)
			}
		})
	}
}

// preempt/qos: only QOS listed in the preemptor's preempt list are victims, and
// the victim's QOS preemptMode applies.
func TestQOSPreemption(t *testing.T) {
	s := newSlurm(t, `
qos:
  - {name: high, priority: 100, preempt: [scavenger]}
  - {name: scavenger, preemptMode: CANCEL}
qosMapping: {serving: high, experiment: scavenger}
preemptType: qos
preemptMode: REQUEUE
`)
	scav := MakeJob("b.scav").GPUs(8).Dur(1000).Wall(1000).Obj()
	scav.Class = sim.ClassExperiment
	norm := MakeJob("a.norm").GPUs(8).Dur(1000).Wall(1000).Obj()
	srv := MakeJob("c.srv").GPUs(8).Dur(100).Wall(100).At(10).Obj()
	srv.Class = sim.ClassServing
	srv2 := MakeJob("d.srv2").GPUs(8).Dur(100).Wall(100).At(20).Obj()
	srv2.Class = sim.ClassServing
	res := Run(t, Nodes(2, 8), s, norm, scav, srv, srv2)
	wantStarts(t, res, map[string]float64{"a.norm": 0, "b.scav": 0, "c.srv": 10, "d.srv2": 110})
	if j := job(res, "b.scav"); j.State != sim.StateKilled {
		t.Errorf("scav: %v, want killed (its QOS mode CANCEL)", j.State)
	}
	if j := job(res, "a.norm"); j.Preempted != 0 {
		t.Errorf("norm (QOS normal) was preempted")
	}
}

// Advanced reservation on n1 from 100 to 480 for alice; n0 is busy. b1 (limit 50)
// ends before the window and starts at 0; b2 (limit 100, at 60) would overlap
// it and waits until the reservation ends at 480; alice's a1 uses the reserved
// node at 90 (backfill, its limit ends before b2's reservation at 480; in the
// main pass b2 blocks the partition, as a clash with a window that has not
// started reads as busy nodes). Alice is allowed by name, through her account
// labA, or through labA's parent org.
func TestReservationWindow(t *testing.T) {
	for _, who := range []string{"users: [alice]", "accounts: [labA]", "accounts: [org]"} {
		t.Run(who, func(t *testing.T) {
			s := newSlurm(t, `
accounts:
  - {name: org, accounts: [{name: labA, users: [{name: alice}]}]}
  - {name: labB, users: [{name: bob}]}
reservations:
  - {name: maint, nodes: "n[1]", startTime: 100, endTime: 480, `+who+`}
schedulerParameters: {bf_resolution: 10}
`)
			res := Run(t, Nodes(2, 8), s,
				user(MakeJob("a.long").GPUs(8).Dur(10000).Wall(10000).Obj(), "bob"),
				user(MakeJob("b.b1").GPUs(8).Dur(50).Wall(50).Obj(), "bob"),
				user(MakeJob("c.b2").GPUs(8).Dur(100).Wall(100).At(60).Obj(), "bob"),
				user(MakeJob("d.a1").GPUs(8).Dur(100).Wall(100).At(70).Obj(), "alice"))
			wantStarts(t, res, map[string]float64{"a.long": 0, "b.b1": 0, "c.b2": 480, "d.a1": 90})
		})
	}
}

// bf_continue is read but not modelled: the policy says so.
func TestWarnings(t *testing.T) {
	s := newSlurm(t, `schedulerParameters: {bf_continue: true}`)
	if w := s.Warnings(); len(w) != 1 || !strings.Contains(w[0], "bf_continue") {
		t.Errorf("warnings %v", w)
	}
	if w := newSlurm(t, ``).Warnings(); len(w) != 0 {
		t.Errorf("default config warns: %v", w)
	}
}

// Time limits: a job without a walltime gets the partition's DefaultTime (and is
// killed there); one above MaxTime never starts.
func TestTimeLimits(t *testing.T) {
	s := newSlurm(t, `partitions: [{name: p, nodes: ALL, default: true, defaultTime: 100, maxTime: 1000}]`)
	res := Run(t, Nodes(1, 8), s,
		MakeJob("a.nolimit").GPUs(8).Dur(500).Obj(),
		MakeJob("b.toolong").GPUs(1).Dur(10).Wall(2000).Obj(),
		MakeJob("c.next").GPUs(8).Dur(10).Wall(10).Obj())
	wantStarts(t, res, map[string]float64{"a.nolimit": 0, "b.toolong": -1, "c.next": 100})
	if j := job(res, "a.nolimit"); j.State != sim.StateKilled || j.End.Seconds() != 100 {
		t.Errorf("nolimit: %v at %v, want killed at its default time 100", j.State, j.End.Seconds())
	}
}

// Configuration errors name the field; a job that can never fit its partition is
// a ConfigError naming the job and the partition.
func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{`partitions: [{name: a, nodes: ALL, bogus: 1}]`, "partitions[0].bogus: unknown field"},
		{`preemptMode: GANG`, "GANG"},
		{`preemptType: fancy`, "preemptType"},
		{`topologyPlugin: topology/block`, "topologyPlugin"},
		{`partitionMapping: {x: nope}`, `partitionMapping.x: unknown partition "nope"`},
		{`qosMapping: {training: nope}`, "qosMapping.training"},
		{`schedulerParameters: {bf_window: 50000}`, "bf_window"},
		{`partitions: [{name: a, nodes: "h[3-1]"}]`, "partitions[0].nodes"},
		{`reservations: [{name: r, nodes: ALL, startTime: 10, endTime: 5, users: [x]}]`, "reservations[0].endTime"},
		{`accounts: [{name: a}, {name: a}]`, `account "a" defined twice`},
		{`qos: [{name: x}, {name: normal}, {name: normal}]`, `qos[2].name: QOS "normal" defined twice`},
		{`qos: [{name: x, preempt: [y]}]`, `qos[0].preempt: unknown QOS "y"`},
		{`nodeSelection: worst-fit`, `nodeSelection: unknown "worst-fit"`},
		{`gangNodes: some`, `gangNodes: unknown "some"`},
		{`accountingStorage: mysql`, `accountingStorage: unknown "mysql"`},
		{`version: "21.08"`, `version: unknown Slurm version "21.08"`},
		{`clockOffset: lots`, `clockOffset`},
		{`priority: {usageModel: fast}`, `priority.usageModel: unknown "fast"`},
		{`calcUptime: -1s`, `calcUptime`},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tc.params), &n); err != nil {
			t.Fatal(err)
		}
		_, err := policies.New("slurm", n.Content[0])
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", tc.params, err, tc.want)
		}
	}
	// run-time mapping errors
	for _, tc := range []struct {
		params string
		job    sim.JobSpec
		want   string
	}{
		{`partitions: [{name: a, nodes: n0}]`, MakeJob("j").Queue("zz").Obj(), `job j: queue "zz" names no partition`},
		{`partitions: [{name: a, nodes: n0, default: true}]`, MakeJob("big").GPUs(8).Replicas(2).Obj(), `job big: needs 2 x 8 GPU(s)`},
		{`partitions: [{name: a, nodes: "x*", default: true}]`, MakeJob("j").Obj(), `"x*" matches no node`},
		{"partitions: [{name: a, nodes: ALL, default: true, maxTime: 100}]\nenforcePartLimits: true", MakeJob("j").Wall(200).Obj(), `job j: time limit 200s exceeds partition "a" maxTime 100s`},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tc.params), &n); err != nil {
			t.Fatal(err)
		}
		p, err := policies.New("slurm", n.Content[0])
		if err != nil {
			t.Fatal(err)
		}
		e, err := sim.NewEngine(sim.Config{Cluster: Cluster(t, Nodes(2, 8)), Jobs: []sim.JobSpec{tc.job}, Policy: p})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Run(t.Context())
		var ce *policies.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want a ConfigError mentioning %q", tc.params, err, tc.want)
		}
	}
}

func durSec(s float64) policies.Dur { return policies.Dur(sim.Seconds(s)) }

// Multifactor priority values, hand-computed. Weights age 1000 (maxAge 1000 s),
// jobSize 100, partition 1000, qos 500 on 2 nodes x 8 GPUs (N = 2, G = 16);
// partitions p1 (job factor 1) and p2 (4); QOS hi (priority 10) is the only
// non-zero one. A filler holds every GPU so x and y stay pending.
//
//	x (p1, normal, 1x8 GPUs, submitted 0) at the step at 300:
//	  1000*0.3 + 100*(1/2+1/2096)/2 + 1000*1/4 + 0 = 300 + 25.02 + 250 -> 575
//	  (job size counts CPUs: one per task, of 2 x 1048 in the cluster)
//	y (p2, hi, 2x8, submitted 100) at arrival (age 0): 0 + 50.05 + 1000 + 500 -> 1550,
//	  at 300: 200 + 50.05 + 1000 + 500 -> 1750
//	x at 100 still has its value from the step at 60: 60 + 25.02 + 250 -> 335.
func TestPriorityFactors(t *testing.T) {
	s := newSlurm(t, `
partitions:
  - {name: p1, nodes: ALL, default: true}
  - {name: p2, nodes: ALL, priorityJobFactor: 4}
priority: {weights: {age: 1000, jobSize: 100, partition: 1000, qos: 500}, maxAge: 1000, calcPeriod: 60}
qos: [{name: hi, priority: 10}]
qosMapping: {serving: hi}
`)
	got := map[[2]float64]int64{}
	pr := &probe{Slurm: s, rec: func(v *sim.View) {
		for r := range s.jobs {
			got[[2]float64{v.Now().Seconds(), float64(r)}] = s.jobs[r].prio
		}
	}}
	y := MakeJob("y").GPUs(8).Replicas(2).Dur(10).Wall(10).At(100).Queue("p2").Obj()
	y.Class = sim.ClassServing
	Run(t, Nodes(2, 8), pr,
		MakeJob("a.fill").GPUs(8).Replicas(2).Dur(1000).Wall(1000).Obj(),
		MakeJob("x").GPUs(8).Dur(10).Wall(10).Obj(), y)
	// refs: a.fill 0, x 1, y 2
	for _, c := range []struct {
		at   float64
		ref  int
		want int64
	}{{300, 1, 575}, {100, 2, 1550}, {300, 2, 1750}, {100, 1, 335}} {
		if g := got[[2]float64{c.at, float64(c.ref)}]; g != c.want {
			t.Errorf("job ref %d at %v: priority %d, want %d", c.ref, c.at, g, c.want)
		}
	}
}

// Victim order: by default the lowest tier goes first (L, tier 1, although M is
// younger); with youngestFirst the most recently started job (M) goes first.
func TestVictimOrder(t *testing.T) {
	for _, tc := range []struct {
		youngest bool
		victim   string
	}{{false, "L"}, {true, "M"}} {
		s := newSlurm(t, `
partitions:
  - {name: low, nodes: ALL, default: true}
  - {name: mid, nodes: ALL, priorityTier: 2}
  - {name: high, nodes: ALL, priorityTier: 3}
preemptType: partition_prio
preemptMode: REQUEUE
preemptParameters: {youngestFirst: `+map[bool]string{false: "false", true: "true"}[tc.youngest]+`}
`)
		res := Run(t, Nodes(2, 8), s,
			MakeJob("L").GPUs(8).Dur(100).Wall(100).Obj(),
			MakeJob("M").GPUs(8).Dur(100).Wall(100).At(10).Queue("mid").Obj(),
			MakeJob("H").GPUs(8).Dur(100).Wall(100).At(20).Queue("high").Obj())
		// the preemption at 20 (with youngestFirst the requeued M then preempts
		// the lower-tier L at its next pass, as Slurm would)
		var first string
		for _, e := range res.Log {
			if e.Kind == sim.EvPreempt {
				first = string(res.Jobs[e.Job].Spec.ID)
				if e.Time != sim.Time(20*sim.Second) {
					t.Errorf("first preemption at %v, want 20s", e.Time)
				}
				break
			}
		}
		if first != tc.victim {
			t.Errorf("youngestFirst=%v: H preempted %q, want %s\n%s", tc.youngest, first, tc.victim, Schedule(res))
		}
	}
}

// Overlapping partitions: when "wide" (all nodes) blocks, its nodes leave the
// candidate set, so a later job of "narrow" (n1 only, overlapping) waits for
// backfill although n1 has room; a job of "other" (n2, not in wide) does not.
// (batch_sched_delay 0: the main scheduler runs at each arrival.)
func TestOverlappingPartitionsBlock(t *testing.T) {
	s := newSlurm(t, `
partitions:
  - {name: wide, nodes: "0-1", default: true}
  - {name: narrow, nodes: "1"}
  - {name: other, nodes: "2"}
schedulerParameters: {bf_resolution: 10, batch_sched_delay: 0}
`)
	res := Run(t, Nodes(3, 8), s,
		MakeJob("a.r0").GPUs(8).Dur(1000).Wall(1000).Obj(),
		MakeJob("b.r1").GPUs(4).Dur(1000).Wall(1000).Obj(),
		MakeJob("c.wide").GPUs(8).Replicas(2).Dur(10).Wall(10).At(1).Obj(),
		MakeJob("d.narrow").GPUs(2).Dur(10).Wall(10).At(2).Queue("narrow").Obj(),
		MakeJob("e.other").GPUs(2).Dur(10).Wall(10).At(2).Queue("other").Obj())
	wantStarts(t, res, map[string]float64{"c.wide": 1000, "d.narrow": 30, "e.other": 2})
}

// topology/tree on 8 nodes in two leaf switches (n0-n3, n4-n7). Seven 8-GPU
// fillers take n0..n6; two of them (on n2, n3) end at 10, so at 20 n2, n3 (leaf
// 0) and n7 (leaf 1) are free. Flat placement is first fit: the 1-node job takes
// n2 and the 2-node gang then spans the leaves (n3 + n7). With tree the 1-node
// job goes best fit to the leaf with the fewest free nodes that suffice (leaf
// 1: n7) and the gang stays inside leaf 0 (n2 + n3).
func TestTopologyTree(t *testing.T) {
	fill := func(ids ...string) []sim.JobSpec {
		var out []sim.JobSpec
		for _, id := range ids {
			out = append(out, MakeJob("a."+id).GPUs(8).Dur(1000).Wall(1000).Obj())
		}
		return out
	}
	nodesOf := func(res *sim.Result, id string) []sim.NodeID { return job(res, id).Nodes }
	jobs := fill("f0", "f1", "f2", "f3", "f4", "f5", "f6")
	jobs[2].Duration, jobs[2].Walltime = 10*sim.Second, 10*sim.Second
	jobs[3].Duration, jobs[3].Walltime = 10*sim.Second, 10*sim.Second
	jobs = append(jobs,
		MakeJob("b.single").GPUs(8).Dur(100).Wall(100).At(20).Obj(),
		MakeJob("c.gang").GPUs(8).Replicas(2).Dur(100).Wall(100).At(20).Obj())
	flat := Run(t, Nodes(8, 8), newSlurm(t, `nodeSelection: first-fit`), jobs...)
	best := Run(t, Nodes(8, 8), newSlurm(t, ``), jobs...)
	tree := Run(t, Nodes(8, 8), newSlurm(t, `topologyPlugin: topology/tree`), jobs...)
	if got := nodesOf(flat, "b.single"); len(got) != 1 || got[0] != 2 {
		t.Errorf("flat: single on %v, want [2]\n%s", got, Schedule(flat))
	}
	if got := nodesOf(tree, "b.single"); len(got) != 1 || got[0] != 7 {
		t.Errorf("tree: single on %v, want [7] (best-fit leaf 1)\n%s", got, Schedule(tree))
	}
	if got := nodesOf(tree, "c.gang"); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("tree: gang on %v, want [2 3] (inside leaf 0)", got)
	}
	if got := nodesOf(flat, "c.gang"); len(got) != 2 || got[0] != 3 || got[1] != 7 {
		t.Errorf("flat: gang on %v, want [3 7] (spanning leaves)", got)
	}
	// select/cons_tres best fit without a topology plugin: the free nodes form
	// the runs [2 3] and [7]; the single job takes the tightest run, [7], and
	// the gang the only run that holds it, [2 3].
	if got := nodesOf(best, "b.single"); len(got) != 1 || got[0] != 7 {
		t.Errorf("best-fit: single on %v, want [7]\n%s", got, Schedule(best))
	}
	if got := nodesOf(best, "c.gang"); len(got) != 2 || got[0] != 2 || got[1] != 3 {
		t.Errorf("best-fit: gang on %v, want [2 3]", got)
	}
}

// A suspended job that cannot resume yet does not block its partition (it is not
// in Slurm's pending queue): H suspends L on n1 at 50 (F and G run in the high
// tier, out of its reach); when G frees n2 at 100 the
// main scheduler starts Q there at once (not at the next backfill cycle, 120),
// and L resumes on n1 when H ends at 150.
func TestSuspendedDoesNotBlock(t *testing.T) {
	s := newSlurm(t, `
partitions:
  - {name: low, nodes: ALL, default: true, overSubscribe: FORCE}
  - {name: high, nodes: ALL, priorityTier: 2}
preemptType: partition_prio
preemptMode: SUSPEND
`)
	res := Run(t, Nodes(3, 8), s,
		MakeJob("F").GPUs(8).Dur(5000).Wall(5000).Queue("high").Obj(),
		MakeJob("G").GPUs(8).Dur(100).Wall(100).Queue("high").Obj(),
		MakeJob("L").GPUs(8).Dur(1000).Wall(2000).Obj(),
		MakeJob("H").GPUs(8).Dur(100).Wall(100).At(50).Queue("high").Obj(),
		MakeJob("Q").GPUs(8).Dur(50).Wall(50).At(60).Obj())
	wantStarts(t, res, map[string]float64{"F": 0, "G": 0, "L": 0, "H": 50, "Q": 100})
	if l := job(res, "L"); l.End.Seconds() != 1100 || l.Preempted != 1 {
		t.Errorf("L ended at %v after %d preemptions, want 1100 and 1\n%s", l.End.Seconds(), l.Preempted, Schedule(res))
	}
}

// bf_max_job_user: only one job per user is examined per backfill cycle, so
// alice's second small job waits for the next cycle (60) while bob's starts at 30.
func TestBfMaxJobUser(t *testing.T) {
	jobs := []sim.JobSpec{
		user(MakeJob("a.r1").GPUs(4).Dur(1000).Wall(1000).Obj(), "carol"),
		user(MakeJob("b.head").GPUs(8).Dur(100).Wall(100).Obj(), "carol"),
		user(MakeJob("c.s1").GPUs(1).Dur(50).Wall(50).At(1).Obj(), "alice"),
		user(MakeJob("d.s2").GPUs(1).Dur(50).Wall(50).At(1).Obj(), "alice"),
		user(MakeJob("e.s3").GPUs(1).Dur(50).Wall(50).At(1).Obj(), "bob"),
	}
	res := Run(t, Nodes(1, 8), newSlurm(t, `schedulerParameters: {bf_max_job_user: 1}`), jobs...)
	wantStarts(t, res, map[string]float64{"c.s1": 30, "d.s2": 60, "e.s3": 30})
	res = Run(t, Nodes(1, 8), newSlurm(t, ``), jobs...)
	wantStarts(t, res, map[string]float64{"c.s1": 30, "d.s2": 30, "e.s3": 30})
}

// Preemption modes as SchedMD/slurm's preempt plugins apply them, on two 8-GPU
// nodes with n0 and n1 busy until 1000 and an 8-GPU preemptor arriving at 50:
//   - clusterOff: the cluster preemptMode is OFF (the default) and only the
//     low partition says REQUEUE. preempt_p_get_data(PREEMPT_DATA_ENABLED) is
//     PreemptMode != OFF, so slurm_find_preemptable_jobs finds no victims: H
//     waits until 1000.
//   - qosOff: the victim QOS sets preemptMode OFF, which preempt/qos
//     _job_preempt_mode reads as "not set" (OFF is 0), so the cluster's REQUEUE
//     applies and H starts at 50.
//   - sameQOS: a QOS listing itself in preempt does not preempt its own jobs
//     (preempt_p_preemptable returns false for equal QOS without WITHIN): H
//     waits until 1000.
func TestPreemptEnabledAndQOSModes(t *testing.T) {
	for _, tc := range []struct {
		name, params string
		victimClass  sim.JobClass
		hStart       float64
	}{
		{"clusterOff", `
partitions:
  - {name: low, nodes: ALL, default: true, preemptMode: REQUEUE}
  - {name: high, nodes: ALL, priorityTier: 2}
preemptType: partition_prio`, sim.ClassExperiment, 1000},
		{"qosOff", `
partitions: [{name: low, nodes: ALL, default: true}, {name: high, nodes: ALL}]
qos: [{name: top, preempt: [scav]}, {name: scav, preemptMode: "OFF"}]
qosMapping: {serving: top, experiment: scav}
preemptType: qos
preemptMode: REQUEUE`, sim.ClassExperiment, 50},
		{"sameQOS", `
partitions: [{name: low, nodes: ALL, default: true}, {name: high, nodes: ALL}]
qos: [{name: top, preempt: [top]}]
qosMapping: {serving: top}
preemptType: qos
preemptMode: REQUEUE`, sim.ClassServing, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSlurm(t, tc.params)
			a := MakeJob("a").GPUs(8).Dur(1000).Wall(1000).Obj()
			b := MakeJob("b").GPUs(8).Dur(1000).Wall(1000).Obj()
			a.Class, b.Class = tc.victimClass, tc.victimClass
			h := MakeJob("h").GPUs(8).Dur(100).Wall(100).At(50).Queue("high").Obj()
			h.Class = sim.ClassServing
			res := Run(t, Nodes(2, 8), s, a, b, h)
			wantStarts(t, res, map[string]float64{"a": 0, "b": 0, "h": tc.hStart})
			if w := s.Warnings(); (tc.name == "clusterOff") != (len(w) == 1 && strings.Contains(w[0], "cluster preemptMode is OFF")) {
				t.Errorf("warnings %v", w)
			}
		})
	}
}

// bf_min_prio_reserve also applies to the main scheduler (SchedMD/slurm
// job_scheduler.c _schedule: fail_by_part = false when the job's priority is
// below it): a job below the threshold that cannot start does not block its
// partition. One 8-GPU node (1048 CPUs), job-size weight 1000: r (6 GPUs)
// runs from 0; p (4 GPUs, 524 CPUs, priority (1+524/1048)/2*1000 = 750),
// arriving at 0.5, cannot start; q (2 GPUs, 262 CPUs, priority 625) arrives
// at 1. With bf_min_prio_reserve 800 p does not block and q starts at
// once in the main pass at 1; without it p blocks the partition and q waits
// for the backfill cycle at 30. (batch_sched_delay 0: the main scheduler runs
// at each arrival.)
func TestMinPrioReserveDoesNotBlock(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("r").GPUs(6).Dur(1000).Wall(1000).Obj(),
		MakeJob("p").GPUs(4).CPU(524000).Dur(100).Wall(100).At(0.5).Obj(),
		MakeJob("q").GPUs(2).CPU(262000).Dur(100).Wall(100).At(1).Obj(),
	}
	low := Run(t, Nodes(1, 8), newSlurm(t, `
priority: {weights: {jobSize: 1000}}
schedulerParameters: {bf_min_prio_reserve: 800, batch_sched_delay: 0}`), jobs...)
	wantStarts(t, low, map[string]float64{"r": 0, "q": 1, "p": 1000})
	def := Run(t, Nodes(1, 8), newSlurm(t, `
priority: {weights: {jobSize: 1000}}
schedulerParameters: {batch_sched_delay: 0}`), jobs...)
	wantStarts(t, def, map[string]float64{"r": 0, "q": 30, "p": 1000})
}

// params.placement chooses the nodes of jobs that start now, inside the job's
// partition. Partition a holds n1 and n2 (n0 is outside it). j1 (2 GPUs) starts
// on n1; j2 (2 GPUs, 1 s later) joins it under Slurm's own selection and under
// best-fit, so the 8-GPU j3 (2 s) starts on the empty n2 at once. Under spread
// j2 goes to the emptiest node of the partition, n2 (never n0, which is
// emptier but outside the partition), and j3 waits until j1 ends at 100 s.
// fgd takes the same path and keeps to the partition. A topology-aware
// placement, which cannot be confined to a partition, is refused.
func TestPlacementParam(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("j1").GPUs(2).Dur(100).Wall(100).Queue("a").Obj(),
		MakeJob("j2").GPUs(2).Dur(100).Wall(100).At(1).Queue("a").Obj(),
		MakeJob("j3").GPUs(8).Dur(10).Wall(10).At(2).Queue("a").Obj(),
	}
	for placement, want := range map[string]float64{"": 2, "best-fit": 2, "spread": 100, "fgd": 2} {
		params := "partitions: [{name: a, nodes: \"n[1-2]\", default: true}]\nschedulerParameters: {batch_sched_delay: 0}"
		if placement != "" {
			params += "\nplacement: " + placement
		}
		res := Run(t, Nodes(3, 8), newSlurm(t, params), jobs...)
		if got := Starts(res)["j3"]; got != want {
			t.Errorf("placement %q: j3 started at %v, want %v\n%s", placement, got, want, Schedule(res))
		}
		for i := range res.Jobs {
			for _, n := range res.Jobs[i].Nodes {
				if n == 0 {
					t.Errorf("placement %q: %s ran on n0, outside its partition", placement, jobs[i].ID)
				}
			}
		}
	}
	for bad, msg := range map[string]string{
		"placement: nope": "placement: unknown placement",
		"placement: best-fit\ntopologyPlugin: tree": "placement: \"best-fit\" with topologyPlugin tree",
	} {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(bad), &doc); err != nil {
			t.Fatal(err)
		}
		_, err := policies.New("slurm", doc.Content[0])
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want %q", bad, err, msg)
		}
	}
}
