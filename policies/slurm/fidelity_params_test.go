package slurm

import (
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
)

// A requeued job is not eligible for requeueDelay, then waits for the next
// full main-scheduler pass (issue 17 gap 1). F fills n0 (in the high tier),
// L runs on n1; H
// (higher tier, 20 s) preempts L at 50 and ends at 70. With no delay L is
// released by the full pass at 60 and restarts at H's end, 70. With the
// default 121 s L is eligible at 171 and the full pass at 180 (sched_interval
// 60 s from t=0) starts it. With 30 s it is eligible at 80 and starts at the
// pass at 120; if slurmctld had run 5 s at t=0 (controllerUptime) the passes
// fall at 55, 115, ... and it starts at 115.
func TestRequeueDelay(t *testing.T) {
	for _, tc := range []struct {
		extra string
		want  float64
	}{
		{"requeueDelay: 0s", 70},
		{"", 180},
		{"requeueDelay: 30s", 120},
		{"{requeueDelay: 30s, controllerUptime: 5s}", 115},
	} {
		params := `
partitions:
  - {name: low, nodes: ALL, default: true}
  - {name: high, nodes: ALL, priorityTier: 2}
preemptType: partition_prio
preemptMode: REQUEUE
`
		switch {
		case tc.extra == "":
		case tc.extra[0] == '{':
			params += "requeueDelay: 30s\ncontrollerUptime: 5s\n"
		default:
			params += tc.extra + "\n"
		}
		res := Run(t, Nodes(2, 8), newSlurm(t, params),
			MakeJob("F").GPUs(8).Dur(5000).Wall(5000).Queue("high").Obj(),
			MakeJob("L").GPUs(8).Dur(1000).Wall(2000).Obj(),
			MakeJob("H").GPUs(8).Dur(20).Wall(20).At(50).Queue("high").Obj())
		l := job(res, "L")
		if l.Preempted != 1 || l.LastStart.Seconds() != tc.want {
			t.Errorf("%q: L preempted %d, restarted at %v, want 1 and %v\n%s", tc.extra, l.Preempted, l.LastStart.Seconds(), tc.want, Schedule(res))
		}
	}
}

// bf_resolution rounds backfill reservations on the wall clock, so where t=0
// falls in the minute (clockOffset) matters (issue 17 gap 2), and Slurm 22.05
// rounds a reservation's end down where later releases round it up (gap 5).
// As in TestBackfillResolution, r1 (4 of 8 GPUs) holds the node to 100 and the
// head reserves the whole node from 100; c.bf (limit 50) asks at the cycle at
// 30. t=0 on a whole minute: the slot starts at 60 and c.bf ([30, 80]) waits,
// reserving after the slot's end, 240. t=0 at second 30 of a minute: minutes
// fall at 30, 90, 150, so the slot starts at 90 and c.bf is backfilled at 30.
// Version 22.05: the slot [60, 180) ends at 200 rounded down, so c.bf
// reserves at 180.
func TestClockOffsetAndVersion(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("a.r1").GPUs(4).Dur(100).Wall(100).Obj(),
		MakeJob("b.head").GPUs(8).Dur(100).Wall(100).Obj(),
		MakeJob("c.bf").GPUs(4).Dur(50).Wall(50).At(1).Obj(),
	}
	onMinute := Run(t, Nodes(1, 8), newSlurm(t, ``), jobs...)
	wantStarts(t, onMinute, map[string]float64{"b.head": 100, "c.bf": 200})
	if got := reservationsBefore(onMinute, "c.bf", 31); len(got) != 1 || got[0] != 240 {
		t.Errorf("latest: c.bf's reservations by 30: %v, want [240]", got)
	}
	offset := Run(t, Nodes(1, 8), newSlurm(t, `clockOffset: 30s`), jobs...)
	wantStarts(t, offset, map[string]float64{"b.head": 100, "c.bf": 30})
	v2205 := Run(t, Nodes(1, 8), newSlurm(t, `version: "22.05"`), jobs...)
	wantStarts(t, v2205, map[string]float64{"b.head": 100, "c.bf": 200})
	if got := reservationsBefore(v2205, "c.bf", 31); len(got) != 1 || got[0] != 180 {
		t.Errorf("22.05: c.bf's reservations by 30: %v, want [180]", got)
	}
}

