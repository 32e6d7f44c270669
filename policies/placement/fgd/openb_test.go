package fgd

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
)

// openbDir is the repository copy of the Alibaba openb trace (traces/testdata).
var openbDir = filepath.Join("..", "..", "traces", "testdata", "alibaba-openb-2023")

var (
	openbMu    sync.Mutex
	openbNodeL []sim.NodeSpec
	openbPodL  = map[string][]sim.JobSpec{}
)

func openbPath(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(openbDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("openb file %s not available: %v", p, err)
	}
	return p
}

// openbNodes returns the 1213 GPU nodes of openb_node_list_gpu_node.csv.
func openbNodes(t testing.TB) []sim.NodeSpec {
	t.Helper()
	openbMu.Lock()
	defer openbMu.Unlock()
	if openbNodeL == nil {
		nodes, err := traces.ReadNodes(traces.FormatOpenBNodes, openbPath(t, "openb_node_list_gpu_node.csv"))
		if err != nil {
			t.Fatal(err)
		}
		openbNodeL = nodes
	}
	return openbNodeL
}

// openbPods returns openb_pod_list_<variant>.csv (gpu_milli is per GPU).
func openbPods(t testing.TB, variant string) []sim.JobSpec {
	t.Helper()
	openbMu.Lock()
	defer openbMu.Unlock()
	if p, ok := openbPodL[variant]; ok {
		return p
	}
	pods, rep, err := traces.ReadJobs(traces.FormatOpenBPods, openbPath(t, "openb_pod_list_"+variant+".csv"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Imported != rep.Rows {
		t.Fatalf("%s: imported %d of %d rows: %v", variant, rep.Imported, rep.Rows, rep.Skipped)
	}
	openbPodL[variant] = pods
	return pods
}
