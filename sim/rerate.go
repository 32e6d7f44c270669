package sim

import (
	"errors"
	"fmt"
	"math"
)

// Re-rating elastic jobs (issue 14 §4, docs/elastic.md "Rate changes").
//
// A job whose throughput changes while it keeps its replicas (a Pollux job
// re-picking its batch size every reporting interval and at every epoch
// boundary, adaptdl's sched_hints) tells the engine so with Plan.AddRate. A
// rate change is free: no checkpoint, no restart, no event in the log. The
// engine cuts the run into a new progress segment exactly as a resize or a
// telemetry straggler does: the work done so far at the old speed is kept, the
// rest of a restore or rescale delay still due is paid at the start of the new
// segment, and the job's end event is recomputed at the new speed. The rate
// holds until the next AddRate, resize, stop or start (which take the spec's
// ElasticRate again).

// Rerate sets running elastic job Job's throughput factor to Rate (work units
// per µs of wall time, as ElasticRate.Rate returns) from now.
type Rerate struct {
	Job  JobRef
	Rate float64
}

// AddRate sets running elastic job j's rate to rate from now (see Rerate).
// Bound to an engine, it applies it at once: the work done so far is kept,
// and the speed model's factor (Config.Speed) still multiplies the rate. A
// rate equal to the job's current one changes nothing and is not recorded.
// It returns a *PlanError if j is not a running elastic job, rate is not
// finite and > 0, or the scenario has periodic checkpoints with a save cost
// (a save in progress would be cut).
func (p *Plan) AddRate(j JobRef, rate float64) error {
	if p.eng != nil {
		changed, err := p.eng.applyRate(j, rate)
		if err != nil {
			return p.fail(fmt.Sprintf("rates[%d] (job %s)", len(p.Rates), p.eng.jobName(j)), err)
		}
		if !changed {
			return nil
		}
	}
	p.Rates = append(p.Rates, Rerate{Job: j, Rate: rate})
	return nil
}

func (e *Engine) applyRate(r JobRef, rate float64) (bool, error) {
	if r < 0 || int(r) >= len(e.jobs) {
		return false, fmt.Errorf("unknown job ref %d", r)
	}
	j := &e.jobs[r]
	if j.Spec.Elastic == nil {
		return false, errors.New("job is not elastic")
	}
	if j.State != StateRunning {
		return false, fmt.Errorf("job is %s, not running", j.State)
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return false, fmt.Errorf("rate %v: must be finite and > 0", rate)
	}
	if e.ivOf(j) > 0 && e.cfg.CheckpointSave > 0 {
		return false, errors.New("rate changes are not supported with periodic checkpoint saves")
	}
	s := rate
	if e.cfg.Speed != nil {
		s *= e.cfg.Speed.Speed(e.cluster, j)
		if !(s > 0) || math.IsInf(s, 0) {
			return false, fmt.Errorf("speed model returned %v", s/rate)
		}
	}
	if s == j.speed {
		return false, nil
	}
	el := Duration(e.now - j.LastStart)
	done, _, ovh := e.runProgress(j, el)
	rest := max(0, j.runRestore-el)
	j.Overhead += ovh
	j.Wasted += ovh // all work is kept: only the restore time is lost
	j.Done = done
	j.usedWall += el
	j.LastStart, j.runDone, j.runRestore = e.now, done, rest
	j.speed = s
	e.elastic.Rerates[r]++
	e.queueEnd(j) // the old end event becomes stale
	return true, nil
}
