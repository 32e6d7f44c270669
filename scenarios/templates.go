package scenarios

import (
	"sort"

	"github.com/gpusim/gpusim/sim"
)

// NodeTemplate describes a machine type. Pools instantiate templates; a scenario
// may define its own (cluster.templates), e.g. the file written by
// `gpusim calibrate discover --template-out`.
type NodeTemplate struct {
	Name         string `yaml:"name"`
	GPUModel     string `yaml:"gpuModel"`
	GPUs         int32  `yaml:"gpus"`
	GPUMemoryMiB int64  `yaml:"gpuMemoryMiB"`
	CPUMilli     int64  `yaml:"cpuMilli"`
	MemoryMiB    int64  `yaml:"memoryMiB"`
	// NVLinkSize, PCIeSize, SocketSize: how many consecutive GPU indexes share an
	// NVLink/NVSwitch island, a PCIe switch, a CPU socket (0 = all GPUs of the node).
	NVLinkSize int32 `yaml:"nvlinkSize"`
	PCIeSize   int32 `yaml:"pcieSize"`
	SocketSize int32 `yaml:"socketSize"`
	// NVLinkNodes > 1 joins that many consecutive nodes of the pool into one
	// NVLink domain (rack-scale NVLink such as GB200 NVL72: 18 trays x 4 GPUs).
	NVLinkNodes int32  `yaml:"nvlinkNodes"`
	Description string `yaml:"description"`
}

// builtinTemplates are the machine types every scenario can use by name. Figures
// are the vendors' published configurations (CPU in millicores of hardware threads,
// memory in MiB).
var builtinTemplates = map[string]NodeTemplate{
	"dgx-h100": {Name: "dgx-h100", GPUModel: "H100-SXM-80GB", GPUs: 8, GPUMemoryMiB: 81559, CPUMilli: 224000, MemoryMiB: 2 << 20,
		NVLinkSize: 8, PCIeSize: 2, SocketSize: 4, Description: "NVIDIA DGX H100: 8x H100 SXM 80GB on NVSwitch, 2x Xeon 8480C (112 cores), 2 TiB"},
	"hgx-h100": {Name: "hgx-h100", GPUModel: "H100-SXM-80GB", GPUs: 8, GPUMemoryMiB: 81559, CPUMilli: 192000, MemoryMiB: 2 << 20,
		NVLinkSize: 8, PCIeSize: 2, SocketSize: 4, Description: "HGX H100 8-GPU server: NVSwitch, 2 sockets, 4 PCIe switches"},
	"dgx-a100": {Name: "dgx-a100", GPUModel: "A100-SXM-80GB", GPUs: 8, GPUMemoryMiB: 81920, CPUMilli: 256000, MemoryMiB: 2 << 20,
		NVLinkSize: 8, PCIeSize: 2, SocketSize: 4, Description: "NVIDIA DGX A100: 8x A100 SXM 80GB on NVSwitch, 2x EPYC 7742 (128 cores), 2 TiB"},
	"pcie-l40s": {Name: "pcie-l40s", GPUModel: "L40S", GPUs: 8, GPUMemoryMiB: 46068, CPUMilli: 128000, MemoryMiB: 1 << 20,
		NVLinkSize: 1, PCIeSize: 4, SocketSize: 4, Description: "8x L40S 48GB PCIe server (no NVLink), 2 PCIe switches, 2 sockets"},
	"pcie-t4": {Name: "pcie-t4", GPUModel: "T4", GPUs: 4, GPUMemoryMiB: 15360, CPUMilli: 64000, MemoryMiB: 256 << 10,
		NVLinkSize: 1, PCIeSize: 2, SocketSize: 2, Description: "4x T4 16GB PCIe inference server, 2 sockets"},
	"gb200-nvl72": {Name: "gb200-nvl72", GPUModel: "B200", GPUs: 4, GPUMemoryMiB: 189440, CPUMilli: 144000, MemoryMiB: 960 << 10,
		NVLinkSize: 4, PCIeSize: 2, SocketSize: 2, NVLinkNodes: 18, Description: "GB200 NVL72 compute tray: 4 B200 + 2 Grace; 18 trays share one 72-GPU NVLink domain"},
}

// TemplateNames lists the built-in templates, sorted.
func TemplateNames() []string {
	var n []string
	for k := range builtinTemplates {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Template returns a built-in template.
func Template(name string) (NodeTemplate, bool) {
	t, ok := builtinTemplates[name]
	return t, ok
}

func (t NodeTemplate) nodeSpec(name, pool string) sim.NodeSpec {
	return sim.NodeSpec{Name: name, Pool: pool, GPUModel: t.GPUModel, GPUs: t.GPUs, GPUMemMiB: t.GPUMemoryMiB,
		CPUMilli: t.CPUMilli, MemoryMiB: t.MemoryMiB, NVLinkSize: t.NVLinkSize, PCIeSize: t.PCIeSize,
		SocketSize: t.SocketSize, NVLinkDomain: -1}
}
