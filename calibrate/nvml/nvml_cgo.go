//go:build cgo && linux

package nvml

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/gpusim/gpusim/calibrate"
)

// Probe reads GPUs through NVML. Create it with New; Init loads the library.
type Probe struct {
	lib  nvml.Interface
	devs []nvml.Device
}

// New returns a Probe using libraryPath ("" = the default libnvidia-ml.so.1).
func New(libraryPath string) *Probe {
	var opts []nvml.LibraryOption
	if libraryPath != "" {
		opts = append(opts, nvml.WithLibraryPath(libraryPath))
	}
	return &Probe{lib: nvml.New(opts...)}
}

func nvErr(what string, r nvml.Return) error {
	return fmt.Errorf("%s: %s", what, nvml.ErrorString(r))
}

// Init implements calibrate.Probe.
func (p *Probe) Init() error {
	r := p.lib.Init()
	if r == nvml.ERROR_LIBRARY_NOT_FOUND {
		return calibrate.ErrNVMLNotFound
	}
	if r != nvml.SUCCESS {
		return nvErr("NVML init", r)
	}
	n, r := p.lib.DeviceGetCount()
	if r != nvml.SUCCESS {
		p.lib.Shutdown()
		return nvErr("NVML device count", r)
	}
	p.devs = make([]nvml.Device, n)
	for i := range p.devs {
		d, r := p.lib.DeviceGetHandleByIndex(i)
		if r != nvml.SUCCESS {
			p.lib.Shutdown()
			return nvErr(fmt.Sprintf("NVML device %d handle", i), r)
		}
		p.devs[i] = d
	}
	return nil
}

// Shutdown implements calibrate.Probe.
func (p *Probe) Shutdown() error {
	if r := p.lib.Shutdown(); r != nvml.SUCCESS {
		return nvErr("NVML shutdown", r)
	}
	return nil
}

// DriverVersion implements calibrate.Probe.
func (p *Probe) DriverVersion() (string, error) {
	v, r := p.lib.SystemGetDriverVersion()
	if r != nvml.SUCCESS {
		return "", nvErr("driver version", r)
	}
	return v, nil
}

// CUDAVersion implements calibrate.Probe.
func (p *Probe) CUDAVersion() (string, error) {
	v, r := p.lib.SystemGetCudaDriverVersion()
	if r != nvml.SUCCESS {
		return "", nvErr("CUDA driver version", r)
	}
	return fmt.Sprintf("%d.%d", v/1000, (v%1000)/10), nil
}

// DeviceCount implements calibrate.Probe.
func (p *Probe) DeviceCount() (int, error) { return len(p.devs), nil }

func (p *Probe) dev(i int) (nvml.Device, error) {
	if i < 0 || i >= len(p.devs) {
		return nil, fmt.Errorf("GPU index %d out of range [0,%d)", i, len(p.devs))
	}
	return p.devs[i], nil
}

func cstr(b []uint8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, c)
	}
	return string(s)
}

// DeviceInfo implements calibrate.Probe.
func (p *Probe) DeviceInfo(i int) (calibrate.DeviceInfo, error) {
	d, err := p.dev(i)
	if err != nil {
		return calibrate.DeviceInfo{}, err
	}
	info := calibrate.DeviceInfo{Index: i, NUMANode: -1}
	var r nvml.Return
	if info.UUID, r = d.GetUUID(); r != nvml.SUCCESS {
		return info, nvErr("UUID", r)
	}
	if info.Name, r = d.GetName(); r != nvml.SUCCESS {
		return info, nvErr("name", r)
	}
	mem, r := d.GetMemoryInfo()
	if r != nvml.SUCCESS {
		return info, nvErr("memory info", r)
	}
	info.MemoryMiB = int64(mem.Total >> 20)
	if maj, min, r := d.GetCudaComputeCapability(); r == nvml.SUCCESS {
		info.ComputeCapability = fmt.Sprintf("%d.%d", maj, min)
	}
	if pci, r := d.GetPciInfo(); r == nvml.SUCCESS {
		info.PCIBusID = cstr(pci.BusId[:])
	}
	if numa, r := d.GetNumaNodeId(); r == nvml.SUCCESS {
		info.NUMANode = numa
	}
	cur, _, r := d.GetMigMode()
	if r == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE {
		info.MIGEnabled = true
		max, r := d.GetMaxMigDeviceCount()
		if r != nvml.SUCCESS {
			return info, nvErr("MIG device count", r)
		}
		for k := 0; k < max; k++ {
			md, r := d.GetMigDeviceHandleByIndex(k)
			if r == nvml.ERROR_NOT_FOUND || r == nvml.ERROR_INVALID_ARGUMENT {
				continue // no instance in this slot
			}
			if r != nvml.SUCCESS {
				return info, nvErr(fmt.Sprintf("MIG device %d", k), r)
			}
			mi := calibrate.MIGInstance{Index: k}
			mi.UUID, _ = md.GetUUID()
			mi.Name, _ = md.GetName()
			if mm, r := md.GetMemoryInfo(); r == nvml.SUCCESS {
				mi.MemoryMiB = int64(mm.Total >> 20)
			}
			info.MIGInstances = append(info.MIGInstances, mi)
		}
	}
	return info, nil
}

