package calibrate

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNVMLNotFound is returned (wrapped) by a Probe's Init when the NVML shared
// library cannot be loaded, i.e. on machines without an NVIDIA driver.
var ErrNVMLNotFound = errors.New("NVML library not found (is the NVIDIA driver installed?)")

// Unsupported marks a numeric Sample field the device does not report (e.g. ECC
// counters on GPUs without ECC). Consumers must treat negative values as missing.
const Unsupported = -1

// Probe is the small hardware interface the calibrate tool needs. Implementations:
// calibrate/nvml (real, go-nvml) and Fake (deterministic, for --fake and tests).
//
// Init must be called before any other method and Shutdown once at the end.
// Device indexes are NVML indexes 0..DeviceCount()-1. Methods never change device
// state (MIG mode, clocks, ...): they only read.
type Probe interface {
	Init() error
	Shutdown() error
	// DriverVersion is the NVIDIA driver version, e.g. "550.54.15".
	DriverVersion() (string, error)
	// CUDAVersion is the highest CUDA version the driver supports, e.g. "12.4".
	CUDAVersion() (string, error)
	DeviceCount() (int, error)
	DeviceInfo(i int) (DeviceInfo, error)
	// CommonAncestor is the deepest PCIe topology level devices i and j share.
	CommonAncestor(i, j int) (PCIeLevel, error)
	// NVLinks lists device i's NVLink links (active or not).
	NVLinks(i int) ([]NVLink, error)
	// Sample reads device i's current counters; fields the device does not support
	// are Unsupported. Time is left zero: the caller stamps it.
	Sample(i int) (Sample, error)
}

// DeviceInfo describes one GPU.
type DeviceInfo struct {
	Index             int           `json:"index" yaml:"index"`
	UUID              string        `json:"uuid" yaml:"uuid"`
	Name              string        `json:"name" yaml:"name"`
	MemoryMiB         int64         `json:"memoryMiB" yaml:"memoryMiB"`
	ComputeCapability string        `json:"computeCapability" yaml:"computeCapability"`
	PCIBusID          string        `json:"pciBusId" yaml:"pciBusId"`
	NUMANode          int           `json:"numaNode" yaml:"numaNode"` // -1: unknown
	MIGEnabled        bool          `json:"migEnabled" yaml:"migEnabled"`
	MIGInstances      []MIGInstance `json:"migInstances,omitempty" yaml:"migInstances,omitempty"`
}

// MIGInstance is an existing MIG device on a GPU in MIG mode.
type MIGInstance struct {
	Index     int    `json:"index" yaml:"index"`
	UUID      string `json:"uuid" yaml:"uuid"`
	Name      string `json:"name" yaml:"name"`
	MemoryMiB int64  `json:"memoryMiB" yaml:"memoryMiB"`
}

// NVLink is one NVLink link of a GPU.
type NVLink struct {
	Link      int    `json:"link" yaml:"link"`
	Active    bool   `json:"active" yaml:"active"`
	PeerBusID string `json:"peerBusId,omitempty" yaml:"peerBusId,omitempty"`
	// PeerType is "gpu", "switch" (NVSwitch), "npu" or "unknown".
	PeerType string `json:"peerType,omitempty" yaml:"peerType,omitempty"`
}

// PCIeLevel is NVML's common-ancestor level of two GPUs.
type PCIeLevel int

// PCIe common-ancestor levels, in NVML's order (closest first).
const (
	PCIeInternal   PCIeLevel = 0  // same board (multi-GPU board)
	PCIeSingle     PCIeLevel = 10 // one PCIe switch
	PCIeMultiple   PCIeLevel = 20 // several PCIe switches, no host bridge
	PCIeHostBridge PCIeLevel = 30 // same host bridge
	PCIeNode       PCIeLevel = 40 // same NUMA node, different host bridges
	PCIeSystem     PCIeLevel = 50 // across NUMA nodes (SMP interconnect)
)

// Link is the pairwise topology class reported by discover, closest first.
type Link string

// Topology matrix entries.
const (
	LinkSelf       Link = "self"
	LinkNVLink     Link = "nvlink"      // direct NVLink or a shared NVSwitch fabric
	LinkPCIeSwitch Link = "pcie-switch" // same board or PCIe switch(es)
	LinkHostBridge Link = "host-bridge" // same PCIe host bridge
	LinkNUMANode   Link = "numa-node"   // same NUMA node
	LinkSystem     Link = "system"      // across NUMA nodes
)

// LinkOf maps a PCIe common-ancestor level to a topology class.
func LinkOf(l PCIeLevel) Link {
	switch {
	case l <= PCIeMultiple:
		return LinkPCIeSwitch
	case l <= PCIeHostBridge:
		return LinkHostBridge
	case l <= PCIeNode:
		return LinkNUMANode
	default:
		return LinkSystem
	}
}

// Sample is one reading of a GPU's counters. Numeric fields are Unsupported (-1)
// when the device does not report them.
type Sample struct {
	Time            time.Time
	GPU             int
	SMUtilPct       float64 // "GPU utilization": % of time a kernel ran
	MemUtilPct      float64 // % of time device memory was read or written
	MemUsedMiB      float64
	PowerW          float64
	SMClockMHz      float64
	MemClockMHz     float64
	TempC           float64
	ThrottleReasons int64 // NVML clocks-event (throttle) reason bit mask; -1 unsupported
	PCIeRxKBps      float64
	PCIeTxKBps      float64
	ECCCorrected    int64 // volatile corrected ECC errors; -1 unsupported
	ECCUncorrected  int64 // volatile uncorrected ECC errors; -1 unsupported
}

// throttleNames are the NVML clocks-event reason bits, by bit value.
var throttleNames = []struct {
	bit  int64
	name string
}{
	{1, "gpu_idle"},
	{2, "applications_clocks_setting"},
	{4, "sw_power_cap"},
	{8, "hw_slowdown"},
	{16, "sync_boost"},
	{32, "sw_thermal_slowdown"},
	{64, "hw_thermal_slowdown"},
	{128, "hw_power_brake_slowdown"},
	{256, "display_clock_setting"},
}

// ThrottleNames renders a throttle reason bit mask as "a|b" in bit order ("" for
// none or unsupported; unknown bits as "0x...").
func ThrottleNames(mask int64) string {
	if mask <= 0 {
		return ""
	}
	var parts []string
	rest := mask
	for _, t := range throttleNames {
		if mask&t.bit != 0 {
			parts = append(parts, t.name)
			rest &^= t.bit
		}
	}
	if rest != 0 {
		parts = append(parts, fmt.Sprintf("0x%x", rest))
	}
	return strings.Join(parts, "|")
}
