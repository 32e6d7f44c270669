package sim_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// runStorage runs jobs on two 8-GPU nodes (in one leaf, or in two leaves when
// twoLeaves) with the given checkpoint storage, scripted like runCkpt.
func runStorage(t *testing.T, cfg sim.Config, twoLeaves bool, pol sim.Policy, jobs ...sim.JobSpec) *sim.Result {
	t.Helper()
	nodes := simtest.Nodes(2, 8)
	if twoLeaves {
		nodes[1].Leaf = 1
	}
	cfg.Cluster = simtest.Cluster(t, nodes)
	cfg.Jobs = jobs
	cfg.Policy = pol
	return simtest.RunConfig(t, cfg)
}

// sizes maps job ids to checkpoint sizes in GB.
func sizes(m map[string]float64) func(*sim.JobSpec) float64 {
	return func(s *sim.JobSpec) float64 { return m[string(s.ID)] }
}

func wantEnd(t *testing.T, res *sim.Result, id string, want float64) {
	t.Helper()
	if got := job(res, id).End.Seconds(); got != want {
		t.Errorf("job %s ends at %g s, want %g", id, got, want)
	}
}

func nearRel(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestStorageTwoSavesAtOnce works two checkpoints saving at once over one
// 10 GB/s storage by hand. Both jobs are 350 s long with a checkpoint every
// 100 s (saves at work 100, 200 and 300) and start at 0.
func TestStorageTwoSavesAtOnce(t *testing.T) {
	iv := sim.Seconds(100)
	a := simtest.MakeJob("a").GPUs(8).Dur(350).Obj()
	b := simtest.MakeJob("b").GPUs(8).Dur(350).Obj()
	cfg := func(m map[string]float64, perLeaf bool) sim.Config {
		return sim.Config{CheckpointInterval: iv, Storage: &sim.StorageConfig{
			BandwidthGBps: 10, PerDomain: perLeaf, Level: sim.LevelLeaf, SizeGB: sizes(m)}}
	}

	t.Run("equal sizes", func(t *testing.T) {
		// 100 GB each: alone 10 s; together 5 GB/s each, both done at 120
		// (not 110). The next saves (220, 340) collide again: 350 + 3 x 20.
		res := runStorage(t, cfg(map[string]float64{"a": 100, "b": 100}, false), false, &scripted{}, a, b)
		wantEnd(t, res, "a", 410)
		wantEnd(t, res, "b", 410)
		s := res.Storage
		if s.Saves != 6 || s.GBWritten != 600 || s.PeakConcurrent != 2 || s.PeakTotal != 2 {
			t.Errorf("stats %+v", *s)
		}
		if s.SaveSeconds != 120 || s.AloneSeconds != 60 || s.MaxSlowdown != 2 || s.MeanSlowdown() != 2 {
			t.Errorf("save seconds %g alone %g max slowdown %g mean %g, want 120 60 2 2", s.SaveSeconds, s.AloneSeconds, s.MaxSlowdown, s.MeanSlowdown())
		}
		if s.SaveGPUSeconds != 120*8 {
			t.Errorf("save GPU-seconds %g, want 960", s.SaveGPUSeconds)
		}
		if w := job(res, "a").Overhead.Seconds(); w != 60 {
			t.Errorf("overhead %g, want 60", w)
		}
		if s.JobSaves[0] != 3 || s.JobSaveTime[0] != sim.Seconds(60) || s.JobSizeGB[0] != 100 {
			t.Errorf("job a: %d saves, %s saving, %g GB", s.JobSaves[0], s.JobSaveTime[0], s.JobSizeGB[0])
		}
	})
	t.Run("unequal sizes", func(t *testing.T) {
		// a 50 GB, b 100 GB, both saving from 100 at 5 GB/s: a done at 110;
		// b has 50 GB left at the full 10 GB/s: done at 115 (alone: 110).
		// a: work 110-210, save alone 210-215; b reaches 200 at 215 and joins
		// as a's last byte is written: a done at 215, b 215-225 alone.
		// a: work 215-315, save 315-320, work 320-370.
		// b: work 225-325, save 325-335, work 335-385.
		res := runStorage(t, cfg(map[string]float64{"a": 50, "b": 100}, false), false, &scripted{}, a, b)
		wantEnd(t, res, "a", 370)
		wantEnd(t, res, "b", 385)
		s := res.Storage
		if s.Saves != 6 || s.GBWritten != 450 || s.SaveSeconds != 55 || s.AloneSeconds != 45 || s.MaxSlowdown != 2 {
			t.Errorf("stats %+v", *s)
		}
		if !nearRel(s.MeanSlowdown(), 55.0/45) {
			t.Errorf("mean slowdown %g, want %g", s.MeanSlowdown(), 55.0/45)
		}
	})
	t.Run("per-leaf storage", func(t *testing.T) {
		// each job in its own leaf with its own 10 GB/s: never shared.
		res := runStorage(t, cfg(map[string]float64{"a": 100, "b": 100}, true), true, &scripted{}, a, b)
		wantEnd(t, res, "a", 380)
		wantEnd(t, res, "b", 380)
		if s := res.Storage; s.Pools != 2 || s.PeakConcurrent != 1 || s.PeakTotal != 2 || s.MaxSlowdown != 1 {
			t.Errorf("stats %+v", *s)
		}
		// one leaf, per-leaf pools: as cluster-wide
		res = runStorage(t, cfg(map[string]float64{"a": 100, "b": 100}, true), false, &scripted{}, a, b)
		wantEnd(t, res, "a", 410)
	})
	t.Run("preempted while saving", func(t *testing.T) {
		// a (50 GB) and b (100 GB) save from 100 at 5 GB/s; a is preempted at
		// 105 and loses its save. b has written 25 GB and writes the other 75
		// alone: done at 112.5. a restarts at once from 0 (no restore):
		// work 105-205, save 205-210, work -310, save -315, work -415, save
		// -420, work -470. b: work 112.5-212.5, save -222.5, work -322.5,
		// save -332.5, work -382.5.
		res := runStorage(t, cfg(map[string]float64{"a": 50, "b": 100}, false), false,
			&scripted{acts: []action{{at: 105, job: "a"}}}, a, b)
		wantEnd(t, res, "a", 470)
		wantEnd(t, res, "b", 382.5)
		ja := job(res, "a")
		// run 1: 105 s, nothing kept (5 s of it saving); run 2: 15 s saving.
		if ja.Wasted.Seconds() != 120 || ja.Overhead.Seconds() != 20 {
			t.Errorf("a wasted %g overhead %g, want 120 20", ja.Wasted.Seconds(), ja.Overhead.Seconds())
		}
		if s := res.Storage; s.Interrupted != 1 || s.Saves != 6 || s.SaveSeconds != 5+15+12.5+20 {
			t.Errorf("stats %+v", *s)
		}
		// per job: a 3 saves and 5 + 15 s saving, b 3 saves and 32.5 s
		if s := res.Storage; s.JobSaves[0] != 3 || s.JobSaveTime[0] != sim.Seconds(20) || s.JobSaves[1] != 3 || s.JobSaveTime[1] != sim.Seconds(32.5) {
			t.Errorf("per job: saves %v time %v", s.JobSaves, s.JobSaveTime)
		}
	})
	t.Run("timeout while saving", func(t *testing.T) {
		// b's time limit (105 s) falls in its first save: it times out with
		// its work at the checkpoint not saved; a then saves alone.
		bw := simtest.MakeJob("b").GPUs(8).Dur(350).Wall(105).Obj()
		c := cfg(map[string]float64{"a": 100, "b": 100}, false)
		c.EnforceWalltime = true
		res := runStorage(t, c, false, &scripted{}, a, bw)
		jb := job(res, "b")
		if jb.State != sim.StateTimeout || jb.End.Seconds() != 105 || jb.Done.Seconds() != 100 {
			t.Errorf("b %s at %g with done %g, want timeout at 105 with 100", jb.State, jb.End.Seconds(), jb.Done.Seconds())
		}
		// a: 25 GB at 5 GB/s by 105, 75 GB alone: done at 112.5; then
		// saves alone: 350 + 12.5 + 10 + 10.
		wantEnd(t, res, "a", 382.5)
		// a walltime exactly its run completes (as in the closed form)
		aw := simtest.MakeJob("a").GPUs(8).Dur(350).Wall(380).Obj()
		res = runStorage(t, c, false, &scripted{}, aw)
		if ja := job(res, "a"); ja.State != sim.StateCompleted || ja.End.Seconds() != 380 {
			t.Errorf("a %s at %g, want completed at 380", ja.State, ja.End.Seconds())
		}
	})
}

// TestStorageMatchesFixedCost checks the job accounting against the closed
// form: one job alone on the storage saves in size/bandwidth, exactly like a
// fixed checkpointSaveCost of that duration (TestCheckpointCosts' cases).
func TestStorageMatchesFixedCost(t *testing.T) {
	fixed := sim.Config{CheckpointInterval: sim.Seconds(100), CheckpointSave: sim.Seconds(10), CheckpointRestore: sim.Seconds(20)}
	sto := fixed
	sto.CheckpointSave = 0
	sto.Storage = &sim.StorageConfig{BandwidthGBps: 4, SizeGB: func(*sim.JobSpec) float64 { return 40 }}
	j := simtest.MakeJob("a").GPUs(8).Dur(350).Obj()
	for _, tc := range []struct {
		name  string
		acts  []action
		speed sim.SpeedModel
	}{
		{"no preemption", nil, nil},
		{"preempt after two checkpoints", []action{{at: 250, job: "a"}}, nil},
		{"preempted while saving", []action{{at: 105, job: "a"}}, nil},
		{"preempted while restoring", []action{{at: 250, job: "a"}, {at: 260, job: "a"}}, nil},
		{"half speed", []action{{at: 250, job: "a"}}, half{}},
		{"suspend", []action{{at: 150, job: "a", mode: sim.PreemptSuspend}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cf, cs := fixed, sto
			cf.Speed, cs.Speed = tc.speed, tc.speed
			rf := runCkpt(t, cf, &scripted{acts: tc.acts}, j)
			rs := runCkpt(t, cs, &scripted{acts: tc.acts}, j)
			f, s := job(rf, "a"), job(rs, "a")
			if f.End != s.End || f.Wasted != s.Wasted || f.Overhead != s.Overhead || f.Done != s.Done || f.Preempted != s.Preempted {
				t.Errorf("fixed: end %s wasted %s overhead %s; storage: end %s wasted %s overhead %s",
					f.End, f.Wasted, f.Overhead, s.End, s.Wasted, s.Overhead)
			}
			if rs.Storage.MaxSlowdown > 1 {
				t.Errorf("a lone job's saves were slowed: %+v", *rs.Storage)
			}
		})
	}
}

// TestStorageConfigErrors: invalid settings fail NewEngine with a message.
func TestStorageConfigErrors(t *testing.T) {
	size := func(*sim.JobSpec) float64 { return 1 }
	for _, tc := range []struct {
		name string
		cfg  sim.Config
	}{
		{"zero bandwidth", sim.Config{Storage: &sim.StorageConfig{SizeGB: size}}},
		{"no size", sim.Config{Storage: &sim.StorageConfig{BandwidthGBps: 1}}},
		{"fixed save cost too", sim.Config{CheckpointSave: 1, Storage: &sim.StorageConfig{BandwidthGBps: 1, SizeGB: size}}},
		{"negative size", sim.Config{Storage: &sim.StorageConfig{BandwidthGBps: 1, SizeGB: func(*sim.JobSpec) float64 { return -1 }}}},
	} {
		tc.cfg.Cluster = simtest.Cluster(t, simtest.Nodes(1, 8))
		tc.cfg.Policy = &scripted{}
		tc.cfg.Jobs = []sim.JobSpec{simtest.MakeJob("a").GPUs(8).Dur(10).Obj()}
		if _, err := sim.NewEngine(tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}

// TestStorageAloneMatchesClosedForm is a differential test: with one storage
// pool per node and every job taking a whole node, no two saves ever share a
// pool, so each save takes size/bandwidth and every job's end, work, waste
// and overhead must equal the closed form's with checkpointSaveCost =
// size/bandwidth, under random workloads, preemptions (requeue and suspend),
// a speed model, restores and time limits.
func TestStorageAloneMatchesClosedForm(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r := sim.Stream(seed, "storage-diff")
		var jobs []sim.JobSpec
		var acts []action
		for i := range 12 {
			b := simtest.MakeJob(fmt.Sprintf("j%02d", i)).GPUs(8).Dur(float64(50 + r.IntN(400))).At(float64(r.IntN(300)))
			if r.IntN(3) == 0 {
				b = b.Wall(float64(100 + r.IntN(400)))
			}
			jobs = append(jobs, b.Obj())
			if r.IntN(2) == 0 {
				mode := sim.PreemptRequeue
				if r.IntN(3) == 0 {
					mode = sim.PreemptSuspend
				}
				acts = append(acts, action{at: float64(r.IntN(900)), job: fmt.Sprintf("j%02d", i), mode: mode})
			}
		}
		iv := sim.Seconds(float64(20 + r.IntN(80)))
		fixed := sim.Config{CheckpointInterval: iv, CheckpointSave: sim.Seconds(10), CheckpointRestore: sim.Seconds(float64(r.IntN(30))), EnforceWalltime: true}
		if seed%2 == 0 {
			fixed.Speed = half{}
		}
		sto := fixed
		sto.CheckpointSave = 0
		sto.Storage = &sim.StorageConfig{BandwidthGBps: 4, PerDomain: true, Level: sim.LevelNode, SizeGB: func(*sim.JobSpec) float64 { return 40 }}
		run := func(cfg sim.Config) *sim.Result {
			cfg.Cluster = simtest.Cluster(t, simtest.Nodes(4, 8))
			cfg.Jobs = jobs
			cfg.Policy = &scripted{acts: acts}
			res := simtest.RunConfig(t, cfg)
			return res
		}
		rf, rs := run(fixed), run(sto)
		for i := range rf.Jobs {
			f, s := &rf.Jobs[i], &rs.Jobs[i]
			if f.End != s.End || f.State != s.State || f.Done != s.Done || f.Wasted != s.Wasted || f.Overhead != s.Overhead || f.Preempted != s.Preempted {
				t.Fatalf("seed %d job %s: fixed %s at %s done %s wasted %s overhead %s; storage %s at %s done %s wasted %s overhead %s",
					seed, f.Spec.ID, f.State, f.End, f.Done, f.Wasted, f.Overhead, s.State, s.End, s.Done, s.Wasted, s.Overhead)
			}
		}
		pre, tout := 0, 0
		for i := range rs.Jobs {
			pre += int(rs.Jobs[i].Preempted)
			if rs.Jobs[i].State == sim.StateTimeout {
				tout++
			}
		}
		t.Logf("seed %d: %d saves, %d interrupted, %d preemptions, %d timeouts", seed, rs.Storage.Saves, rs.Storage.Interrupted, pre, tout)
		if rs.Storage.MaxSlowdown > 1 || rs.Storage.PeakConcurrent > 1 {
			t.Fatalf("seed %d: saves shared a pool: %+v", seed, rs.Storage)
		}
	}
}
