package calibrate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
)

// Document identity of the interference file.
const (
	APIVersion       = "gpusim/v1alpha1"
	InterferenceKind = "InterferenceMatrix"
)

// InterferenceMatrix is the result of a calibration run (interference.yaml), read
// by the simulator's co-location policies. See docs/calibrate.md for the format.
//
// Contract: Workloads are in plan order with unique names; Modes are in plan order,
// unique; within a mode Alone lists each measured workload once and Groups lists
// each measured group (members in plan order, 2 or more) once; Members[k] of a
// group is the k-th co-located process and its speed factor is its co-located
// throughput divided by the mean alone throughput of that workload under the same
// mode. All numbers are finite and >= 0.
type InterferenceMatrix struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   MatrixMetadata    `yaml:"metadata"`
	Workloads  []WorkloadProfile `yaml:"workloads"`
	Modes      []ModeResult      `yaml:"modes"`
}

// MatrixMetadata says where and how the matrix was measured.
type MatrixMetadata struct {
	Name           string  `yaml:"name"`
	Host           string  `yaml:"host,omitempty"`
	GPUModel       string  `yaml:"gpuModel,omitempty"`
	GPUName        string  `yaml:"gpuName,omitempty"`
	GPUUUID        string  `yaml:"gpuUUID,omitempty"`
	DriverVersion  string  `yaml:"driverVersion,omitempty"`
	CUDAVersion    string  `yaml:"cudaVersion,omitempty"`
	Created        string  `yaml:"created,omitempty"` // RFC 3339
	Fake           bool    `yaml:"fake,omitempty"`    // measured with the fake NVML
	WarmupSeconds  float64 `yaml:"warmupSeconds"`
	MeasureSeconds float64 `yaml:"measureSeconds"`
	Repetitions    int     `yaml:"repetitions"`
}

// WorkloadProfile is a workload and its resource fingerprint.
type WorkloadProfile struct {
	Name        string      `yaml:"name"`
	Class       string      `yaml:"class,omitempty"`
	Fingerprint Fingerprint `yaml:"fingerprint"`
}

// Fingerprint is the mean of the NVML samples taken during the workload's alone
// measurement windows (time-slice or MPS mode; MIG only if nothing else was run).
// Samples is how many samples the means are over; a metric the GPU did not report
// is omitted (zero).
type Fingerprint struct {
	SMUtilPct  float64 `yaml:"smUtilPct"`
	MemUtilPct float64 `yaml:"memUtilPct"` // memory-bandwidth pressure
	MemUsedMiB float64 `yaml:"memUsedMiB"`
	PCIeRxMBps float64 `yaml:"pcieRxMBps"`
	PCIeTxMBps float64 `yaml:"pcieTxMBps"`
	PowerW     float64 `yaml:"powerW"`
	SMClockMHz float64 `yaml:"smClockMHz"`
	Samples    int     `yaml:"samples"`
}

// ModeResult holds one sharing mode's measurements on one GPU model. GPUModel is
// optional and defaults to metadata.gpuModel, so one file can hold several GPU
// models (one entry per model and mode) while single-model files stay unchanged.
type ModeResult struct {
	Mode     string        `yaml:"mode"`
	GPUModel string        `yaml:"gpuModel,omitempty"`
	Alone    []AloneResult `yaml:"alone"`
	Groups   []GroupResult `yaml:"groups"`
}

// AloneResult is a workload's throughput alone on the GPU (items/s).
type AloneResult struct {
	Workload   string `yaml:"workload"`
	Throughput Stat   `yaml:"throughput"`
}

// GroupResult is one co-located group; Members are in the group's order.
type GroupResult struct {
	Members []MemberResult `yaml:"members"`
}

// MemberResult is one member's speed factor in a group.
type MemberResult struct {
	Workload string `yaml:"workload"`
	Stat     `yaml:",inline"`
}

// Stat summarizes repetitions: mean, sample standard deviation (0 for one
// repetition) and the number of repetitions measured.
type Stat struct {
	Mean        float64 `yaml:"mean"`
	Stddev      float64 `yaml:"stddev"`
	Repetitions int     `yaml:"repetitions"`
}

