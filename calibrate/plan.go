package calibrate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
)

// Sharing modes a plan can test.
const (
	ModeTimeslice = "timeslice" // concurrent processes on one GPU (default time-slicing)
	ModeMPS       = "mps"       // concurrent processes under an MPS control daemon
	ModeMIG       = "mig"       // each member on its own existing MIG instance
)

// PlanKind is the kind of a calibration plan document.
const PlanKind = "CalibrationPlan"

// ProgressPrefix starts the progress line a workload prints on stdout after each
// unit of work: "gpusim-progress items=<n>", n = items completed since start
// (monotonic, integer or decimal). Other text on the line after n is ignored.
const ProgressPrefix = "gpusim-progress"

// Plan is a calibration plan (see docs/calibrate.md).
type Plan struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	// Name labels the results.
	Name string `yaml:"name"`
	// GPU is the NVML index of the GPU under test (default 0).
	GPU int `yaml:"gpu"`
	// Modes to test, in order (default [timeslice]).
	Modes []string `yaml:"modes"`
	// GroupSizes to test besides alone: 2 = pairs, 3 = triples (default [2]).
	// Alone (1) is always measured: it is every speed factor's denominator.
	GroupSizes []int `yaml:"groupSizes"`
	// Warmup is discarded after every member reported its first progress line;
	// Measure is the window throughput is computed over.
	Warmup  time.Duration `yaml:"warmup"`
	Measure time.Duration `yaml:"measure"`
	// Repetitions of every cell (default 3).
	Repetitions int `yaml:"repetitions"`
	// Timeout bounds one cell from the first process start to the last process
	// exit (default 2*(warmup+measure)+2m).
	Timeout time.Duration `yaml:"timeout"`
	// StopGrace is how long members get between SIGTERM and SIGKILL (default 5s).
	StopGrace time.Duration `yaml:"stopGrace"`
	// SampleInterval is the NVML sampling period during a cell (default 1s).
	SampleInterval time.Duration `yaml:"sampleInterval"`
	// Env is added to every workload's environment.
	Env map[string]string `yaml:"env"`
	MPS struct {
		// ControlCommand is the MPS control binary (default nvidia-cuda-mps-control).
		ControlCommand string `yaml:"controlCommand"`
	} `yaml:"mps"`
	MIG struct {
		// Instances are the MIG device UUIDs to use, in order; default: every
		// existing instance of GPU. The tool never creates or destroys instances.
		Instances []string `yaml:"instances"`
	} `yaml:"mig"`
	Workloads []Workload `yaml:"workloads"`
}

// Workload is one program to measure.
type Workload struct {
	Name  string `yaml:"name"`
	Class string `yaml:"class"`
	// Command is an argv list, or a string run with /bin/sh -c.
	Command Command           `yaml:"command"`
	Dir     string            `yaml:"dir"`
	Env     map[string]string `yaml:"env"`
	// Progress selects how throughput is read from stdout.
	Progress Progress `yaml:"progress"`
}

// Progress describes how a workload reports progress on stdout. With Regex empty
// the workload prints "gpusim-progress items=<n>" lines (n cumulative); otherwise
// Regex's first capture group is a throughput (items/s) and the cell's throughput
// is the mean of the values printed in the measurement window.
type Progress struct {
	Regex string `yaml:"regex"`
	re    *regexp.Regexp
}

// Command is an argv list; a YAML string becomes ["/bin/sh", "-c", string].
type Command []string

// UnmarshalYAML accepts a string or a list of strings.
func (c *Command) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var s string
		if err := n.Decode(&s); err != nil {
			return err
		}
		if strings.TrimSpace(s) == "" {
			*c = nil
			return nil
		}
		*c = Command{"/bin/sh", "-c", s}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*c = l
		return nil
	}
	return fmt.Errorf("line %d: command must be a string or a list of strings", n.Line)
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// LoadPlan reads and validates a plan file; errors carry file:line: field.
func LoadPlan(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	return ParsePlan(path, b)
}

// ParsePlan parses and validates a plan; name is used in error messages. Defaults
// are applied (see Plan's field comments).
func ParsePlan(name string, b []byte) (*Plan, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(b, &root); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var p Plan
	if err := dec.Decode(&p); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty plan", name)
		}
		return nil, yamlmsg.FileError(name, &root, err)
	}
	p.defaults()
	return &p, p.validate().render(name, &root)
}

