package scenarios

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/sim"
)

// utilInterf is the utilisation model as a test Interference: each of the jobs
// on a GPU runs at min(1, 1 / sum of their solo sm_util), times (1 - overhead).
type utilInterf struct{ overhead float64 }

func (utilInterf) WorkloadID(string) (int32, bool) { return -1, false }

func (u utilInterf) Factors(_ string, _ sim.SharingMode, _ []int32, solo []float64, out []float64) bool {
	s := 0.0
	for _, x := range solo {
		s += x
	}
	for i := range out {
		out[i] = min(1, 1/s) * (1 - u.overhead)
	}
	return false
}

// QoS property (issue 12 item 5): on 120 random instances per policy (2 nodes of
// 2-4 time-slicing GPUs with 2-3 clients; 6-18 jobs: serving jobs with random
// load, service time and an SLA met alone with 5-300 % slack, 1-GPU shareable
// experiments with random sm_util, some 2-GPU gangs), no co-location policy
// (fifo + best-fit, gandiva, antman, lucid, fifo + pack greedy) ever runs a
// serving job at a speed below its ServingMinSpeed, so its predicted P99 is
// within its SLA at every instant (no violation time, every recorded point
// within the SLA), and under the packer every job's speed stays >= 1 /
// maxSlowdown at every instant. Some instances co-locate training with serving
// (the bound is exercised in both directions: admitted and refused joins).
func TestServingQoSProperty(t *testing.T) {
	pols := []struct {
		name, params string
		pack         bool
	}{
		{"fifo", "{placement: best-fit, strict: false}", false},
		{"gandiva", "{}", false},
		{"antman", "{opportunisticClasses: [experiment]}", false},
		{"lucid", "{}", false},
		{"fifo", "{placement: \"pack:mode=greedy,maxSlowdown=2\", strict: false}", true},
	}
	for _, pp := range pols {
		t.Run(pp.name+pp.params, func(t *testing.T) {
			coloc, tight := 0.0, 0
			for seed := uint64(1); seed <= 120; seed++ {
				r := rand.New(rand.NewPCG(seed, 99))
				clients := int32(2 + r.IntN(2))
				nodes := make([]sim.NodeSpec, 2)
				for i := range nodes {
					nodes[i] = sim.NodeSpec{Name: fmt.Sprintf("n%d", i), GPUModel: "h100", GPUs: int32(2 + r.IntN(3)), GPUMemMiB: 80000,
						CPUMilli: 64000, MemoryMiB: 1 << 20, Sharing: sim.ShareTimeSlice, SharingClients: clients}
				}
				c, err := sim.NewCluster(nodes)
				if err != nil {
					t.Fatal(err)
				}
				n := 6 + r.IntN(13)
				jobs := make([]sim.JobSpec, n)
				for i := range jobs {
					j := sim.JobSpec{ID: sim.JobID(fmt.Sprintf("j%02d", i)), Submit: sim.Time(sim.Seconds(float64(r.IntN(600)))),
						Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: sim.Seconds(float64(60 + r.IntN(1800))),
						Sharing: sim.AcceptAny, SMUtil: 0.1 + 0.8*r.Float64(), Class: sim.ClassExperiment,
						GPUMemMiB: int64(1000 + r.IntN(30000))}
					switch k := r.IntN(10); {
					case k < 4:
						svc := sim.Duration(1+r.IntN(20)) * sim.Millisecond
						rate := r.Float64() * 0.9 / svc.Seconds()
						alone := sim.PredictP99(rate, svc.Seconds(), 1)
						sla := sim.Duration(math.Ceil(alone*(1.05+3*r.Float64())*1e6)) * sim.Microsecond
						j.Class, j.Serving = sim.ClassServing, &sim.ServingSpec{Rate: rate, Service: svc, SLA: sla}
						if r.IntN(3) == 0 { // a step series whose peak is the rate above
							j.Serving.Rate = rate / 2
							j.Serving.Series = []sim.RatePoint{{At: sim.Time(sim.Seconds(float64(r.IntN(900)))), Rate: rate}}
						}
						if err := j.Serving.Prepare(); err != nil {
							t.Fatal(err)
						}
					case k < 5:
						j.GPUsPerReplica, j.Sharing, j.Class = 2, sim.AcceptExclusive, sim.ClassTraining
					}
					jobs[i] = j
				}
				var node yaml.Node
				if err := yaml.Unmarshal([]byte(pp.params), &node); err != nil {
					t.Fatal(err)
				}
				pol, err := policies.New(pp.name, node.Content[0])
				if err != nil {
					t.Fatal(err)
				}
				e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Seed: seed,
					Sharing: &sim.SharingConfig{Interference: utilInterf{overhead: 0.1 * r.Float64()}}})
				if err != nil {
					t.Fatal(err)
				}
				res, err := e.Run(context.Background())
				if err != nil {
					t.Fatalf("seed %d: %v", seed, err)
				}
				sv := res.Serving
				if sv == nil {
					continue // no serving job drawn
				}
				for _, st := range sv.Jobs {
					j := &res.Jobs[st.Job]
					if j.State != sim.StateCompleted {
						t.Fatalf("seed %d: serving job %s %s", seed, j.Spec.ID, j.State)
					}
					if st.Violation != 0 || st.MinSpeed < st.MinSpeedBound || st.MaxP99 > j.Spec.Serving.SLA.Seconds() {
						t.Fatalf("seed %d: serving job %s broke its SLA: %+v (SLA %v)", seed, j.Spec.ID, st, j.Spec.Serving.SLA)
					}
					if st.MinSpeedBound > 0.5 {
						tight++ // time-slicing two jobs at 0.5 would break it
					}
				}
				for _, p := range sv.Points {
					if sp := res.Jobs[p.Job].Spec.Serving; p.Speed > 0 && !(p.P99 <= sp.SLA.Seconds()) {
						t.Fatalf("seed %d: point %+v over the SLA %v", seed, p, sp.SLA)
					}
				}
				coloc += sv.ColocatedTrainingGPUSeconds
				if pp.pack {
					for i := range res.Jobs {
						if j := &res.Jobs[i]; j.Spec.Serving == nil && j.MinSpeed() > 0 && j.MinSpeed() < 0.5-1e-9 {
							t.Fatalf("seed %d: job %s ran at %v < 1/maxSlowdown", seed, j.Spec.ID, j.MinSpeed())
						}
					}
				}
			}
			t.Logf("training work beside serving jobs: %.0f GPU s over 120 instances; %d serving jobs with a bound above 0.5", coloc, tight)
			if pp.name != "gandiva" && coloc == 0 {
				t.Errorf("no training ran beside a serving job: the property is vacuous")
			}
		})
	}
}