// newStat summarizes xs (which must be non-empty).
func newStat(xs []float64) Stat {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	sd := 0.0
	if len(xs) > 1 {
		sd = math.Sqrt(ss / float64(len(xs)-1))
	}
	return Stat{Mean: mean, Stddev: sd, Repetitions: len(xs)}
}

// Factor returns the speed factor of workload a when co-located with b alone (a
// pair) under mode: the mean over a's positions in the pair group; ok is false when
// the pair was not measured.
func (m *InterferenceMatrix) Factor(mode, a, b string) (float64, bool) {
	for _, mr := range m.Modes {
		if mr.Mode != mode {
			continue
		}
		for _, g := range mr.Groups {
			if len(g.Members) != 2 {
				continue
			}
			x, y := g.Members[0], g.Members[1]
			switch {
			case x.Workload == a && y.Workload == b && a == b:
				return (x.Mean + y.Mean) / 2, true
			case x.Workload == a && y.Workload == b:
				return x.Mean, true
			case x.Workload == b && y.Workload == a:
				return y.Mean, true
			}
		}
	}
	return 0, false
}

// ModeGPUModel returns the GPU model of Modes[i]: its own gpuModel, or
// metadata.gpuModel when that is empty.
func (m *InterferenceMatrix) ModeGPUModel(i int) string {
	if g := m.Modes[i].GPUModel; g != "" {
		return g
	}
	return m.Metadata.GPUModel
}

// Write encodes m as YAML (after validating it).
func (m *InterferenceMatrix) Write(w io.Writer) error {
	if err := m.validate().render("interference", nil); err != nil {
		return fmt.Errorf("invalid interference matrix: %w", err)
	}
	if _, err := io.WriteString(w, "# gpusim interference matrix: speed factor = co-located throughput / alone throughput.\n# Format: docs/calibrate.md\n"); err != nil {
		return err
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return err
	}
	return enc.Close()
}

// ReadInterference parses and validates an interference file; name is used in
// error messages (file:line: field: problem). It never panics on bad input.
func ReadInterference(name string, r io.Reader) (*InterferenceMatrix, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var m InterferenceMatrix
	if err := dec.Decode(&m); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty document", name)
		}
		return nil, yamlmsg.FileError(name, &root, err)
	}
	if err := m.validate().render(name, &root); err != nil {
		return nil, err
	}
	m.normalize()
	return &m, nil
}

// normalize replaces nil lists by empty ones, the form Write produces and
// ReadInterference returns, so a normalized matrix round-trips identically.
func (m *InterferenceMatrix) normalize() {
	if m.Workloads == nil {
		m.Workloads = []WorkloadProfile{}
	}
	if m.Modes == nil {
		m.Modes = []ModeResult{}
	}
	for i := range m.Modes {
		if m.Modes[i].Alone == nil {
			m.Modes[i].Alone = []AloneResult{}
		}
		if m.Modes[i].Groups == nil {
			m.Modes[i].Groups = []GroupResult{}
		}
	}
}

// LoadInterference reads an interference file from disk.
func LoadInterference(path string) (*InterferenceMatrix, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadInterference(path, f)
}

// printable reports whether s has only printable characters (no line breaks or
// other control characters), so it survives YAML encoding unchanged.
func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

func badNum(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) || x < 0 }

