package traces

import (
	"strings"

	"github.com/gpusim/gpusim/sim"
)

// Node-list formats.
const (
	FormatPAIMachines  = "pai-machines"
	FormatSpotGPUNodes = "spot-gpu-nodes"
)

func init() {
	registerNodes(FormatPAIMachines, "Alibaba cluster-trace-gpu-v2020 pai_machine_spec (with or without header)", readPAIMachines)
	registerNodes(FormatSpotGPUNodes, "Alibaba cluster-trace-v2026-spot-gpu node_info_df.csv", readSpotNodes)
}

var paiMachineCols = []string{"machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"}

// readPAIMachines reads pai_machine_spec.csv (machine,gpu_type,cap_cpu,cap_mem,
// cap_gpu). The published file has no header row; a first row starting with
// "machine" is taken as a header. cap_cpu cores -> CPUMilli*1000, cap_mem GB ->
// MemoryMiB*1024, gpu_type CPU -> a CPU-only node (pool "cpu"); MISC (older K40m,
// K80, M60) stays a model of its own.
func readPAIMachines(path string, opts ReadOptions) ([]sim.NodeSpec, *ImportReport, error) {
	header := paiMachineCols
	if first, err := firstField(path); err == nil && strings.EqualFold(first, "machine") {
		header = nil
	}
	return readCSVNodes(path, FormatPAIMachines, ',', paiMachineCols, header, func(in *csvIn, line int) (sim.NodeSpec, error) {
		var n sim.NodeSpec
		var err error
		if n.Name, err = reqStr(in, "machine"); err != nil {
			return n, err
		}
		typ, err := reqStr(in, "gpu_type")
		if err != nil {
			return n, err
		}
		cpu, err := reqInt(in, "cap_cpu", 32)
		if err != nil {
			return n, err
		}
		mem, err := reqInt(in, "cap_mem", 32)
		if err != nil {
			return n, err
		}
		g, err := reqInt(in, "cap_gpu", 32)
		if err != nil {
			return n, err
		}
		n.CPUMilli, n.MemoryMiB, n.GPUs = cpu*1000, mem*1024, int32(g)
		if typ == "CPU" {
			if g != 0 {
				return n, skipf("cap_gpu", "GPUs on a CPU machine", "%d", g)
			}
		} else {
			n.GPUModel = typ
		}
		if n.GPUs == 0 {
			n.GPUModel = ""
		}
		return finishNode(n), nil
	})
}

// readSpotNodes reads node_info_df.csv (gpu_model,gpu_capacity_num,cpu_num,
// node_name; any column order). cpu_num vCPUs -> CPUMilli*1000. The file has no
// memory column: MemoryMiB is 0 (see ClusterSource.DefaultMemoryMiB).
func readSpotNodes(path string, opts ReadOptions) ([]sim.NodeSpec, *ImportReport, error) {
	return readCSVNodes(path, FormatSpotGPUNodes, ',', []string{"gpu_model", "gpu_capacity_num", "cpu_num", "node_name"}, nil, func(in *csvIn, line int) (sim.NodeSpec, error) {
		var n sim.NodeSpec
		var err error
		if n.Name, err = reqStr(in, "node_name"); err != nil {
			return n, err
		}
		g, err := reqInt(in, "gpu_capacity_num", 32)
		if err != nil {
			return n, err
		}
		cpu, err := reqInt(in, "cpu_num", 32)
		if err != nil {
			return n, err
		}
		n.GPUs, n.CPUMilli = int32(g), cpu*1000
		n.GPUModel = in.get(in.col("gpu_model"))
		if n.GPUs > 0 && n.GPUModel == "" {
			return n, skipf("gpu_model", "missing value", "a node with %d GPUs needs a model", n.GPUs)
		}
		if n.GPUs == 0 {
			n.GPUModel = ""
		}
		return finishNode(n), nil
	})
}

// firstField returns the first CSV field of the file (for header sniffing).
func firstField(path string) (string, error) {
	in, err := openHeaderless(path, ',', nil)
	if err != nil {
		return "", err
	}
	defer in.close()
	in.header = nil
	if err := in.next(); err != nil {
		return "", err
	}
	return in.get(0), nil
}
