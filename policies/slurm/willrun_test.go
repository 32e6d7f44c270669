package slurm

import (
	"testing"

	. "github.com/gpusim/gpusim/sim/simtest"
)

// willRun: windows frees running jobs in batches (select/cons_tres
// _will_run_test), so a reservation can start later than the first end that
// would make room, and a job that the exact search keeps off the node
// backfills. Two nodes of 8 GPUs, bf_resolution 1 s (no rounding):
// a.r1 holds 4 GPUs of n0 to 100, b.r2 all of n1 to 110. c.head (8 GPUs,
// limit 100) cannot start. Exact: it fits once a.r1 ends, so it reserves n0
// from 100; d.bf (4 GPUs, limit 105, submitted at 2) would run on n0 to 107
// and waits; it starts on n1 when b.r2 ends at 110 (c.head took n0 at 100).
// Windows: the first freed job, a.r1, ends at 100; the barrier is 120 (the
// next multiple of 30 s) and the first window reaches 150, so b.r2 (110) is
// freed with it and the start is the last freed end, 110. c.head reserves
// n0 from 110, d.bf's run [2, 107] misses it and starts at 2; c.head starts
// on n0 when d.bf ends, at 107.
func TestWillRunWindows(t *testing.T) {
	params := "schedulerParameters: {bf_interval: 1s, bf_resolution: 1s}\n"
	specs := []struct {
		mode string
		resv float64
		want map[string]float64
	}{
		{"exact", 100, map[string]float64{"c.head": 100, "d.bf": 110}},
		{"windows", 110, map[string]float64{"c.head": 107, "d.bf": 2}},
	}
	for _, tc := range specs {
		res := Run(t, Nodes(2, 8), newSlurm(t, params+"willRun: "+tc.mode+"\n"),
			MakeJob("a.r1").GPUs(4).Dur(100).Wall(100).Obj(),
			MakeJob("b.r2").GPUs(8).Dur(110).Wall(110).Obj(),
			MakeJob("c.head").GPUs(8).Dur(100).Wall(100).At(1).Obj(),
			MakeJob("d.bf").GPUs(4).Dur(105).Wall(105).At(2).Obj())
		wantStarts(t, res, tc.want)
		if got := reservationsBefore(res, "c.head", 2); len(got) == 0 || got[0] != tc.resv {
			t.Errorf("%s: c.head reserved at %v, want %v first", tc.mode, got, tc.resv)
		}
	}
}

// With willRun: windows, jobs that a pending job may preempt by SUSPEND keep
// their GPUs in its will-run test (_build_cr_job_list drops them from the
// job list; action 2 frees cores, not GRES), so the job reserves where jobs
// it cannot preempt end (fidelity fixture preempt-suspend, job l5). Three
// nodes; partition hi (PriorityTier 2) may suspend lo's jobs, but lo is not
// OverSubscribe=FORCE, so nothing is suspended. a.G (hi) holds n0 to 100,
// b.L2 (lo) n1 to 50, c.L1 (lo) n2 to 1000. d.H (hi, 2 nodes, limit 60)
// waits. When b.L2 ends at 50, e.L3 (lo, limit 60) fits on n1. Windows:
// d.H's will-run keeps c.L1's GPUs, frees a.G at 100: d.H reserves n0 and
// n1 from 100, e.L3's run [50, 110] would overlap, so it waits; d.H starts
// at 100 and e.L3 when d.H ends, at 130. Exact (the earlier rule): d.H's
// start "now" by suspension fails and it gets no reservation, so e.L3
// backfills at 50; d.H still starts at 100.
func TestWillRunSuspendVictims(t *testing.T) {
	params := `
schedulerParameters: {bf_interval: 1s, bf_resolution: 1s}
partitions:
  - {name: lo, nodes: ALL, default: true}
  - {name: hi, nodes: ALL, priorityTier: 2}
preemptType: partition_prio
preemptMode: SUSPEND
`
	for _, tc := range []struct {
		mode string
		want map[string]float64
	}{
		{"exact", map[string]float64{"d.H": 100, "e.L3": 50}},
		{"windows", map[string]float64{"d.H": 100, "e.L3": 130}},
	} {
		res := Run(t, Nodes(3, 8), newSlurm(t, params+"willRun: "+tc.mode+"\n"),
			MakeJob("a.G").GPUs(8).Dur(100).Wall(100).Queue("hi").Obj(),
			MakeJob("b.L2").GPUs(8).Dur(50).Wall(200).Obj(),
			MakeJob("c.L1").GPUs(8).Dur(1000).Wall(1000).Obj(),
			MakeJob("d.H").GPUs(8).Replicas(2).Dur(30).Wall(60).At(1).Queue("hi").Obj(),
			MakeJob("e.L3").GPUs(8).Dur(20).Wall(60).At(2).Obj())
		wantStarts(t, res, tc.want)
		if tc.mode == "windows" {
			if got := reservationsBefore(res, "d.H", 60); len(got) == 0 || got[len(got)-1] != 100 {
				t.Errorf("windows: d.H reserved at %v by 60, want 100 last\n%s", got, Schedule(res))
			}
		}
	}
}

// With willRun: windows a backfill test's run ends at its start rounded up
// to a whole second plus its limit (ceilSecond). As in TestWillRunWindows,
// the ticks fall at x.5 s (controllerUptime 0.5 s), so a.r1 and b.r2 start
// at 0.5 and end at 100.5 and 110.5, and c.head reserves n0 from 110.5,
// whose slot begins at 110 (bf_resolution 1 s). d.bf (limit 107) is tested
// at 2.5: its run [2.5, 109.5] misses the slot, but Slurm's end_time is
// 3 + 107 = 110, which a slot beginning at 110 blocks (begin_time <=
// end_time). So d.bf waits; c.head starts on n0 when a.r1 ends, at 100.5,
// and d.bf on n1 when b.r2 ends, at 110.5. With limit 106 (end_time 109)
// d.bf backfills at 2.5 and c.head starts when it ends, at 108.5.
func TestWillRunWholeSeconds(t *testing.T) {
	params := "schedulerParameters: {bf_interval: 1s, bf_resolution: 1s}\ncontrollerUptime: 0.5s\nwillRun: windows\n"
	for _, tc := range []struct {
		limit float64
		want  map[string]float64
	}{
		{107, map[string]float64{"c.head": 100.5, "d.bf": 110.5}},
		{106, map[string]float64{"c.head": 108.5, "d.bf": 2.5}},
	} {
		res := Run(t, Nodes(2, 8), newSlurm(t, params),
			MakeJob("a.r1").GPUs(4).Dur(100).Wall(100).Obj(),
			MakeJob("b.r2").GPUs(8).Dur(110).Wall(110).Obj(),
			MakeJob("c.head").GPUs(8).Dur(100).Wall(100).At(1).Obj(),
			MakeJob("d.bf").GPUs(4).Dur(tc.limit).Wall(tc.limit).At(2).Obj())
		wantStarts(t, res, tc.want)
	}
}