func (m *InterferenceMatrix) validate() fieldErrs {
	var fe fieldErrs
	if m.APIVersion != APIVersion {
		fe.add("apiVersion", "must be %q, got %q", APIVersion, m.APIVersion)
	}
	if m.Kind != InterferenceKind {
		fe.add("kind", "must be %q, got %q", InterferenceKind, m.Kind)
	}
	md := m.Metadata
	for _, c := range []struct{ n, v string }{{"name", md.Name}, {"host", md.Host}, {"gpuModel", md.GPUModel},
		{"gpuName", md.GPUName}, {"gpuUUID", md.GPUUUID}, {"driverVersion", md.DriverVersion},
		{"cudaVersion", md.CUDAVersion}, {"created", md.Created}} {
		if !printable(c.v) {
			fe.add("metadata."+c.n, "must be a single line of printable characters")
		}
	}
	if badNum(md.WarmupSeconds) {
		fe.add("metadata.warmupSeconds", "must be a finite number >= 0")
	}
	if badNum(md.MeasureSeconds) {
		fe.add("metadata.measureSeconds", "must be a finite number >= 0")
	}
	if md.Repetitions < 0 {
		fe.add("metadata.repetitions", "must be >= 0")
	}
	known := map[string]bool{}
	for i, w := range m.Workloads {
		at := fmt.Sprintf("workloads[%d]", i)
		if !nameRE.MatchString(w.Name) {
			fe.add(at+".name", "must match %s, got %q", nameRE, w.Name)
		} else if known[w.Name] {
			fe.add(at+".name", "duplicate workload %q", w.Name)
		}
		known[w.Name] = true
		if !printable(w.Class) {
			fe.add(at+".class", "must be a single line of printable characters")
		}
		f := w.Fingerprint
		for _, c := range []struct {
			n string
			v float64
		}{{"smUtilPct", f.SMUtilPct}, {"memUtilPct", f.MemUtilPct}, {"memUsedMiB", f.MemUsedMiB},
			{"pcieRxMBps", f.PCIeRxMBps}, {"pcieTxMBps", f.PCIeTxMBps}, {"powerW", f.PowerW}, {"smClockMHz", f.SMClockMHz}} {
			if badNum(c.v) {
				fe.add(at+".fingerprint."+c.n, "must be a finite number >= 0")
			}
		}
		if f.Samples < 0 {
			fe.add(at+".fingerprint.samples", "must be >= 0")
		}
	}
	modes := map[string]bool{}
	for i, mr := range m.Modes {
		at := fmt.Sprintf("modes[%d]", i)
		switch mr.Mode {
		case ModeTimeslice, ModeMPS, ModeMIG:
		default:
			fe.add(at+".mode", "unknown mode %q (want timeslice, mps or mig)", mr.Mode)
		}
		if !printable(mr.GPUModel) {
			fe.add(at+".gpuModel", "must be a single line of printable characters")
		}
		gm := m.ModeGPUModel(i)
		mk := strings.ToLower(gm) + "\x00" + mr.Mode
		if modes[mk] {
			if gm == "" {
				fe.add(at+".mode", "duplicate mode %q", mr.Mode)
			} else {
				fe.add(at+".mode", "duplicate mode %q for GPU model %q", mr.Mode, gm)
			}
		}
		modes[mk] = true
		alone := map[string]bool{}
		for j, a := range mr.Alone {
			aat := fmt.Sprintf("%s.alone[%d]", at, j)
			if !known[a.Workload] {
				fe.add(aat+".workload", "unknown workload %q", a.Workload)
			}
			if alone[a.Workload] {
				fe.add(aat+".workload", "duplicate alone entry for %q", a.Workload)
			}
			alone[a.Workload] = true
			checkStat(&fe, aat+".throughput", a.Throughput)
		}
		groups := map[string]bool{}
		for j, g := range mr.Groups {
			gat := fmt.Sprintf("%s.groups[%d]", at, j)
			if len(g.Members) < 2 {
				fe.add(gat+".members", "a group has at least 2 members, got %d", len(g.Members))
			}
			key := ""
			for k, mb := range g.Members {
				mat := fmt.Sprintf("%s.members[%d]", gat, k)
				if !known[mb.Workload] {
					fe.add(mat+".workload", "unknown workload %q", mb.Workload)
				}
				key += mb.Workload + "+"
				checkStat(&fe, mat, mb.Stat)
			}
			if groups[key] {
				fe.add(gat, "duplicate group %s", key[:max(0, len(key)-1)])
			}
			groups[key] = true
		}
	}
	return fe
}

func checkStat(fe *fieldErrs, at string, s Stat) {
	if badNum(s.Mean) {
		fe.add(at+".mean", "must be a finite number >= 0")
	}
	if badNum(s.Stddev) {
		fe.add(at+".stddev", "must be a finite number >= 0")
	}
	if s.Repetitions < 1 {
		fe.add(at+".repetitions", "must be >= 1, got %d", s.Repetitions)
	}
}