// The job size factor counts CPUs, as priority/multifactor does, for each
// PriorityFlags setting (issue 17 gap 4). Two nodes of 1048 CPUs (2096 in
// all), weight 1000; both nodes are busy from 0, x and y arrive at 1. x: 1
// node, 8 CPUs, limit 8 min; y: 2 nodes, 1200 CPUs, limit 1 min.
//
//	default             x (1/2 + 8/2096)/2 = 0.2519 -> 251      y (1 + 1200/2096)/2 = 0.7863 -> 786
//	favorSmall          x (1/2 + 2088/2096)/2 = 0.7481 -> 748   y (0 + 896/2096)/2 = 0.2137 -> 213
//	smallRelativeToTime x max(1048, 8)/8/2096 = 0.0625 -> 62    y max(2096, 1200)/1/2096 = 1 -> 1000
//	both                x 1 - 0.0625 -> 937                     y 1 - 1 -> 0, clamped to 1
func TestJobSizeFactorFlags(t *testing.T) {
	for _, tc := range []struct {
		flags string
		x, y  int64
	}{
		{"", 251, 786},
		{"favorSmall: true", 748, 213},
		{"smallRelativeToTime: true", 62, 1000},
		{"{favorSmall: true, smallRelativeToTime: true}", 937, 1},
	} {
		pr := "priority: {weights: {jobSize: 1000}"
		switch {
		case tc.flags == "":
		case tc.flags[0] == '{':
			pr += ", favorSmall: true, smallRelativeToTime: true"
		default:
			pr += ", " + tc.flags
		}
		s := newSlurm(t, pr+"}")
		got := map[int]int64{}
		p := &probe{Slurm: s, rec: func(v *sim.View) {
			for r := range s.jobs {
				j := v.Job(sim.JobRef(r))
				if _, ok := got[r]; !ok && j.State == sim.StatePending && v.Now() >= j.Spec.Submit {
					got[r] = s.jobs[r].prio
				}
			}
		}}
		Run(t, Nodes(2, 8), p,
			MakeJob("a.fill").GPUs(8).Replicas(2).Dur(100).Wall(100).Obj(),
			MakeJob("x").GPUs(8).CPU(8000).Dur(10).Wall(480).At(1).Obj(),
			MakeJob("y").GPUs(8).Replicas(2).CPU(600000).Dur(10).Wall(60).At(1).Obj())
		if got[1] != tc.x || got[2] != tc.y {
			t.Errorf("%s: priorities x %d y %d, want %d %d (%v)", tc.flags, got[1], got[2], tc.x, tc.y, got)
		}
	}
}

// Best fit (select/cons_tres _eval_nodes, issue 17 gap 3): with n2, n3 and
// n5 free, an 8-GPU job takes n5 (the run [n5] has fewer free CPUs than
// [n2 n3] and suffices) where first fit takes n2; a 2-node gang then takes
// the run [n2 n3] where first fit takes n3 and n5.
func TestBestFitNodes(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("a0").GPUs(8).Dur(1000).Wall(1000).Obj(),
		MakeJob("a1").GPUs(8).Dur(1000).Wall(1000).Obj(),
		MakeJob("a4").GPUs(8).Dur(1000).Wall(1000).Obj(),
		MakeJob("a6").GPUs(8).Dur(1000).Wall(1000).Obj(),
		MakeJob("a7").GPUs(8).Dur(1000).Wall(1000).Obj(),
	}
	// place the fillers on n0, n1, n4, n6, n7 with first fit, then free the rest
	nodes := Nodes(8, 8)
	fill := []sim.JobSpec{
		MakeJob("f2").GPUs(8).Dur(8).Wall(8).Obj(), // submitted at 2, 3, 5: all end at 10
		MakeJob("f3").GPUs(8).Dur(7).Wall(7).Obj(),
		MakeJob("f5").GPUs(8).Dur(5).Wall(5).Obj(),
	}
	order := []sim.JobSpec{jobs[0], jobs[1], fill[0], fill[1], jobs[2], fill[2], jobs[3], jobs[4]}
	for i := range order {
		order[i].Submit = sim.Time(i) * sim.Time(sim.Second) // one by one: n0..n7 in order
	}
	later := []sim.JobSpec{
		MakeJob("c.whole").GPUs(8).Dur(100).Wall(100).At(11).Obj(),
		MakeJob("d.gang").GPUs(8).Replicas(2).Dur(100).Wall(100).At(12).Obj(),
	}
	all := append(order, later...)
	// batch_sched_delay 0: each arrival is placed at once, in order
	ff := Run(t, nodes, newSlurm(t, "nodeSelection: first-fit\nschedulerParameters: {batch_sched_delay: 0}"), all...)
	bf := Run(t, nodes, newSlurm(t, "schedulerParameters: {batch_sched_delay: 0}"), all...)
	for _, c := range []struct {
		res  *sim.Result
		name string
		id   string
		want []sim.NodeID
	}{
		{ff, "first-fit", "c.whole", []sim.NodeID{2}},
		{ff, "first-fit", "d.gang", []sim.NodeID{3, 5}},
		{bf, "best-fit", "c.whole", []sim.NodeID{5}},
		{bf, "best-fit", "d.gang", []sim.NodeID{2, 3}},
	} {
		j := job(c.res, c.id)
		if len(j.Nodes) != len(c.want) || j.Nodes[0] != c.want[0] || len(c.want) > 1 && j.Nodes[1] != c.want[1] {
			t.Errorf("%s: %s on %v, want %v\n%s", c.name, c.id, j.Nodes, c.want, Schedule(c.res))
		}
	}
}

