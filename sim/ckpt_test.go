package sim_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// action is one scripted preemption.
type action struct {
	at    float64 // seconds
	job   string
	mode  sim.PreemptMode
	grace float64
}

// scripted starts pending jobs whenever possible (a suspended job on its own
// nodes, others on the first node with enough free GPUs) and preempts jobs at the
// scripted times. resumeAt, if set, holds suspended job ids until that time.
type scripted struct {
	acts     []action
	resumeAt float64
	// moveSuspended resumes suspended jobs on another node (must fail).
	moveSuspended bool
	errs          []error
}

func (s *scripted) Name() string { return "scripted" }

func (s *scripted) Schedule(v *sim.View, p *sim.Plan) error {
	now := v.Now().Seconds()
	for _, a := range s.acts {
		if a.at == now {
			for _, j := range v.Running() {
				if string(j.Spec.ID) == a.job {
					if err := p.AddPreemptAfterGrace(j.Ref, a.mode, "script", sim.Seconds(a.grace)); err != nil {
						s.errs = append(s.errs, err)
					}
					break
				}
			}
		} else if a.at > now {
			p.Wake(sim.Time(sim.Seconds(a.at)))
		}
	}
	if s.resumeAt > now {
		p.Wake(sim.Time(sim.Seconds(s.resumeAt)))
	}
	c := v.Cluster()
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if j.Suspended() && now < s.resumeAt {
			j = next
			continue
		}
		g := j.Spec.GPUsPerReplica
		var nodes []sim.NodeID
		var gpus []sim.GPUID
		for n := sim.NodeID(0); int(n) < c.NumNodes(); n++ {
			if j.Suspended() && !s.moveSuspended && n != j.Nodes[0] || j.Suspended() && s.moveSuspended && n == j.Nodes[0] {
				continue
			}
			if c.NodeFreeGPUs(n) < g {
				continue
			}
			first, end := c.NodeGPUs(n)
			for gpu := first; gpu < end && int32(len(gpus)) < g; gpu++ {
				if c.GPUUsed(gpu) == 0 {
					gpus = append(gpus, gpu)
				}
			}
			nodes = []sim.NodeID{n}
			break
		}
		if nodes != nil {
			if err := p.AddStart(j.Ref, nodes, gpus); err != nil {
				s.errs = append(s.errs, err)
				return nil
			}
		}
		j = next
	}
	return nil
}

