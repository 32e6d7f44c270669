package live

import (
	"strings"
	"testing"

	"github.com/gpusim/gpusim/calibrate"
)

// TestMachineOfFake: the fake NVML node (8 H100, GPU 7 in MIG mode with three
// 2g.20gb instances) gives a 7-GPU node, or with migAsGPUs a second node of
// the three MIG instances run by their MIG UUIDs.
func TestMachineOfFake(t *testing.T) {
	p := calibrate.NewFake()
	if err := p.Init(); err != nil {
		t.Fatal(err)
	}
	host := calibrate.Host{Name: "box", CPUs: 16, MemoryMiB: 65536}
	rep, err := calibrate.Discover(p, host)
	if err != nil {
		t.Fatal(err)
	}
	m, err := MachineOf(rep, host, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Nodes) != 1 || m.Nodes[0].GPUs != 7 || m.Nodes[0].Name != "box" || m.Nodes[0].GPUModel != "H100-80GB-HBM3" || m.Nodes[0].CPUMilli != 16000 {
		t.Fatalf("nodes %+v", m.Nodes)
	}
	if len(m.Devices) != 7 || !strings.HasPrefix(m.Devices[0], "GPU-") || !strings.Contains(m.Note, "[7]") {
		t.Fatalf("devices %v note %q", m.Devices, m.Note)
	}
	m, err = MachineOf(rep, host, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Nodes) != 2 || m.Nodes[1].GPUs != 3 || m.Nodes[1].Name != "box-mig" || m.Nodes[1].GPUMemMiB != 19968 || len(m.Devices) != 10 ||
		!strings.HasPrefix(m.Devices[9], "MIG-") || m.Note != "" {
		t.Fatalf("with MIG: nodes %+v devices %v note %q", m.Nodes, m.Devices, m.Note)
	}
	if !strings.Contains(m.Nodes[1].GPUModel, "MIG-2g.20gb") {
		t.Errorf("MIG model %q", m.Nodes[1].GPUModel)
	}
}