// Without accounting storage (accountingStorage: none, as in the fidelity
// fixtures) Slurm computes a pending job's priority once, at submission:
// sprio showed AGE 0 after a minute and more. Age weight 1000, maxAge 100 s,
// calcPeriod 10 s; x waits behind a filler from 0 to 100. With slurmdbd its
// last priority before it starts, from the step at 90, is 1000 x 90/100 =
// 900; without accounting it stays at 1 (age 0, clamped to 1).
func TestAccountingNone(t *testing.T) {
	for _, tc := range []struct {
		acct string
		want int64
	}{{"slurmdbd", 900}, {"none", 1}} {
		s := newSlurm(t, `
priority: {weights: {age: 1000}, maxAge: 100s, calcPeriod: 10s}
accountingStorage: `+tc.acct)
		var last int64
		p := &probe{Slurm: s, rec: func(v *sim.View) {
			if v.Now() < sim.Time(100*sim.Second) {
				last = s.jobs[1].prio
			}
		}}
		Run(t, Nodes(1, 8), p,
			MakeJob("a.fill").GPUs(8).Dur(100).Wall(100).Obj(),
			MakeJob("x").GPUs(8).Dur(10).Wall(100).Obj())
		if last != tc.want {
			t.Errorf("accountingStorage %s: priority of x before 100 = %d, want %d", tc.acct, last, tc.want)
		}
	}
}

// Newly submitted jobs wait for the main scheduler's background pass, at most
// once per batch_sched_delay, on slurmctld's 1 s loop (issue 17). One 8-GPU
// node, 1-GPU jobs a, b, c arrive at 0, 1 and 2 (backfill every 30 s). With
// the default 3 s, a starts at 0 and b and c at the pass at 3. With 0 each
// starts on arrival. With slurmctld started 0.5 s before t=0 the loop ticks at
// x.5: a starts at 0.5, b and c at 3.5.
func TestBatchSchedDelay(t *testing.T) {
	jobs := []sim.JobSpec{
		MakeJob("a").GPUs(1).Dur(100).Wall(100).Obj(),
		MakeJob("b").GPUs(1).Dur(100).Wall(100).At(1).Obj(),
		MakeJob("c").GPUs(1).Dur(100).Wall(100).At(2).Obj(),
	}
	for _, tc := range []struct {
		params string
		want   map[string]float64
	}{
		{``, map[string]float64{"a": 0, "b": 3, "c": 3}},
		{`schedulerParameters: {batch_sched_delay: 0}`, map[string]float64{"a": 0, "b": 1, "c": 2}},
		{`controllerUptime: 0.5s`, map[string]float64{"a": 0.5, "b": 3.5, "c": 3.5}},
	} {
		wantStarts(t, Run(t, Nodes(1, 8), newSlurm(t, tc.params), jobs...), tc.want)
	}
}

// A job that only an advanced reservation active now keeps off its nodes does
// not block its partition (Slurm: ReqNodeNotAvail, reserved); a clash with a
// reservation that starts later reads as busy nodes and does (fidelity
// fixture reservation). Two nodes; alice's reservation on n1. b (bob, 2
// nodes) cannot start; c (bob, 1 node) arrives at 1. Reservation active
// [0, 100): c starts at once in the main pass. Reservation [40, 150): b
// blocks the partition and c waits for the backfill cycle at 30.
func TestActiveReservationDoesNotBlock(t *testing.T) {
	jobs := []sim.JobSpec{
		user(MakeJob("b").GPUs(8).Replicas(2).Dur(100).Wall(100).Obj(), "bob"),
		user(MakeJob("c").GPUs(8).Dur(10).Wall(10).At(1).Obj(), "bob"),
	}
	for _, tc := range []struct {
		window string
		want   float64
	}{{"startTime: 0, endTime: 100", 1}, {"startTime: 40, endTime: 150", 30}} {
		res := Run(t, Nodes(2, 8), newSlurm(t, `
reservations: [{name: r, nodes: "n1", `+tc.window+`, users: [alice]}]
schedulerParameters: {batch_sched_delay: 0}`), jobs...)
		if got := Starts(res)["c"]; got != tc.want {
			t.Errorf("%s: c started at %v, want %v\n%s", tc.window, got, tc.want, Schedule(res))
		}
	}
}