// CommonAncestor implements calibrate.Probe.
func (p *Probe) CommonAncestor(i, j int) (calibrate.PCIeLevel, error) {
	a, err := p.dev(i)
	if err != nil {
		return 0, err
	}
	b, err := p.dev(j)
	if err != nil {
		return 0, err
	}
	if i == j {
		return calibrate.PCIeInternal, nil
	}
	l, r := a.GetTopologyCommonAncestor(b)
	if r != nvml.SUCCESS {
		return 0, nvErr("topology common ancestor", r)
	}
	return calibrate.PCIeLevel(l), nil
}

// NVLinks implements calibrate.Probe. Devices without NVLink return no links.
func (p *Probe) NVLinks(i int) ([]calibrate.NVLink, error) {
	d, err := p.dev(i)
	if err != nil {
		return nil, err
	}
	var links []calibrate.NVLink
	for l := 0; l < nvml.NVLINK_MAX_LINKS; l++ {
		st, r := d.GetNvLinkState(l)
		if r != nvml.SUCCESS {
			continue // link not present / NVLink unsupported
		}
		link := calibrate.NVLink{Link: l, Active: st == nvml.FEATURE_ENABLED}
		if link.Active {
			if pci, r := d.GetNvLinkRemotePciInfo(l); r == nvml.SUCCESS {
				link.PeerBusID = cstr(pci.BusId[:])
			}
			link.PeerType = "unknown"
			if t, r := d.GetNvLinkRemoteDeviceType(l); r == nvml.SUCCESS {
				switch t {
				case nvml.NVLINK_DEVICE_TYPE_GPU:
					link.PeerType = "gpu"
				case nvml.NVLINK_DEVICE_TYPE_SWITCH:
					link.PeerType = "switch"
				case nvml.NVLINK_DEVICE_TYPE_IBMNPU:
					link.PeerType = "npu"
				}
			} else if strings.TrimSpace(link.PeerBusID) != "" {
				link.PeerType = "gpu" // older drivers: assume a GPU peer
			}
		}
		links = append(links, link)
	}
	return links, nil
}

// Sample implements calibrate.Probe; unsupported counters are calibrate.Unsupported.
func (p *Probe) Sample(i int) (calibrate.Sample, error) {
	d, err := p.dev(i)
	if err != nil {
		return calibrate.Sample{}, err
	}
	const un = calibrate.Unsupported
	s := calibrate.Sample{GPU: i, SMUtilPct: un, MemUtilPct: un, MemUsedMiB: un, PowerW: un,
		SMClockMHz: un, MemClockMHz: un, TempC: un, ThrottleReasons: un, PCIeRxKBps: un,
		PCIeTxKBps: un, ECCCorrected: un, ECCUncorrected: un}
	if u, r := d.GetUtilizationRates(); r == nvml.SUCCESS {
		s.SMUtilPct, s.MemUtilPct = float64(u.Gpu), float64(u.Memory)
	}
	if m, r := d.GetMemoryInfo(); r == nvml.SUCCESS {
		s.MemUsedMiB = float64(m.Used >> 20)
	}
	if mw, r := d.GetPowerUsage(); r == nvml.SUCCESS {
		s.PowerW = float64(mw) / 1000
	}
	if c, r := d.GetClockInfo(nvml.CLOCK_SM); r == nvml.SUCCESS {
		s.SMClockMHz = float64(c)
	}
	if c, r := d.GetClockInfo(nvml.CLOCK_MEM); r == nvml.SUCCESS {
		s.MemClockMHz = float64(c)
	}
	if t, r := d.GetTemperature(nvml.TEMPERATURE_GPU); r == nvml.SUCCESS {
		s.TempC = float64(t)
	}
	if tr, r := d.GetCurrentClocksEventReasons(); r == nvml.SUCCESS {
		s.ThrottleReasons = int64(tr)
	}
	if v, r := d.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); r == nvml.SUCCESS {
		s.PCIeRxKBps = float64(v)
	}
	if v, r := d.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES); r == nvml.SUCCESS {
		s.PCIeTxKBps = float64(v)
	}
	if v, r := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC); r == nvml.SUCCESS {
		s.ECCCorrected = int64(v)
	}
	if v, r := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r == nvml.SUCCESS {
		s.ECCUncorrected = int64(v)
	}
	return s, nil
}

var _ calibrate.Probe = (*Probe)(nil)
