package calibrate

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Host is what discover needs to know about the machine besides its GPUs (read by
// the CLI from the OS, injected for tests).
type Host struct {
	Name      string // host name
	CPUs      int    // logical CPUs
	MemoryMiB int64  // physical memory
}

// GPUReport is one GPU as reported by discover.
type GPUReport struct {
	DeviceInfo `yaml:",inline"`
	// NVLinks are the device's NVLink links; ActiveNVLinks counts the active ones.
	NVLinks       []NVLink `json:"nvlinks,omitempty" yaml:"nvlinks,omitempty"`
	ActiveNVLinks int      `json:"activeNvlinks" yaml:"activeNvlinks"`
	// NVLinkPeers are the indexes of the GPUs reachable over NVLink (directly or
	// through an NVSwitch fabric), ascending.
	NVLinkPeers []int `json:"nvlinkPeers" yaml:"nvlinkPeers"`
}

// NodeReport is the result of Discover.
type NodeReport struct {
	Host          string      `json:"host" yaml:"host"`
	DriverVersion string      `json:"driverVersion" yaml:"driverVersion"`
	CUDAVersion   string      `json:"cudaVersion" yaml:"cudaVersion"`
	GPUs          []GPUReport `json:"gpus" yaml:"gpus"`
	// Topology[i][j] is the closest link class between GPU i and GPU j (NVLink
	// takes precedence over the PCIe common ancestor).
	Topology [][]Link     `json:"topology" yaml:"topology"`
	Template NodeTemplate `json:"template" yaml:"template"`
}

// NodeTemplate is a pool template a scenario accepts as a custom node type.
// NVLinkSize, PCIeSize and SocketSize are how many consecutive GPU indexes share an
// NVLink domain, a PCIe switch and a CPU socket; 0 means all GPUs of the node.
type NodeTemplate struct {
	Name         string `json:"name" yaml:"name"`
	GPUModel     string `json:"gpuModel" yaml:"gpuModel"`
	GPUs         int    `json:"gpus" yaml:"gpus"`
	GPUMemoryMiB int64  `json:"gpuMemoryMiB" yaml:"gpuMemoryMiB"`
	CPUMilli     int64  `json:"cpuMilli" yaml:"cpuMilli"`
	MemoryMiB    int64  `json:"memoryMiB" yaml:"memoryMiB"`
	NVLinkSize   int    `json:"nvlinkSize" yaml:"nvlinkSize"`
	PCIeSize     int    `json:"pcieSize" yaml:"pcieSize"`
	SocketSize   int    `json:"socketSize" yaml:"socketSize"`
}

// Discover reads the node's GPUs and topology through p (which must be
// initialized). Results are ordered by GPU index.
func Discover(p Probe, host Host) (*NodeReport, error) {
	r := &NodeReport{Host: host.Name}
	var err error
	if r.DriverVersion, err = p.DriverVersion(); err != nil {
		return nil, fmt.Errorf("driver version: %w", err)
	}
	if r.CUDAVersion, err = p.CUDAVersion(); err != nil {
		return nil, fmt.Errorf("CUDA version: %w", err)
	}
	n, err := p.DeviceCount()
	if err != nil {
		return nil, fmt.Errorf("device count: %w", err)
	}
	busToGPU := map[string]int{}
	for i := 0; i < n; i++ {
		d, err := p.DeviceInfo(i)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: %w", i, err)
		}
		links, err := p.NVLinks(i)
		if err != nil {
			return nil, fmt.Errorf("GPU %d: NVLink: %w", i, err)
		}
		g := GPUReport{DeviceInfo: d, NVLinks: links, NVLinkPeers: []int{}}
		for _, l := range links {
			if l.Active {
				g.ActiveNVLinks++
			}
		}
		busToGPU[normBusID(d.PCIBusID)] = i
		r.GPUs = append(r.GPUs, g)
	}
	// NVLink adjacency: direct GPU peers, or both GPUs attached to NVSwitches.
	nv := make([][]bool, n)
	for i := range nv {
		nv[i] = make([]bool, n)
	}
	onSwitch := make([]bool, n)
	for i, g := range r.GPUs {
		for _, l := range g.NVLinks {
			if !l.Active {
				continue
			}
			switch l.PeerType {
			case "switch":
				onSwitch[i] = true
			case "gpu", "":
				if j, ok := busToGPU[normBusID(l.PeerBusID)]; ok && j != i {
					nv[i][j], nv[j][i] = true, true
				}
			}
		}
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j && onSwitch[i] && onSwitch[j] {
				nv[i][j] = true
			}
		}
	}
	r.Topology = make([][]Link, n)
	pcie := make([][]Link, n)
	for i := 0; i < n; i++ {
		r.Topology[i] = make([]Link, n)
		pcie[i] = make([]Link, n)
		for j := 0; j < n; j++ {
			if i == j {
				r.Topology[i][j], pcie[i][j] = LinkSelf, LinkSelf
				continue
			}
			lvl, err := p.CommonAncestor(i, j)
			if err != nil {
				return nil, fmt.Errorf("topology GPU %d-%d: %w", i, j, err)
			}
			pcie[i][j] = LinkOf(lvl)
			r.Topology[i][j] = pcie[i][j]
			if nv[i][j] {
				r.Topology[i][j] = LinkNVLink
				r.GPUs[i].NVLinkPeers = append(r.GPUs[i].NVLinkPeers, j)
			}
		}
	}
	r.Template = nodeTemplate(r, host, nv, pcie)
	return r, nil
}

