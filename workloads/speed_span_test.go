package workloads

import (
	"math"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

func TestPlacementSpanAndSlowdown(t *testing.T) {
	c := testCluster(t)
	m, err := NewSpeedModel(SpeedConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		gpus []sim.GPUID
		span string
	}{
		{"empty", nil, "nvlink"},
		{"one GPU", span(3, 1), "nvlink"},
		{"one node", span(0, 8), "nvlink"},
		{"two nodes one leaf", span(0, 16), "leaf"},
		{"two leaves", append(span(0, 8), span(16, 8)...), "spine"},
		{"two spines", append(span(0, 8), span(32, 8)...), "core"},
	} {
		if got := SpanName(PlacementSpan(c, tc.gpus)); got != tc.span {
			t.Errorf("%s: span %s, want %s", tc.name, got, tc.span)
		}
	}
	const compute, mb = 0.5, 1000
	for _, tc := range []struct {
		name string
		job  *sim.Job
		want float64
	}{
		{"packed", placed(c, sim.ClassTraining, span(0, 8)...), 1},
		{"4+4 in a leaf", placed(c, sim.ClassTraining, append(span(0, 4), span(8, 4)...)...),
			(compute + ring("leaf", 8, mb)) / (compute + ring("nvlink", 8, mb))},
		{"16 across leaves", placed(c, sim.ClassTraining, append(span(0, 8), span(16, 8)...)...),
			(compute + ring("spine", 16, mb)) / (compute + ring("leaf", 16, mb))},
		// A100 node in the gang: compute is scaled by its throughput on both sides.
		{"across spines with an A100", placed(c, sim.ClassTraining, append(span(0, 8), span(32, 8)...)...),
			(compute*3.17 + ring("core", 16, mb)) / (compute*3.17 + ring("leaf", 16, mb))},
		{"no comm class", placed(c, sim.ClassPreprocessing, append(span(0, 4), span(8, 4)...)...), 1},
		{"one GPU", placed(c, sim.ClassTraining, 5), 1},
	} {
		got := m.Slowdown(c, tc.job)
		if math.Abs(got-tc.want) > 1e-9 || got < 1 {
			t.Errorf("%s: slowdown %.6f, want %.6f", tc.name, got, tc.want)
		}
		// Speed and Slowdown agree on a single-model placement.
		if tc.name != "across spines with an A100" && tc.name != "no comm class" {
			if sp := m.Speed(c, tc.job); math.Abs(sp*got-1) > 1e-9 {
				t.Errorf("%s: speed %.6f x slowdown %.6f != 1", tc.name, sp, got)
			}
		}
	}
}
