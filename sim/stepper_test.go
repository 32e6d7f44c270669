package sim_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// stepperJobs is a small contended workload: gangs of 1..8 GPUs on 2x8 GPUs.
func stepperJobs() []sim.JobSpec {
	var jobs []sim.JobSpec
	for i := 0; i < 40; i++ {
		g := int32(1 << (i % 4))
		jobs = append(jobs, simtest.MakeJob(fmt.Sprintf("j%02d", i)).GPUs(g).Dur(float64(100+37*(i%7))).Wall(float64(2000)).At(float64(13*i)).Obj())
	}
	return jobs
}

// TestStepperMatchesRun: a stepper given its jobs (up front, or submitted in
// time order before each step) and stepped to the end gives Engine.Run's
// result: same job outcomes, log and samples.
func TestStepperMatchesRun(t *testing.T) {
	for _, pol := range []string{"fifo", "easy-backfill", "sjf"} {
		t.Run(pol, func(t *testing.T) {
			jobs := stepperJobs()
			cl := simtest.Cluster(t, simtest.Nodes(2, 8))
			p1, err := policies.New(pol, nil)
			if err != nil {
				t.Fatal(err)
			}
			cfg := sim.Config{Cluster: cl, Jobs: jobs, Policy: p1, Seed: 7, EnforceWalltime: true, SampleInterval: 60 * sim.Second}
			e, err := sim.NewEngine(cfg)
			if err != nil {
				t.Fatal(err)
			}
			want, err := e.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			// the same jobs, each made to arrive at its Submit time by the driver
			p2, _ := policies.New(pol, nil)
			cfg.Policy = p2
			s, err := sim.NewStepper(cfg)
			if err != nil {
				t.Fatal(err)
			}
			next := 0 // jobs are in JobRef order: sorted by (Submit, ID)
			for {
				t0 := s.Next()
				if next < len(jobs) && jobs[next].Submit < t0 {
					t0 = jobs[next].Submit
				}
				if t0 == sim.Never {
					break
				}
				var arr []sim.JobRef
				for next < len(jobs) && jobs[next].Submit == t0 {
					arr = append(arr, sim.JobRef(next))
					next++
				}
				if next == len(jobs) {
					s.Done()
				}
				if err := s.Step(t0, arr); err != nil {
					t.Fatal(err)
				}
			}
			got := s.Result()
			if g, w := simtest.Schedule(got), simtest.Schedule(want); g != w {
				t.Fatalf("schedules differ:\n got %s\nwant %s", g, w)
			}
			if !reflect.DeepEqual(got.Samples, want.Samples) || got.End != want.End || got.Makespan != want.Makespan || got.BusyMilliSeconds != want.BusyMilliSeconds {
				t.Fatalf("result differs: end %v/%v makespan %v/%v busy %v/%v", got.End, want.End, got.Makespan, want.Makespan, got.BusyMilliSeconds, want.BusyMilliSeconds)
			}
			for i := range want.Jobs {
				a, b := &got.Jobs[i], &want.Jobs[i]
				if a.Spec.ID != b.Spec.ID || a.State != b.State || a.FirstStart != b.FirstStart || a.End != b.End {
					t.Fatalf("job %d: got %s %s %v-%v, want %s %s %v-%v", i, a.Spec.ID, a.State, a.FirstStart, a.End, b.Spec.ID, b.State, b.FirstStart, b.End)
				}
			}
		})
	}
}

// TestStepperErrors: bad steps and arrivals are errors, not panics.
func TestStepperErrors(t *testing.T) {
	pol, _ := policies.New("fifo", nil)
	jobs := []sim.JobSpec{simtest.MakeJob("a").GPUs(1).Dur(10).At(5).Obj()}
	s, err := sim.NewStepper(sim.Config{Cluster: simtest.Cluster(t, simtest.Nodes(1, 8)), Policy: pol, Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	at := func(sec float64) sim.Time { return sim.Time(sim.Seconds(sec)) }
	if err := s.Step(at(5), []sim.JobRef{0}); err != nil {
		t.Fatal(err)
	}
	if err := s.Step(at(20), nil); err == nil {
		t.Fatal("step past the next event: no error")
	}
	if err := s.Step(at(15), []sim.JobRef{0}); err == nil {
		t.Fatal("second arrival of a job: no error")
	}
	if err := s.Step(at(3), nil); err == nil {
		t.Fatal("step back in time: no error")
	}
	if err := s.Step(at(15), []sim.JobRef{7}); err == nil {
		t.Fatal("arrival of an unknown job: no error")
	}
}
