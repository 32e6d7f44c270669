package simtest

import (
	"slices"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// ExactEnds is a sim.Backend that ends every run exactly its duration after
// it started: it maps each running job to the end of its current run.
type ExactEnds map[sim.JobRef]sim.Time

// Start records j's current run's end (start + duration).
func (b ExactEnds) Start(j *sim.Job) error { b[j.Ref] = j.LastStart.Add(j.Spec.Duration); return nil }

// Stop forgets p.Job's run.
func (b ExactEnds) Stop(p *sim.Preempt) error { delete(b, p.Job); return nil }

// DriveLive drives l, whose backend is ends, as a live backend would: jobs
// (sorted by Submit) are submitted at their Submit times, each run ends at
// the time ends holds for it, and l schedules at every such instant and at
// its own timers, until every job is submitted and no run is left. Runs
// ending at one instant are reported in job order. It fails t on any error
// of l.
func DriveLive(t testing.TB, l *sim.Live, jobs []sim.JobSpec, ends ExactEnds) {
	t.Helper()
	next := 0
	for next < len(jobs) || len(ends) > 0 {
		t0 := sim.Never
		if next < len(jobs) {
			t0 = jobs[next].Submit
		}
		for _, at := range ends {
			t0 = min(t0, at)
		}
		t0 = min(t0, l.NextTimer())
		var ended []sim.Ended
		for r, at := range ends {
			if at <= t0 {
				ended = append(ended, sim.Ended{Job: r})
				delete(ends, r)
			}
		}
		slices.SortFunc(ended, func(a, b sim.Ended) int { return int(a.Job) - int(b.Job) })
		if err := l.Advance(t0, ended); err != nil {
			t.Fatal(err)
		}
		for next < len(jobs) && jobs[next].Submit <= t0 {
			if _, err := l.Submit(jobs[next]); err != nil {
				t.Fatal(err)
			}
			next++
		}
		if err := l.Schedule(false); err != nil {
			t.Fatal(err)
		}
	}
}
