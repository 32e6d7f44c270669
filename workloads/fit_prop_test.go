package workloads

import (
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/gpusim/gpusim/sim"
)

// Any list of valid jobs either fits into a valid Synthetic that generates, or is
// rejected with an error; Fit never panics.
func TestFitProperty(t *testing.T) {
	classes := []sim.JobClass{"", sim.ClassTraining, sim.ClassExperiment, sim.ClassPreprocessing, sim.ClassBatchInference, sim.ClassServing, sim.ClassUnknown}
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 200).Draw(rt, "n")
		jobs := make([]sim.JobSpec, n)
		for i := range jobs {
			j := &jobs[i]
			j.ID = sim.JobID(itoa(i + 1))
			j.Submit = sim.Time(rapid.Int64Range(0, 10*int64(sim.Hour)*24).Draw(rt, "submit"))
			j.Class = rapid.SampledFrom(classes).Draw(rt, "class")
			j.Replicas = rapid.Int32Range(1, 4).Draw(rt, "replicas")
			j.GPUsPerReplica = rapid.Int32Range(0, 8).Draw(rt, "gpr")
			j.GPUMilli = sim.WholeGPU
			if j.Replicas == 1 && j.GPUsPerReplica == 1 {
				j.GPUMilli = sim.MilliGPU(rapid.Int32Range(1, 1000).Draw(rt, "milli"))
			}
			j.Duration = sim.Duration(rapid.Int64Range(0, int64(30*24*sim.Hour)).Draw(rt, "dur"))
			j.Walltime = sim.Duration(rapid.Int64Range(0, int64(60*24*sim.Hour)).Draw(rt, "wall"))
			j.Priority = rapid.Int32Range(-5, 5).Draw(rt, "pri")
			j.CPUMilli = rapid.Int64Range(0, 1<<20).Draw(rt, "cpu")
			j.MemoryMiB = rapid.Int64Range(0, 1<<22).Draw(rt, "mem")
			j.Queue = rapid.SampledFrom([]string{"", "a", "b"}).Draw(rt, "queue")
			j.Team = rapid.SampledFrom([]string{"", "x", "y"}).Draw(rt, "team")
			j.User = rapid.SampledFrom([]string{"", "u1", "u2", "u3", "u4"}).Draw(rt, "user")
		}
		s, err := Fit(jobs)
		if err != nil {
			return
		}
		if fe := s.Validate(); len(fe) > 0 {
			rt.Fatalf("fit invalid: %v", fe)
		}
		s.Jobs = min(s.Jobs, 50)
		if _, err := s.Generate(1, 64, 8); err != nil && !isNoGPU(err) {
			rt.Fatalf("generate from fit: %v", err)
		}
	})
}

func isNoGPU(err error) bool { return strings.Contains(err.Error(), "demands no GPU time") }
