package policies

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gpusim/gpusim/sim"
	. "github.com/gpusim/gpusim/sim/simtest"
	"github.com/gpusim/gpusim/traces"
)

// refStarts is an independent reference for the agreement tests below: a
// plain event loop of a Helios-style non-preemptive queue (HeliosArtifact
// simulator: FIFO, or SJF by true duration) with strict head-of-line blocking,
// on nodes of per GPUs counted by free GPUs only, placing a job of T GPUs as
// Philly's and Helios's schedulers do: T <= per on the lowest-id node with T
// free; a larger T on the floor(T/per) lowest-id empty nodes plus, for the
// remainder, the lowest-id other node with T mod per free. It returns each
// job's start (sim.Time).
func refStarts(jobs []sim.JobSpec, nodes int, per int32, sjf bool) map[sim.JobID]sim.Time {
	type run struct {
		end   sim.Time
		nodes []int
		gpus  []int32
	}
	free := make([]int32, nodes)
	for i := range free {
		free[i] = per
	}
	arr := slices.Clone(jobs)
	slices.SortStableFunc(arr, func(a, b sim.JobSpec) int {
		return cmp.Or(cmp.Compare(a.Submit, b.Submit), cmp.Compare(a.ID, b.ID))
	})
	var queue []sim.JobSpec
	var running []run
	starts := map[sim.JobID]sim.Time{}
	place := func(t int32) ([]int, []int32, bool) {
		if t <= per {
			for n := range free {
				if free[n] >= t {
					return []int{n}, []int32{t}, true
				}
			}
			return nil, nil, false
		}
		var ns []int
		var gs []int32
		for n := range free {
			if len(ns) < int(t/per) && free[n] == per {
				ns, gs = append(ns, n), append(gs, per)
			}
		}
		if len(ns) < int(t/per) {
			return nil, nil, false
		}
		if rem := t % per; rem > 0 {
			for n := range free {
				if !slices.Contains(ns, n) && free[n] >= rem {
					return append(ns, n), append(gs, rem), true
				}
			}
			return nil, nil, false
		}
		return ns, gs, true
	}
	now := sim.Time(0)
	for len(arr) > 0 || len(queue) > 0 || len(running) > 0 {
		next := sim.Never
		if len(arr) > 0 {
			next = arr[0].Submit
		}
		for _, r := range running {
			next = min(next, r.end)
		}
		now = next
		kept := running[:0]
		for _, r := range running {
			if r.end == now {
				for i, n := range r.nodes {
					free[n] += r.gpus[i]
				}
			} else {
				kept = append(kept, r)
			}
		}
		running = kept
		for len(arr) > 0 && arr[0].Submit == now {
			queue = append(queue, arr[0])
			arr = arr[1:]
		}
		if sjf {
			slices.SortStableFunc(queue, func(a, b sim.JobSpec) int {
				return cmp.Or(cmp.Compare(a.Duration, b.Duration), cmp.Compare(a.Submit, b.Submit), cmp.Compare(a.ID, b.ID))
			})
		}
		for len(queue) > 0 {
			j := queue[0]
			ns, gs, ok := place(j.TotalGPUs())
			if !ok {
				break
			}
			for i, n := range ns {
				free[n] -= gs[i]
			}
			starts[j.ID] = now
			running = append(running, run{now + sim.Time(j.Duration), ns, gs})
			queue = queue[1:]
		}
	}
	return starts
}

// phillyVC reads one VC of the Philly trace published with Gavel (the
// repository's copy) with the importer's equal replicas, or split into full
// nodes plus a remainder (traces.SplitShape, what `shape: split` does).
func phillyVC(t *testing.T, vc string, split bool) []sim.JobSpec {
	t.Helper()
	all, _, err := traces.ReadJobsWith(traces.FormatPhillyGavel, filepath.Join("..", "traces", "testdata", "philly-via-gavel", "philly_gavel_jobs.csv"), traces.ReadOptions{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	var out []sim.JobSpec
	for _, j := range all {
		if j.Queue == vc {
			if split {
				traces.SplitShape(&j, 8)
			}
			out = append(out, j)
		}
	}
	return out
}

// TestSplitShapeAgreesWithReference replays Philly VC ee9e8c (2,000 jobs, one of
// them of 20 GPUs, the only "N GPUs" job of the trace that is not a multiple of
// 8) under fifo and sjf with first-fit on 12, 40 and 64 nodes x 8 GPUs (64 is
// the VC's size in the Helios artifact; 40 is scenarios/examples/philly-vc.yaml),
// and compares gpusim start for start with refStarts. With shape split every
// job agrees. With the importer's equal replicas the 20-GPU job is 5 x 4, which
// fits in half-empty nodes a Helios-style placer cannot use, and the different
// placement shifts later jobs too: the counts of agreeing jobs are pinned.
func TestSplitShapeAgreesWithReference(t *testing.T) {
	equalAgree := map[string]int{ // policy/nodes -> jobs agreeing with equal replicas
		"fifo/12": 1291, "fifo/40": 2000, "fifo/64": 1977,
		"sjf/12": 2000, "sjf/40": 2000, "sjf/64": 1980,
	}
	for _, nodes := range []int{12, 40, 64} {
		for _, name := range []string{"fifo", "sjf"} {
			want := refStarts(phillyVC(t, "ee9e8c", true), nodes, 8, name == "sjf")
			for _, split := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/nodes=%d/split=%v", name, nodes, split), func(t *testing.T) {
					p, err := New(name, yamlNode(t, "placement: first-fit"))
					if err != nil {
						t.Fatal(err)
					}
					res := Run(t, Nodes(nodes, 8), p, phillyVC(t, "ee9e8c", split)...)
					same, unequal := 0, 0
					var first string
					for i := range res.Jobs {
						j := &res.Jobs[i]
						if j.Spec.Unequal() {
							unequal++
						}
						if j.FirstStart == want[j.Spec.ID] {
							same++
						} else if first == "" {
							first = fmt.Sprintf("%s (%d GPUs) starts at %s, reference %s", j.Spec.ID, j.Spec.TotalGPUs(), j.FirstStart, want[j.Spec.ID])
						}
					}
					t.Logf("| %s | %d | %v | %d / %d | %s |", name, nodes, split, same, len(res.Jobs), first)
					if split && (same != len(res.Jobs) || unequal != 1) {
						t.Errorf("%d of %d starts agree, %d unequal gangs (want all, 1): %s", same, len(res.Jobs), unequal, first)
					}
					if k := fmt.Sprintf("%s/%d", name, nodes); !split && same != equalAgree[k] {
						t.Errorf("equal replicas: %d of %d starts agree with the split reference, want %d", same, len(res.Jobs), equalAgree[k])
					}
				})
			}
		}
	}
}
