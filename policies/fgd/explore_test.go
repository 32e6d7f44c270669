package fgd

import (
	"fmt"
	"github.com/gpusim/gpusim/sim"
	"os"
	"testing"
	"time"
)

func TestExplore(t *testing.T) {
	if os.Getenv("FGD_EXPLORE") == "" {
		t.Skip()
	}
	nodes := openbNodes(t)
	pods := openbPods(t, os.Getenv("FGD_VARIANT"))
	tw, _ := NewTargetWorkload(pods, TargetConfig{})
	t.Logf("typical shapes %d", len(tw.Shapes))
	for _, pol := range Policies() {
		t0 := time.Now()
		r, err := RunFill(nodes, pods, FillConfig{Load: 1.3, Seed: 42, Policy: pol})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-15s alloc %.2f frag %.2f pods %d unsched %d  (%v) c0 %+v", pol, r.GPUAllocationRatio, r.FragmentedGPURatio, r.Pods, r.Unscheduled, time.Since(t0), r.Curve[0])
	}
}

func TestExplore2(t *testing.T) {
	if os.Getenv("FGD_EXPLORE") == "" {
		t.Skip()
	}
	pods := openbPods(t, "default")
	tw, _ := NewTargetWorkload(pods, TargetConfig{})
	for i, s := range tw.Shapes {
		t.Logf("%2d %+v %.4f", i, s, tw.Freq[i])
	}
	nodes := openbNodes(t)
	for _, pol := range []string{"best-fit", "fgd"} {
		r, _ := RunFill(nodes, pods, FillConfig{Load: 1.3, Seed: 42, Policy: pol})
		for _, k := range []int{10, 30, 50, 70, 90, 100, 130} {
			t.Logf("%s %+v", pol, r.Curve[k])
		}
	}
}

func TestExplore3(t *testing.T) {
	if os.Getenv("FGD_EXPLORE") == "" {
		t.Skip()
	}
	pods := openbPods(t, "default")
	tw, _ := NewTargetWorkload(pods, TargetConfig{})
	nodes := openbNodes(t)
	c, _ := sim.NewCluster(nodes)
	pl, _ := NewPlacer(c, os.Getenv("FGD_POL"), tw, 42)
	order := append([]sim.JobSpec(nil), pods...)
	rng := sim.Stream(42, "x")
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	var arrived int64
	reasons := map[string]int{}
	for i := range order {
		p := &order[i]
		arrived += p.GPUDemandMilli()
		_, ok, _ := pl.PlaceAndCommit(p)
		if !ok {
			// classify
			gpuOK, cpuOK, memOK := 0, 0, 0
			for n := range nodes {
				q := *p
				q.CPUMilli, q.MemoryMiB = 0, 0
				r, _ := pl.request(&q)
				if pl.feasible(&r, sim.NodeID(n)) {
					gpuOK++
					if pl.cpuLeft[n] >= p.CPUMilli {
						cpuOK++
					} else if pl.memLeft[n] >= p.MemoryMiB {
						memOK++
					}
				}
			}
			key := fmt.Sprintf("@%2.0f gpus=%d milli=%d gpu-fit-nodes=%v gpu+cpu=%v gpu+mem=%v", float64(arrived)/621200*10, p.GPUsPerReplica, p.GPUMilli, gpuOK > 0, cpuOK > 0, memOK > 0)
			reasons[key]++
		}
	}
	t.Logf("arrived %.1f%% alloc %.2f%%", 100*float64(arrived)/621200*1000, 100*float64(c.AllocatedMilli())/6212000)
	for k, v := range reasons {
		t.Logf("%5d %s", v, k)
	}
}

func TestExplore4(t *testing.T) {
	if os.Getenv("FGD_EXPLORE") == "" {
		t.Skip()
	}
	pods := append([]sim.JobSpec(nil), openbPods(t, "default")...)
	for i := range pods {
		pods[i].MemoryMiB = 0
	}
	nodes := openbNodes(t)
	for _, pol := range Policies() {
		r, _ := RunFill(nodes, pods, FillConfig{Load: 1.3, Seed: 42, Policy: pol})
		t.Logf("nomem %s %.2f %.2f", pol, r.GPUAllocationRatio, r.FragmentedGPURatio)
	}
}

func TestExplore5(t *testing.T) {
	if os.Getenv("FGD_EXPLORE") == "" {
		t.Skip()
	}
	pods := openbPods(t, "default")
	tw, _ := NewTargetWorkload(pods, TargetConfig{})
	nodes := openbNodes(t)
	c, _ := sim.NewCluster(nodes)
	pl, _ := NewPlacer(c, "fgd", tw, 42)
	order := append([]sim.JobSpec(nil), pods...)
	rng := sim.Stream(42, "x")
	rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	bad := 0
	for i := range order {
		p := &order[i]
		_, ok, _ := pl.PlaceAndCommit(p)
		if !ok {
			r, _ := pl.request(p)
			for n := range nodes {
				if pl.feasible(&r, sim.NodeID(n)) {
					bad++
					break
				}
			}
		}
	}
	t.Logf("bad %d", bad)
}
