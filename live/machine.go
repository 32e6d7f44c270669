package live

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/sim"
)

// Machine is this box as a live run's cluster: the sim nodes and, per sim GPU
// (in GPUID order), the CUDA_VISIBLE_DEVICES entry of the device behind it.
type Machine struct {
	Nodes   []sim.NodeSpec
	Devices []string
	// Note says what of the discovered hardware is not used (MIG GPUs without
	// MIG instances as GPUs), for the user; "" if everything is.
	Note string
}

// MachineOf builds the live cluster from an NVML discovery (calibrate.Discover):
// one node named after the host with the GPUs that are not in MIG mode
// (model, memory and NVLink/PCIe/socket grouping from the discovery's
// template, CPUs and memory from the host). With migAsGPUs, every existing MIG
// instance of the GPUs in MIG mode becomes a GPU of a second node
// "<host>-mig" (model "<model>-MIG-<profile>" of the first instance, memory
// the smallest instance's), run with the instance's MIG UUID; without it those
// GPUs are left out. Jobs are placed on whole (sim) GPUs either way.
func MachineOf(r *calibrate.NodeReport, host calibrate.Host, migAsGPUs bool) (*Machine, error) {
	m := &Machine{}
	var whole []calibrate.GPUReport
	var migs []calibrate.MIGInstance
	var migGPUs []int
	for _, g := range r.GPUs {
		if g.MIGEnabled {
			migGPUs = append(migGPUs, g.Index)
			migs = append(migs, g.MIGInstances...)
			continue
		}
		whole = append(whole, g)
	}
	name := host.Name
	if name == "" {
		name = "localhost"
	}
	if len(whole) > 0 {
		t := r.Template
		n := int32(len(whole))
		size := func(s int) int32 {
			if s <= 0 || int32(s) > n || n%int32(s) != 0 || len(whole) != len(r.GPUs) {
				return 0 // all GPUs of the node (groups broken by left-out MIG GPUs)
			}
			return int32(s)
		}
		mem := whole[0].MemoryMiB
		for _, g := range whole {
			mem = min(mem, g.MemoryMiB)
			m.Devices = append(m.Devices, g.UUID)
		}
		m.Nodes = append(m.Nodes, sim.NodeSpec{Name: name, Pool: "local", GPUModel: calibrate.ModelSlug(whole[0].Name), GPUs: n,
			GPUMemMiB: mem, CPUMilli: int64(host.CPUs) * 1000, MemoryMiB: host.MemoryMiB,
			NVLinkSize: size(t.NVLinkSize), PCIeSize: size(t.PCIeSize), SocketSize: size(t.SocketSize)})
	}
	if len(migGPUs) > 0 {
		if migAsGPUs && len(migs) > 0 {
			mem := migs[0].MemoryMiB
			for _, in := range migs {
				mem = min(mem, in.MemoryMiB)
				m.Devices = append(m.Devices, in.UUID)
			}
			model := calibrate.ModelSlug(strings.Replace(migs[0].Name, " MIG ", " MIG-", 1))
			m.Nodes = append(m.Nodes, sim.NodeSpec{Name: name + "-mig", Pool: "local-mig", GPUModel: model, GPUs: int32(len(migs)),
				GPUMemMiB: mem, CPUMilli: int64(host.CPUs) * 1000, MemoryMiB: host.MemoryMiB})
		} else {
			m.Note = fmt.Sprintf("GPU(s) %v are in MIG mode and left out (--mig-as-gpus uses their %d MIG instances)", migGPUs, len(migs))
		}
	}
	if len(m.Nodes) == 0 {
		return nil, errors.New("live: no usable GPU on this machine")
	}
	return m, nil
}