func normBusID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	// NVML reports 8-digit domains ("00000000:18:00.0"); sysfs uses 4 digits.
	if i := strings.IndexByte(s, ':'); i > 4 {
		s = s[i-4:]
	}
	return s
}

var nonSlug = regexp.MustCompile(`[^A-Za-z0-9.]+`)

// ModelSlug turns an NVML device name into a gpuModel identifier:
// "NVIDIA H100 80GB HBM3" -> "H100-80GB-HBM3".
func ModelSlug(name string) string {
	name = strings.TrimSpace(name)
	name = strings.TrimPrefix(name, "NVIDIA ")
	s := strings.Trim(nonSlug.ReplaceAllString(name, "-"), "-")
	if s == "" {
		return "unknown"
	}
	return s
}

func nodeTemplate(r *NodeReport, host Host, nv [][]bool, pcie [][]Link) NodeTemplate {
	n := len(r.GPUs)
	t := NodeTemplate{
		GPUs:      n,
		CPUMilli:  int64(host.CPUs) * 1000,
		MemoryMiB: host.MemoryMiB,
	}
	if n > 0 {
		t.GPUModel = ModelSlug(r.GPUs[0].Name)
		t.GPUMemoryMiB = r.GPUs[0].MemoryMiB
		for _, g := range r.GPUs[1:] {
			if g.MemoryMiB < t.GPUMemoryMiB {
				t.GPUMemoryMiB = g.MemoryMiB
			}
		}
	}
	t.Name = strings.ToLower(fmt.Sprintf("%s-x%d", t.GPUModel, n))
	rank := map[Link]int{LinkSelf: 0, LinkPCIeSwitch: 1, LinkHostBridge: 2, LinkNUMANode: 3, LinkSystem: 4}
	t.NVLinkSize = groupSize(n, func(i, j int) bool { return nv[i][j] })
	t.PCIeSize = groupSize(n, func(i, j int) bool { return rank[pcie[i][j]] <= rank[LinkPCIeSwitch] })
	t.SocketSize = groupSize(n, func(i, j int) bool { return rank[pcie[i][j]] <= rank[LinkNUMANode] })
	return t
}

// groupSize is the largest k dividing n such that every block of k consecutive
// GPUs is pairwise connected; k == n is reported as 0 ("all GPUs of the node").
func groupSize(n int, connected func(i, j int) bool) int {
	if n == 0 {
		return 0
	}
	for k := n; k >= 1; k-- {
		if n%k != 0 {
			continue
		}
		ok := true
		for b := 0; b < n && ok; b += k {
			for i := b; i < b+k && ok; i++ {
				for j := b; j < b+k && ok; j++ {
					if i != j && !connected(i, j) {
						ok = false
					}
				}
			}
		}
		if ok {
			if k == n {
				return 0
			}
			return k
		}
	}
	return 1
}

// WriteTemplate writes t as a YAML document (a scenario pool template), preceded by
// a comment naming where it came from.
func WriteTemplate(w io.Writer, t NodeTemplate, source string) error {
	if _, err := fmt.Fprintf(w, "# Node template written by gpusim calibrate discover (%s).\n"+
		"# Use it as a custom pool template in a scenario; nvlinkSize/pcieSize/socketSize\n"+
		"# count consecutive GPU indexes, 0 = all GPUs of the node.\n", source); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(t); err != nil {
		return err
	}
	return enc.Close()
}

// WriteText prints the report for humans.
func (r *NodeReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "host %s: driver %s, CUDA %s, %d GPU(s)\n", r.Host, r.DriverVersion, r.CUDAVersion, len(r.GPUs))
	for _, g := range r.GPUs {
		mig := "off"
		if g.MIGEnabled {
			mig = fmt.Sprintf("on, %d instance(s)", len(g.MIGInstances))
		}
		fmt.Fprintf(&b, "GPU %d  %s  %s  %d MiB  cc %s  bus %s  numa %d  MIG %s  NVLink %d active, peers %v\n",
			g.Index, g.UUID, g.Name, g.MemoryMiB, g.ComputeCapability, g.PCIBusID, g.NUMANode, mig, g.ActiveNVLinks, g.NVLinkPeers)
		for _, m := range g.MIGInstances {
			fmt.Fprintf(&b, "    MIG %d  %s  %s  %d MiB\n", m.Index, m.UUID, m.Name, m.MemoryMiB)
		}
	}
	if n := len(r.GPUs); n > 0 {
		b.WriteString("\ntopology:\n      ")
		for j := 0; j < n; j++ {
			fmt.Fprintf(&b, " %-11s", fmt.Sprintf("GPU%d", j))
		}
		b.WriteString("\n")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, "GPU%-3d", i)
			for j := 0; j < n; j++ {
				fmt.Fprintf(&b, " %-11s", r.Topology[i][j])
			}
			b.WriteString("\n")
		}
	}
	t := r.Template
	fmt.Fprintf(&b, "\ntemplate %s: %d x %s (%d MiB), cpuMilli %d, memoryMiB %d, nvlinkSize %d, pcieSize %d, socketSize %d\n",
		t.Name, t.GPUs, t.GPUModel, t.GPUMemoryMiB, t.CPUMilli, t.MemoryMiB, t.NVLinkSize, t.PCIeSize, t.SocketSize)
	_, err := io.WriteString(w, b.String())
	return err
}