func (p *Plan) defaults() {
	if len(p.Modes) == 0 {
		p.Modes = []string{ModeTimeslice}
	}
	if p.GroupSizes == nil {
		p.GroupSizes = []int{2}
	}
	if p.Repetitions == 0 {
		p.Repetitions = 3
	}
	if p.Timeout == 0 {
		p.Timeout = 2*(p.Warmup+p.Measure) + 2*time.Minute
	}
	if p.StopGrace == 0 {
		p.StopGrace = 5 * time.Second
	}
	if p.SampleInterval == 0 {
		p.SampleInterval = time.Second
	}
	if p.MPS.ControlCommand == "" {
		p.MPS.ControlCommand = "nvidia-cuda-mps-control"
	}
	if p.Name == "" {
		p.Name = "calibration"
	}
}

func (p *Plan) validate() fieldErrs {
	var fe fieldErrs
	if p.APIVersion != APIVersion {
		fe.add("apiVersion", "must be %q, got %q", APIVersion, p.APIVersion)
	}
	if p.Kind != PlanKind {
		fe.add("kind", "must be %q, got %q", PlanKind, p.Kind)
	}
	if p.GPU < 0 {
		fe.add("gpu", "must be >= 0, got %d", p.GPU)
	}
	seenMode := map[string]bool{}
	for i, m := range p.Modes {
		switch m {
		case ModeTimeslice, ModeMPS, ModeMIG:
		default:
			fe.add(fmt.Sprintf("modes[%d]", i), "unknown mode %q (want timeslice, mps or mig)", m)
		}
		if seenMode[m] {
			fe.add(fmt.Sprintf("modes[%d]", i), "duplicate mode %q", m)
		}
		seenMode[m] = true
	}
	seenSize := map[int]bool{}
	for i, s := range p.GroupSizes {
		if s < 1 || s > 3 {
			fe.add(fmt.Sprintf("groupSizes[%d]", i), "must be 1 (alone), 2 (pairs) or 3 (triples), got %d", s)
		}
		if seenSize[s] {
			fe.add(fmt.Sprintf("groupSizes[%d]", i), "duplicate group size %d", s)
		}
		seenSize[s] = true
	}
	if p.Warmup < 0 {
		fe.add("warmup", "must be >= 0, got %s", p.Warmup)
	}
	if p.Measure <= 0 {
		fe.add("measure", "must be > 0 (a duration such as 30s)")
	}
	if p.Repetitions < 1 {
		fe.add("repetitions", "must be >= 1, got %d", p.Repetitions)
	}
	if p.Timeout <= p.Warmup+p.Measure {
		fe.add("timeout", "must be longer than warmup+measure (%s), got %s", p.Warmup+p.Measure, p.Timeout)
	}
	if p.StopGrace < 0 {
		fe.add("stopGrace", "must be >= 0, got %s", p.StopGrace)
	}
	if p.SampleInterval < time.Millisecond {
		fe.add("sampleInterval", "must be >= 1ms, got %s", p.SampleInterval)
	}
	for i, u := range p.MIG.Instances {
		if !strings.HasPrefix(u, "MIG-") {
			fe.add(fmt.Sprintf("mig.instances[%d]", i), "must be a MIG device UUID (MIG-...), got %q", u)
		}
	}
	if len(p.Workloads) == 0 {
		fe.add("workloads", "at least one workload is required")
	}
	names := map[string]bool{}
	for i := range p.Workloads {
		w := &p.Workloads[i]
		at := fmt.Sprintf("workloads[%d]", i)
		if !nameRE.MatchString(w.Name) {
			fe.add(at+".name", "must match %s, got %q", nameRE, w.Name)
		} else if names[w.Name] {
			fe.add(at+".name", "duplicate workload %q", w.Name)
		}
		names[w.Name] = true
		if len(w.Command) == 0 || w.Command[0] == "" {
			fe.add(at+".command", "required (an argv list or a shell string)")
		}
		if w.Progress.Regex != "" {
			re, err := regexp.Compile(w.Progress.Regex)
			switch {
			case err != nil:
				fe.add(at+".progress.regex", "%v", err)
			case re.NumSubexp() < 1:
				fe.add(at+".progress.regex", "needs a capture group for the throughput value")
			default:
				w.Progress.re = re
			}
		}
		for k := range w.Env {
			if k == "" || strings.ContainsAny(k, "=\x00") {
				fe.add(at+".env", "invalid variable name %q", k)
			}
		}
	}
	for k := range p.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			fe.add("env", "invalid variable name %q", k)
		}
	}
	if n := p.cellCount(); n > MaxCells {
		fe.add("workloads", "the plan has %.0f cells (modes x repetitions x groups), more than %d; use fewer workloads, group sizes or repetitions", n, MaxCells)
	}
	return fe
}

