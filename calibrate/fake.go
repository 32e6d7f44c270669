package calibrate

import (
	"fmt"
	"math"
	"sync"
)

// Fake is a deterministic Probe modeled on a DGX H100-like node: GPUs share an
// NVSwitch fabric (every GPU has 18 active links to switches), consecutive pairs of
// GPUs sit behind one PCIe switch, the first half of the GPUs is on NUMA node 0 and
// the second half on NUMA node 1. When MIGGPU is a valid index that GPU is in MIG
// mode with MIGInstances existing 2g.20gb instances. Samples follow a fixed
// per-GPU pattern driven by a call counter, so the same call sequence always yields
// the same values. Fake is safe for concurrent use.
type Fake struct {
	GPUs         int  // number of GPUs (default 8 via NewFake)
	MIGGPU       int  // index of the GPU in MIG mode; -1 none
	MIGInstances int  // MIG instances on MIGGPU
	Missing      bool // Init fails with ErrNVMLNotFound (simulates a box without driver)

	mu      sync.Mutex
	inited  bool
	samples map[int]int
}

// NewFake returns the fake used by --fake: 8 GPUs, GPU 7 in MIG mode with 3
// instances.
func NewFake() *Fake { return &Fake{GPUs: 8, MIGGPU: 7, MIGInstances: 3} }

// Init implements Probe.
func (f *Fake) Init() error {
	if f.Missing {
		return ErrNVMLNotFound
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inited = true
	if f.samples == nil {
		f.samples = map[int]int{}
	}
	return nil
}

// Shutdown implements Probe.
func (f *Fake) Shutdown() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inited = false
	return nil
}

func (f *Fake) check(i int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.inited {
		return fmt.Errorf("fake NVML: not initialized")
	}
	if i < 0 || i >= f.GPUs {
		return fmt.Errorf("fake NVML: device index %d out of range [0,%d)", i, f.GPUs)
	}
	return nil
}

// DriverVersion implements Probe.
func (f *Fake) DriverVersion() (string, error) { return "550.54.15", f.initErr() }

// CUDAVersion implements Probe.
func (f *Fake) CUDAVersion() (string, error) { return "12.4", f.initErr() }

func (f *Fake) initErr() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.inited {
		return fmt.Errorf("fake NVML: not initialized")
	}
	return nil
}

// DeviceCount implements Probe.
func (f *Fake) DeviceCount() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.inited {
		return 0, fmt.Errorf("fake NVML: not initialized")
	}
	return f.GPUs, nil
}

func fakeBusID(i int) string {
	buses := []int{0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb}
	b := 0x100 + i
	if i < len(buses) {
		b = buses[i]
	}
	return fmt.Sprintf("00000000:%02X:00.0", b)
}

// DeviceInfo implements Probe.
func (f *Fake) DeviceInfo(i int) (DeviceInfo, error) {
	if err := f.check(i); err != nil {
		return DeviceInfo{}, err
	}
	d := DeviceInfo{
		Index:             i,
		UUID:              fmt.Sprintf("GPU-fa4e0000-0000-4000-8000-%012x", i),
		Name:              "NVIDIA H100 80GB HBM3",
		MemoryMiB:         81559,
		ComputeCapability: "9.0",
		PCIBusID:          fakeBusID(i),
		NUMANode:          f.numa(i),
	}
	if i == f.MIGGPU {
		d.MIGEnabled = true
		for k := 0; k < f.MIGInstances; k++ {
			d.MIGInstances = append(d.MIGInstances, MIGInstance{
				Index:     k,
				UUID:      fmt.Sprintf("MIG-fa4e%04x-0000-4000-8000-%012x", i, k),
				Name:      "NVIDIA H100 80GB HBM3 MIG 2g.20gb",
				MemoryMiB: 19968,
			})
		}
	}
	return d, nil
}

func (f *Fake) numa(i int) int {
	if f.GPUs < 2 {
		return 0
	}
	return i / ((f.GPUs + 1) / 2)
}

// CommonAncestor implements Probe.
func (f *Fake) CommonAncestor(i, j int) (PCIeLevel, error) {
	if err := f.check(i); err != nil {
		return 0, err
	}
	if err := f.check(j); err != nil {
		return 0, err
	}
	switch {
	case i == j:
		return PCIeInternal, nil
	case i/2 == j/2:
		return PCIeSingle, nil
	case f.numa(i) == f.numa(j):
		return PCIeNode, nil
	default:
		return PCIeSystem, nil
	}
}

// NVLinks implements Probe: 18 active links per GPU, all to NVSwitches.
func (f *Fake) NVLinks(i int) ([]NVLink, error) {
	if err := f.check(i); err != nil {
		return nil, err
	}
	links := make([]NVLink, 18)
	for l := range links {
		links[l] = NVLink{Link: l, Active: true, PeerType: "switch",
			PeerBusID: fmt.Sprintf("00000000:%02X:00.0", 0xc0+l%4)}
	}
	return links, nil
}

// Sample implements Probe. Values depend only on the GPU index and how many
// samples of that GPU were taken before.
func (f *Fake) Sample(i int) (Sample, error) {
	if err := f.check(i); err != nil {
		return Sample{}, err
	}
	f.mu.Lock()
	k := f.samples[i]
	f.samples[i] = k + 1
	f.mu.Unlock()
	x := float64(k)
	wave := (math.Sin(x/3+float64(i)) + 1) / 2 // 0..1
	s := Sample{
		GPU:             i,
		SMUtilPct:       math.Round(40 + 55*wave),
		MemUtilPct:      math.Round(20 + 60*wave),
		MemUsedMiB:      float64(4096 + 512*(k%8)),
		PowerW:          math.Round(150 + 500*wave),
		SMClockMHz:      1980,
		MemClockMHz:     2619,
		TempC:           float64(35 + (k+i)%20),
		ThrottleReasons: 0,
		PCIeRxKBps:      float64(1000 * (1 + k%5)),
		PCIeTxKBps:      float64(500 * (1 + k%3)),
		ECCCorrected:    0,
		ECCUncorrected:  0,
	}
	if wave > 0.95 {
		s.ThrottleReasons = 4 // sw_power_cap
		s.SMClockMHz = 1755
	}
	return s, nil
}
