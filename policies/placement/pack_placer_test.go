package placement_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/gpusim/gpusim/policies"
	. "github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

// pairInterf: workload a next to b runs at m[a][b]; groups of 3+ add
// slowdowns (as calibrate.Table composes pairs), so a job leaving a GPU never
// slows the others.
type pairInterf struct {
	names map[string]int32
	m     [][]float64
}

func (f *pairInterf) WorkloadID(name string) (int32, bool) {
	id, ok := f.names[name]
	return id, ok
}

func (f *pairInterf) Factors(_ string, _ sim.SharingMode, ws []int32, _ []float64, out []float64) bool {
	for i := range ws {
		slow := 0.0
		for j := range ws {
			if j != i {
				slow += 1/f.m[ws[i]][ws[j]] - 1
			}
		}
		out[i] = 1 / (1 + slow)
	}
	return true
}

func runPack(t *testing.T, placement string, gpus int, in sim.Interference, jobs []sim.JobSpec) *sim.Result {
	t.Helper()
	nodes := []sim.NodeSpec{{Name: "n0", GPUModel: "A100", GPUs: int32(gpus), CPUMilli: 64000, MemoryMiB: 1 << 20, GPUMemMiB: 40960,
		NVLinkSize: int32(gpus), PCIeSize: int32(gpus), SocketSize: int32(gpus), NVLinkDomain: -1, Sharing: sim.ShareTimeSlice, SharingClients: 3}}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := policies.New("fifo", yamlParams(t, "placement: \""+placement+"\""))
	if err != nil {
		t.Fatal(err)
	}
	return simtest.RunConfig(t, sim.Config{Cluster: c, Jobs: jobs, Policy: pol, Seed: 1, NoLog: true, Sharing: &sim.SharingConfig{Interference: in}})
}

func shareJob(i int, submit, dur float64, workload string) sim.JobSpec {
	return sim.JobSpec{ID: sim.JobID(fmt.Sprintf("j%d", i)), Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU,
		CPUMilli: 1000, MemoryMiB: 1024, GPUMemMiB: 8192, Sharing: sim.AcceptAny, Workload: workload,
		Submit: sim.Time(sim.Seconds(submit)), Duration: sim.Seconds(dur), Class: sim.ClassTraining}
}

// TestPackPlacerCoLocatesWhenItPays, hand-worked: 2 time-slicing GPUs, pairs at
// 0.8 (a shared GPU does 1.6 jobs' work). j0 and j1 (t=0, 1) take a GPU each
// (gain 1 beats 0.6); j2 (t=2) joins GPU 0 (gain 0.6, the lowest GPU of the
// tie). With maxSlowdown 1.2 (speed >= 0.833) no pair is allowed: j2 waits for
// the first end (j0, 100 s of work alone, at t=100).
func TestPackPlacerCoLocatesWhenItPays(t *testing.T) {
	in := &pairInterf{names: map[string]int32{"w": 0}, m: [][]float64{{0.8}}}
	jobs := []sim.JobSpec{shareJob(0, 0, 100, "w"), shareJob(1, 1, 100, "w"), shareJob(2, 2, 100, "w")}
	for _, mode := range []string{"greedy", "ilp"} {
		res := runPack(t, "pack:mode="+mode+",maxSlowdown=1.5", 2, in, jobs)
		g := func(i int) sim.GPUID { return res.Jobs[i].GPUs[0] }
		if g(0) != 0 || g(1) != 1 || g(2) != 0 || res.Jobs[2].FirstStart != sim.Time(sim.Seconds(2)) {
			t.Errorf("%s: GPUs %d %d %d, j2 starts at %v", mode, g(0), g(1), g(2), res.Jobs[2].FirstStart)
		}
		res = runPack(t, "pack:mode="+mode+",maxSlowdown=1.2", 2, in, jobs)
		if res.Jobs[2].FirstStart != sim.Time(sim.Seconds(100)) || res.Jobs[0].MinSpeed() != 1 {
			t.Errorf("%s with maxSlowdown 1.2: j2 starts at %v, j0's min speed %v", mode, res.Jobs[2].FirstStart, res.Jobs[0].MinSpeed())
		}
	}
}

// TestPackPlacerMaxSlowdownEveryInstant: random arrivals of shareable jobs of 4
// workloads (random pair matrix) on 4 GPUs of 3 clients; under fifo with the
// packer (greedy and ILP) no job ever runs below 1/maxSlowdown (its minimum
// speed over the run), and every job completes.
func TestPackPlacerMaxSlowdownEveryInstant(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	in := &pairInterf{names: map[string]int32{"a": 0, "b": 1, "c": 2, "d": 3}}
	for a := range 4 {
		in.m = append(in.m, nil)
		for range 4 {
			in.m[a] = append(in.m[a], 0.35+0.65*r.Float64())
		}
	}
	var jobs []sim.JobSpec
	for i := range 80 {
		jobs = append(jobs, shareJob(i, float64(i)*5, 20+float64(r.IntN(200)), string(rune('a'+r.IntN(4)))))
	}
	for _, mode := range []string{"greedy", "ilp"} {
		res := runPack(t, "pack:mode="+mode+",maxSlowdown=1.6", 4, in, jobs)
		shared := 0
		for i := range res.Jobs {
			j := &res.Jobs[i]
			if j.State != sim.StateCompleted {
				t.Fatalf("%s: job %s %v", mode, j.Spec.ID, j.State)
			}
			if j.MinSpeed() < 1/1.6-1e-9 {
				t.Errorf("%s: job %s ran at %v < 1/1.6", mode, j.Spec.ID, j.MinSpeed())
			}
			if j.SharedTime() > 0 {
				shared++
			}
		}
		if shared == 0 {
			t.Errorf("%s: nothing co-located", mode)
		}
	}
}

func TestPackPlacerArgs(t *testing.T) {
	for _, bad := range []string{"pack:mode=exact", "pack:maxSlowdown=0.5", "pack:budget=-1s", "pack:window=0", "pack:foo=1"} {
		if _, err := New(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	p, err := New("pack:mode=ilp,maxSlowdown=3,budget=200ms,window=16")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "pack:mode=ilp" || HonoursAllow(p) {
		t.Errorf("name %q", p.Name())
	}
}