// MaxCells bounds the number of cells of a plan.
const MaxCells = 100000

// cellCount is the number of cells Cells would return (as a float: no overflow).
func (p *Plan) cellCount() float64 {
	n := float64(len(p.Workloads))
	groups := n // alone
	sizes := map[int]bool{}
	for _, s := range p.GroupSizes {
		sizes[s] = true
	}
	for k := 2; k <= 3; k++ {
		if sizes[k] {
			// multisets of size k from n: C(n+k-1, k)
			c := 1.0
			for i := 0; i < k; i++ {
				c = c * (n + float64(k-1-i)) / float64(i+1)
			}
			groups += c
		}
	}
	return float64(len(p.Modes)) * float64(max(p.Repetitions, 0)) * groups
}

// Hash identifies what a measurement depends on (GPU, MIG instances, warm-up and
// measurement windows, environment and workloads): a journal is only resumed with
// a plan of the same hash. Modes, group sizes, repetitions, timeouts and sampling
// may change between runs (e.g. to add repetitions).
func (p *Plan) Hash() string {
	key := struct {
		GPU       int
		MIG       []string
		Warmup    time.Duration
		Measure   time.Duration
		Env       map[string]string
		Workloads []Workload
	}{p.GPU, p.MIG.Instances, p.Warmup, p.Measure, p.Env, p.Workloads}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	_ = enc.Encode(key) // plain data always encodes
	sum := sha256.Sum256(b.Bytes())
	return hex.EncodeToString(sum[:8])
}

// Cell is one measurement: a group of workloads (one member for alone) run
// together under a mode, one repetition.
type Cell struct {
	Mode       string   `json:"mode"`
	Members    []string `json:"members"` // workload names, plan order
	Repetition int      `json:"repetition"`
}

// ID is the cell's stable identifier, e.g. "timeslice/gemm+stream/r2".
func (c Cell) ID() string {
	return fmt.Sprintf("%s/%s/r%d", c.Mode, strings.Join(c.Members, "+"), c.Repetition)
}

// Cells enumerates the plan's cells in run order: per mode, per repetition, alone
// cells then groups by size; a group is a multiset of workloads in plan order
// (a workload may be co-located with a copy of itself).
func (p *Plan) Cells() []Cell {
	var groups [][]int
	var rec func(size, from int, cur []int)
	rec = func(size, from int, cur []int) {
		if len(cur) == size {
			groups = append(groups, append([]int(nil), cur...))
			return
		}
		for i := from; i < len(p.Workloads); i++ {
			rec(size, i, append(cur, i))
		}
	}
	rec(1, 0, nil)
	for s := 2; s <= 3; s++ {
		for _, gs := range p.GroupSizes {
			if gs == s {
				rec(s, 0, nil)
			}
		}
	}
	var cells []Cell
	for _, m := range p.Modes {
		for r := 1; r <= p.Repetitions; r++ {
			for _, g := range groups {
				names := make([]string, len(g))
				for k, i := range g {
					names[k] = p.Workloads[i].Name
				}
				cells = append(cells, Cell{Mode: m, Members: names, Repetition: r})
			}
		}
	}
	return cells
}

func (p *Plan) workload(name string) *Workload {
	for i := range p.Workloads {
		if p.Workloads[i].Name == name {
			return &p.Workloads[i]
		}
	}
	return nil
}

func (p *Plan) maxGroup() int {
	m := 1
	for _, s := range p.GroupSizes {
		if s > m {
			m = s
		}
	}
	return m
}
