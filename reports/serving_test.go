package reports

import (
	"bytes"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// pinAll starts every pending job on GPU 0 when the engine accepts it there.
type pinAll struct{}

func (pinAll) Name() string { return "pin" }

func (pinAll) Schedule(v *sim.View, p *sim.Plan) error {
	c := v.Cluster()
	for j := v.PendingHead(); j != nil; j = v.NextPending(j) {
		if c.CanShare(&j.Spec, 0) || c.GPUUsed(0) == 0 {
			if err := p.AddStart(j.Ref, []sim.NodeID{0}, []sim.GPUID{0}); err != nil {
				return err
			}
		}
	}
	return nil
}

// The hand-worked run of sim.TestServingCoLocationHandWorked through the
// serving outputs: S (20 req/s, 10 ms, SLA 100 ms) alone from 0, T joins at
// 10 s (even split: 0.5), S stops at 100 s; T does 45 GPU-s beside S.
func TestServingOutputsHandWorked(t *testing.T) {
	c, err := sim.NewCluster([]sim.NodeSpec{{Name: "n0", GPUModel: "h100", GPUs: 1, GPUMemMiB: 80000, CPUMilli: 64000,
		MemoryMiB: 1 << 20, Sharing: sim.ShareTimeSlice}})
	if err != nil {
		t.Fatal(err)
	}
	job := func(id string, submit, dur float64) sim.JobSpec {
		return sim.JobSpec{ID: sim.JobID(id), Submit: sim.Time(sim.Seconds(submit)), Replicas: 1, GPUsPerReplica: 1,
			GPUMilli: sim.WholeGPU, Duration: sim.Seconds(dur), Sharing: sim.AcceptAny}
	}
	s := job("S", 0, 100)
	s.Class, s.Serving = sim.ClassServing, &sim.ServingSpec{Rate: 20, Service: 10 * sim.Millisecond, SLA: 100 * sim.Millisecond}
	res := simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: []sim.JobSpec{s, job("T", 10, 100)}, Policy: pinAll{}, Sharing: &sim.SharingConfig{}})
	var b bytes.Buffer
	if err := WriteServingCSV(&b, res); err != nil {
		t.Fatal(err)
	}
	want := "job_id,rate_peak_rps,service_ms,sla_ms,min_speed_bound,running_s,sla_violation_s,min_speed,max_p99_ms\n" +
		"S,20,10,100,0.445323161,100,0,0.5,81.481324\n"
	if b.String() != want {
		t.Errorf("serving.csv:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	if err := WriteServingP99CSV(&b, res); err != nil {
		t.Fatal(err)
	}
	want = "time_s,job_id,rate_rps,speed,rho,p99_ms,sla_ms\n" +
		"0,S,20,1,0.2,28.723327,100\n" +
		"10,S,20,0.5,0.4,81.481324,100\n" +
		"100,S,20,0,,,100\n"
	if b.String() != want {
		t.Errorf("serving_p99.csv:\n%s\nwant:\n%s", b.String(), want)
	}
	sum := &Summary{}
	summarizeServing(res, sum)
	if sv := sum.Serving; sv == nil || sv.Jobs != 1 || sv.JobsViolating != 0 || sv.ColocatedTrainingGPUHours != round(45.0/3600) ||
		sv.ColocatedTrainingGPUs != round(45.0/155) || sv.RunningHours != round(100.0/3600) {
		t.Errorf("summary %+v", sum.Serving)
	}
}
