package scenarios

import (
	"math"
	"testing"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// pinBoth starts every pending job on GPU 0.
type pinBoth struct{}

func (pinBoth) Name() string { return "pin" }
func (pinBoth) Schedule(v *sim.View, p *sim.Plan) error {
	for j := v.PendingHead(); j != nil; {
		next := v.NextPending(j)
		if err := p.AddStart(j.Ref, []sim.NodeID{0}, []sim.GPUID{0}); err != nil {
			return err
		}
		j = next
	}
	return nil
}

// Every measured pair of the loop example's matrix, end to end through the
// engine: two jobs of the pair's workloads time-slice one GPU of the matrix's
// model until their walltime W = 1000 s, and each has done exactly
// floor(W x its measured factor) of work (the rate-based rounding rule), i.e.
// they progress at the measured ratio. A GPU of another model falls back.
func TestMeasuredPairsProgressAtTheirFactors(t *testing.T) {
	m, err := calibrate.LoadInterference("../examples/sharing/interference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := newTableInterference(InterferenceSpec{Default: 0.5}, m)
	if err != nil {
		t.Fatal(err)
	}
	const W = 1000 * sim.Second
	pairs := 0
	for _, mr := range m.Modes {
		mode, _ := sim.ParseSharingMode(mr.Mode)
		for _, g := range mr.Groups {
			if len(g.Members) != 2 {
				continue
			}
			a, b := g.Members[0], g.Members[1]
			fa, fb := a.Mean, b.Mean
			if a.Workload == b.Workload {
				fa = (a.Mean + b.Mean) / 2
				fb = fa
			}
			for _, model := range []string{m.Metadata.GPUModel, "other-model"} {
				c, err := sim.NewCluster([]sim.NodeSpec{{Name: "n", GPUModel: model, GPUs: 1, GPUMemMiB: 80000, CPUMilli: 1000, MemoryMiB: 1000, Sharing: mode}})
				if err != nil {
					t.Fatal(err)
				}
				jobs := []sim.JobSpec{
					{ID: "a", Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: 1e6 * sim.Second, Walltime: W, Sharing: sim.AcceptAny, Workload: a.Workload},
					{ID: "b", Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: 1e6 * sim.Second, Walltime: W, Sharing: sim.AcceptAny, Workload: b.Workload},
				}
				res := simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: pinBoth{}, EnforceWalltime: true, Sharing: &sim.SharingConfig{Interference: in}})
				wa, wb := fa, fb
				if model != m.Metadata.GPUModel {
					wa, wb = 0.5, 0.5 // the fallback default (no switch overhead configured)
				} else {
					pairs++
					if res.Sharing.Measured != 1 {
						t.Errorf("%s %s+%s: measured %d", mr.Mode, a.Workload, b.Workload, res.Sharing.Measured)
					}
				}
				for k, want := range []float64{wa, wb} {
					j := &res.Jobs[k]
					if got, exp := j.Done, floorWork(W, want); j.State != sim.StateTimeout || got != exp {
						t.Errorf("%s on %s, %s+%s: job %s %s with %d µs done, want %d (factor %v)", mr.Mode, model, a.Workload, b.Workload, j.Spec.ID, j.State, got, exp, want)
					}
				}
			}
		}
	}
	if pairs < 12 {
		t.Fatalf("only %d measured pairs checked", pairs)
	}
}

func floorWork(w sim.Duration, s float64) sim.Duration {
	x := float64(w) * s
	f := math.Floor(x)
	if f+1-x <= x*4e-16 {
		f++
	}
	return sim.Duration(f)
}

// Lookups through the Table adapter do not depend on the order of the jobs, give
// the matrix's factors, and an unknown workload uses the fallback (default x
// (1 - switch overhead) in time slicing). They do not allocate.
func TestTableInterferenceOrderAndFallback(t *testing.T) {
	m, err := calibrate.LoadInterference("../examples/sharing/interference.yaml")
	if err != nil {
		t.Fatal(err)
	}
	in, err := newTableInterference(InterferenceSpec{Default: 0.6, SwitchOverhead: 0.1}, m)
	if err != nil {
		t.Fatal(err)
	}
	spin, _ := in.WorkloadID("spin")
	hash, _ := in.WorkloadID("hash")
	f1, f2 := make([]float64, 2), make([]float64, 2)
	model := m.Metadata.GPUModel
	if !in.Factors(model, sim.ShareTimeSlice, []int32{spin, hash}, []float64{0, 0}, f1) || !in.Factors(model, sim.ShareTimeSlice, []int32{hash, spin}, []float64{0, 0}, f2) {
		t.Fatal("spin+hash not measured")
	}
	if f1[0] != f2[1] || f1[1] != f2[0] {
		t.Errorf("order changed the factors: %v vs %v", f1, f2)
	}
	if want, ok := m.Factor("timeslice", "spin", "hash"); !ok || f1[0] != want {
		t.Errorf("spin's factor %v, matrix %v", f1[0], want)
	}
	if in.Factors(model, sim.ShareTimeSlice, []int32{spin, -1}, []float64{0, 0}, f1) || math.Abs(f1[0]-0.6*0.9) > 1e-15 || math.Abs(f1[1]-0.6*0.9) > 1e-15 {
		t.Errorf("unknown workload: %v, want the fallback %v", f1, 0.6*0.9)
	}
	if allocs := testing.AllocsPerRun(100, func() { in.Factors(model, sim.ShareMPS, []int32{hash, spin}, []float64{0, 0}, f1) }); allocs != 0 {
		t.Errorf("Factors allocates %v times", allocs)
	}
}