func runCkpt(t *testing.T, cfg sim.Config, pol sim.Policy, jobs ...sim.JobSpec) *sim.Result {
	t.Helper()
	res, err := runCkptErr(t, cfg, pol, jobs...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func runCkptErr(t *testing.T, cfg sim.Config, pol sim.Policy, jobs ...sim.JobSpec) (*sim.Result, error) {
	t.Helper()
	cfg.Cluster = simtest.Cluster(t, simtest.Nodes(2, 8))
	cfg.Jobs = jobs
	cfg.Policy = pol
	e, err := sim.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e.Run(context.Background())
}

func job(res *sim.Result, id string) *sim.Job {
	for i := range res.Jobs {
		if string(res.Jobs[i].Spec.ID) == id {
			return &res.Jobs[i]
		}
	}
	return nil
}

func secs(d sim.Duration) float64 { return d.Seconds() }

// TestCheckpointCosts works the periodic checkpoint model by hand: interval 100 s,
// save 10 s, restore 20 s, a 350 s job.
func TestCheckpointCosts(t *testing.T) {
	cfg := sim.Config{CheckpointInterval: sim.Seconds(100), CheckpointSave: sim.Seconds(10), CheckpointRestore: sim.Seconds(20)}
	j := simtest.MakeJob("a").GPUs(8).Dur(350).Obj()

	t.Run("no preemption", func(t *testing.T) {
		// saves at work 100, 200, 300: 350 + 3 x 10 s.
		res := runCkpt(t, cfg, &scripted{}, j)
		a := job(res, "a")
		if got := a.End.Seconds(); got != 380 {
			t.Errorf("end %g, want 380", got)
		}
		if secs(a.Wasted) != 30 || secs(a.Overhead) != 30 {
			t.Errorf("wasted %g overhead %g, want 30 30", secs(a.Wasted), secs(a.Overhead))
		}
	})
	t.Run("preempt after two checkpoints", func(t *testing.T) {
		// 0-100 work, 100-110 save (ckpt 100), 110-210 work, 210-220 save (ckpt
		// 200), 220-250 work: preempted at 250 with Done = 200; 30 s of work and two
		// saves are wasted. It restarts at 250 (free GPUs): restore 20 s, 150 s of
		// work with one save at 300: 180 s -> ends at 430.
		res := runCkpt(t, cfg, &scripted{acts: []action{{at: 250, job: "a"}}}, j)
		a := job(res, "a")
		if got := a.End.Seconds(); got != 430 {
			t.Errorf("end %g, want 430", got)
		}
		if a.Preempted != 1 {
			t.Errorf("preempted %d", a.Preempted)
		}
		// wasted: run 1 250 - 200 = 50; run 2 restore 20 + save 10 = 30.
		if secs(a.Wasted) != 80 || secs(a.Overhead) != 50 {
			t.Errorf("wasted %g overhead %g, want 80 50", secs(a.Wasted), secs(a.Overhead))
		}
	})
	t.Run("preempted while saving", func(t *testing.T) {
		// at 105 the first checkpoint is half written: nothing survives.
		res := runCkpt(t, cfg, &scripted{acts: []action{{at: 105, job: "a"}}}, j)
		a := job(res, "a")
		// restart at 105: 20 + 350 + 30 = 400 -> 505
		if got := a.End.Seconds(); got != 505 {
			t.Errorf("end %g, want 505", got)
		}
		if secs(a.Wasted) != 105+50 {
			t.Errorf("wasted %g, want 155", secs(a.Wasted))
		}
	})
	t.Run("checkpoint on signal", func(t *testing.T) {
		c := cfg
		c.CheckpointOnSignal = true
		// stopped at 250 after a 15 s grace: it saved at 240 with work 220.
		// Restart: 20 + 130 + 1 save (300) = 160 -> 410.
		res := runCkpt(t, c, &scripted{acts: []action{{at: 250, job: "a", grace: 15}}}, j)
		a := job(res, "a")
		if got := a.End.Seconds(); got != 410 {
			t.Errorf("end %g, want 410", got)
		}
		// grace shorter than the save: falls back to the periodic checkpoint (200).
		res = runCkpt(t, c, &scripted{acts: []action{{at: 250, job: "a", grace: 5}}}, j)
		if got := job(res, "a").End.Seconds(); got != 430 {
			t.Errorf("short grace: end %g, want 430", got)
		}
	})
	t.Run("speed model scales work", func(t *testing.T) {
		// a job at half speed: 0-200 work (100), save 200-210, ...
		c := cfg
		c.Speed = half{}
		res := runCkpt(t, c, &scripted{acts: []action{{at: 250, job: "a"}}}, j)
		a := job(res, "a")
		// run 1: work 100 at 200, save to 210, work 20 by 250 -> Done 100.
		// run 2 from 250: restore 20 + 250 work x 2 = 500 + saves at 200, 300 = 20 -> 540 -> 790
		if got := a.End.Seconds(); got != 790 {
			t.Errorf("end %g, want 790", got)
		}
	})
}

type half struct{}

func (half) Speed(*sim.Cluster, *sim.Job) float64 { return 0.5 }

func TestPreemptionProtection(t *testing.T) {
	cfg := sim.Config{PreemptMinRuntime: sim.Seconds(60), PreemptAntiChurn: sim.Seconds(300)}
	j := simtest.MakeJob("a").GPUs(8).Dur(1000).Obj()
	// Preemptible at 30 (min runtime: no), 60 (yes: preempted, restarts at 60,
	// protected until max(60+60, 60+300) = 360), 200 (no), 360 (yes).
	pol := &polite{scripted: scripted{acts: []action{{at: 30, job: "a"}, {at: 60, job: "a"}, {at: 200, job: "a"}, {at: 360, job: "a"}}}}
	res := runCkpt(t, cfg, pol, j)
	if got, want := strings.Join(pol.log, " "), "30:false 60:true 200:false 360:true"; got != want {
		t.Errorf("preemptible %s, want %s", got, want)
	}
	if a := job(res, "a"); a.Preempted != 2 {
		t.Errorf("preempted %d, want 2", a.Preempted)
	}
	// preempting a protected job fails the run with a plan error
	_, err := runCkptErr(t, cfg, &scripted{acts: []action{{at: 30, job: "a"}}}, j)
	if err == nil || !strings.Contains(err.Error(), "protected from preemption until t=") {
		t.Errorf("err %v", err)
	}
}

// polite preempts only jobs that are preemptible and logs the answers.
type polite struct {
	scripted
	log []string
}

func (p *polite) Schedule(v *sim.View, pl *sim.Plan) error {
	now := v.Now().Seconds()
	keep := p.acts
	var acts []action
	for _, a := range keep {
		if a.at == now {
			for _, j := range v.Running() {
				if string(j.Spec.ID) == a.job {
					ok := j.Preemptible(v.Now())
					p.log = append(p.log, fmt.Sprintf("%g:%v", now, ok))
					if ok {
						acts = append(acts, a)
					}
				}
			}
		} else {
			acts = append(acts, a)
		}
	}
	p.acts = acts
	err := p.scripted.Schedule(v, pl)
	p.acts = keep
	return err
}

func TestSuspend(t *testing.T) {
	mem := simtest.MakeJob("a").GPUs(8).Dur(100).Obj()
	mem.MemoryMiB = 1000
	// suspended at 40 and resumed at 70 on the same node: no work lost, ends 130.
	pol := &scripted{acts: []action{{at: 40, job: "a", mode: sim.PreemptSuspend}}, resumeAt: 70}
	cfg := sim.Config{CheckpointRestore: sim.Seconds(20)} // no restore cost on resume
	res := runCkpt(t, cfg, pol, mem)
	a := job(res, "a")
	if len(pol.errs) > 0 {
		t.Fatal(pol.errs)
	}
	if a.End.Seconds() != 130 || a.Preempted != 1 || a.Wasted != 0 {
		t.Errorf("end %g preempted %d wasted %g, want 130 1 0", a.End.Seconds(), a.Preempted, secs(a.Wasted))
	}
	if !strings.Contains(simtest.Schedule(res), "t=40 suspend a") {
		t.Errorf("schedule:\n%s", simtest.Schedule(res))
	}
	// memory stays allocated while suspended: observed by a policy at t=50
	probe := &memProbe{scripted: scripted{acts: pol.acts, resumeAt: 70}}
	res = runCkpt(t, cfg, probe, mem)
	if probe.seen != 1000 {
		t.Errorf("memory allocated on the node while suspended: %d MiB, want 1000", probe.seen)
	}
	_ = res
	// resuming elsewhere is refused
	mv := &scripted{acts: pol.acts, resumeAt: 70, moveSuspended: true}
	if _, err := runCkptErr(t, cfg, mv, mem); err == nil || !strings.Contains(err.Error(), "must resume on node n0") {
		t.Errorf("err %v, want a refusal to move", err)
	}
}

type memProbe struct {
	scripted
	seen int64
}

func (m *memProbe) Schedule(v *sim.View, p *sim.Plan) error {
	if v.Now().Seconds() == 50 {
		c := v.Cluster()
		m.seen = c.Node(0).MemoryMiB - c.NodeFreeMemory(0)
	}
	p.Wake(sim.Time(sim.Seconds(50)))
	return m.scripted.Schedule(v, p)
}

// pingPong preempts whatever runs and starts the other job, forever.
type pingPong struct{ scripted }

func (p *pingPong) Schedule(v *sim.View, pl *sim.Plan) error {
	if r := v.Running(); len(r) > 0 {
		if err := pl.AddPreempt(r[0].Ref, sim.PreemptRequeue, "ping-pong"); err != nil {
			return err
		}
	}
	pl.Wake(v.Now() + sim.Time(sim.Second))
	return p.scripted.Schedule(v, pl)
}

func TestLivelockStopsTheRun(t *testing.T) {
	a := simtest.MakeJob("a").GPUs(8).Dur(100).Obj()
	b := simtest.MakeJob("b").GPUs(8).Dur(100).Obj()
	_, err := runCkptErr(t, sim.Config{LivelockPreemptions: 50}, &pingPong{}, a, b)
	if !errors.Is(err, sim.ErrLivelock) || !strings.Contains(err.Error(), "50 preemptions and no job finished since t=0s") {
		t.Fatalf("err = %v", err)
	}
	// with a minimum run time every run completes
	if _, err := runCkptErr(t, sim.Config{LivelockPreemptions: 50, PreemptMinRuntime: sim.Seconds(100)}, &politePingPong{}, a, b); err != nil {
		t.Fatal(err)
	}
}

type politePingPong struct{ scripted }

func (p *politePingPong) Schedule(v *sim.View, pl *sim.Plan) error {
	if r := v.Running(); len(r) > 0 && r[0].Preemptible(v.Now()) {
		if err := pl.AddPreempt(r[0].Ref, sim.PreemptRequeue, "ping-pong"); err != nil {
			return err
		}
	}
	if len(v.Running()) > 0 || v.PendingCount() > 0 {
		pl.Wake(v.Now() + sim.Time(sim.Second))
	}
	return p.scripted.Schedule(v, pl)
}

// TestLease works PreemptLease by hand: a 350 s job leased out at 100 s and 250 s
// keeps all its work each time (no checkpoints configured, so a requeue would
// lose everything); with restore 20 s each restart costs 20 s. At half speed the
// work kept is half the wall time.
func TestLease(t *testing.T) {
	j := simtest.MakeJob("a").GPUs(8).Dur(350).Obj()
	acts := []action{{at: 100, job: "a", mode: sim.PreemptLease}, {at: 250, job: "a", mode: sim.PreemptLease}}
	res := runCkpt(t, sim.Config{}, &scripted{acts: acts}, j)
	a := job(res, "a")
	if a.End.Seconds() != 350 || a.Preempted != 2 || a.Wasted != 0 {
		t.Errorf("end %g preempted %d wasted %s, want 350 2 0", a.End.Seconds(), a.Preempted, a.Wasted)
	}
	// restarts at 100 and 250 each pay 20 s: work 0-100, 120-250 (130), 270-390 (120).
	res = runCkpt(t, sim.Config{CheckpointRestore: sim.Seconds(20)}, &scripted{acts: acts}, j)
	if a := job(res, "a"); a.End.Seconds() != 390 || secs(a.Overhead) != 40 {
		t.Errorf("with restore: end %g overhead %g, want 390 40", a.End.Seconds(), secs(a.Overhead))
	}
	// half speed: 100 s of wall = 50 s of work kept at each lease end.
	res = runCkpt(t, sim.Config{Speed: half{}}, &scripted{acts: acts}, j)
	if a := job(res, "a"); a.End.Seconds() != 700 || a.Done != a.Spec.Duration {
		t.Errorf("half speed: end %g done %s, want 700 and all work", a.End.Seconds(), a.Done)
	}
	// a requeue at the same times loses the work: 100 + 150 + 350 = 600.
	acts[0].mode, acts[1].mode = sim.PreemptRequeue, sim.PreemptRequeue
	if a := job(runCkpt(t, sim.Config{}, &scripted{acts: acts}, j), "a"); a.End.Seconds() != 600 {
		t.Errorf("requeue: end %g, want 600", a.End.Seconds())
	}
}
