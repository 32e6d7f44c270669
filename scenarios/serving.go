package scenarios

import (
	"fmt"
	"sort"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// ServingClass is one class's entry of the scenario block `serving:`
// (docs/serving.md): every job of that class becomes a serving job with this
// request load and P99 latency SLA (sim.ServingSpec).
type ServingClass struct {
	// Rate is the request rate (requests/s) before the first rateSeries point,
	// or always without one.
	Rate float64 `yaml:"rate"`
	// RateSeries changes the rate at times of the run (virtual time since its
	// start, strictly increasing): a step function.
	RateSeries []ServingRatePoint `yaml:"rateSeries"`
	// ServiceTime is one request's time on the job's GPU at full speed.
	ServiceTime policies.Dur `yaml:"serviceTime"`
	// SLA bounds the predicted P99 response time.
	SLA policies.Dur `yaml:"sla"`
}

// ServingRatePoint is one step of ServingClass.RateSeries.
type ServingRatePoint struct {
	At   policies.Dur `yaml:"at"`
	Rate float64      `yaml:"rate"`
}

func (c *ServingClass) spec() *sim.ServingSpec {
	sp := &sim.ServingSpec{Rate: c.Rate, Service: sim.Duration(c.ServiceTime), SLA: sim.Duration(c.SLA)}
	for _, p := range c.RateSeries {
		sp.Series = append(sp.Series, sim.RatePoint{At: sim.Time(p.At), Rate: p.Rate})
	}
	return sp
}

func (s *Scenario) servingClasses() []string {
	classes := make([]string, 0, len(s.Serving))
	for cls := range s.Serving {
		classes = append(classes, cls)
	}
	sort.Strings(classes)
	return classes
}

// validateServing checks the `serving:` block; each problem names its field.
func (s *Scenario) validateServing() sim.FieldErrors {
	var fe sim.FieldErrors
	for _, cls := range s.servingClasses() {
		c := s.Serving[cls]
		path := "serving." + cls
		if _, err := sim.ParseClass(cls); err != nil || cls == "" {
			fe.Add(path, "unknown job class %q", cls)
		}
		if !(c.Rate >= 0) || c.Rate > 1e12 {
			fe.Add(path+".rate", "must be a number of requests/s in [0, 1e12]")
		}
		if c.ServiceTime <= 0 {
			fe.Add(path+".serviceTime", "must be > 0 (e.g. 10ms)")
		}
		if c.SLA <= 0 {
			fe.Add(path+".sla", "must be > 0 (e.g. 100ms)")
		}
		for i, p := range c.RateSeries {
			pp := fmt.Sprintf("%s.rateSeries[%d]", path, i)
			if p.At < 0 || i > 0 && p.At <= c.RateSeries[i-1].At {
				fe.Add(pp+".at", "must be >= 0 and after the previous point")
			}
			if !(p.Rate >= 0) || p.Rate > 1e12 {
				fe.Add(pp+".rate", "must be a number of requests/s in [0, 1e12]")
			}
		}
	}
	return fe
}

// applyServing makes every job of a class listed in `serving:` a serving job
// (one shared, prepared sim.ServingSpec per class).
func (s *Scenario) applyServing(jobs []sim.JobSpec) error {
	if len(s.Serving) == 0 {
		return nil
	}
	specs := map[sim.JobClass]*sim.ServingSpec{}
	for _, cls := range s.servingClasses() {
		c := s.Serving[cls]
		sp := c.spec()
		if err := sp.Prepare(); err != nil {
			return s.fieldErr("serving."+cls, err)
		}
		specs[sim.JobClass(cls)] = sp
	}
	for i := range jobs {
		if jobs[i].Serving == nil {
			jobs[i].Serving = specs[jobs[i].Class]
		}
	}
	return nil
}
