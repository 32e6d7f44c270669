package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/traces"
	"github.com/gpusim/gpusim/workloads"
)

// APIVersion is the scenario schema version this build reads.
const APIVersion = "gpusim/v1alpha1"

// Named defaults (documented in the README's scenario reference).
const (
	DefaultSeed           = 42
	DefaultSampleInterval = 60 * sim.Second
	DefaultNodesPerLeaf   = 32
)

// Scenario is a parsed scenario file: `apiVersion: gpusim/v1alpha1, kind: Scenario`.
type Scenario struct {
	APIVersion  string       `yaml:"apiVersion"`
	Kind        string       `yaml:"kind"`
	Name        string       `yaml:"name"`
	Description string       `yaml:"description"`
	Seed        *uint64      `yaml:"seed"`
	Oracle      bool         `yaml:"oracle"`
	Simulation  Simulation   `yaml:"simulation"`
	Cluster     ClusterSpec  `yaml:"cluster"`
	Workload    WorkloadSpec `yaml:"workload"`
	Policies    []PolicySpec `yaml:"policies"`
	Experiment  *Experiment  `yaml:"experiment"`
	// SpeedModel, when present and enabled, makes job speed depend on placement
	// (see SpeedModelSpec).
	SpeedModel *SpeedModelSpec `yaml:"speedModel"`
	// Showback prices GPU-hours per queue, user and class in summary.json (cost).
	Showback *Showback `yaml:"showback"`
	// Interference, when present, turns on device-level GPU sharing with the
	// co-location speed factors it describes (see InterferenceSpec).
	Interference *InterferenceSpec `yaml:"interference"`
	// SharingDefaults fills the sharing fields of jobs that do not set them,
	// per job class (see SharingDefault).
	SharingDefaults map[string]SharingDefault `yaml:"sharingDefaults"`
	// Serving makes the jobs of the listed classes serving jobs with a request
	// load and a P99 latency SLA (see ServingClass, docs/serving.md).
	Serving map[string]ServingClass `yaml:"serving"`
	// Throughputs, when present, is a per-(job type, GPU type) throughput table
	// (see ThroughputsSpec).
	Throughputs *ThroughputsSpec `yaml:"throughputs"`
	// Failures, when present, injects hardware failures and recovers the jobs
	// they interrupt (see FailuresSpec, docs/failures.md).
	Failures *FailuresSpec `yaml:"failures"`
	// Power, when present, turns on power and carbon accounting (docs/power.md).
	Power *PowerSpec `yaml:"power"`
	// Workflows adds template DAG pipelines to the workload (docs/dag.md).
	Workflows []WorkflowSpec `yaml:"workflows"`
	// Storage, when present, makes checkpoint saves share a storage bandwidth
	// (see StorageSpec, docs/checkpoint-io.md).
	Storage *StorageSpec `yaml:"storage"`
	// Telemetry, when present, slows nodes by degradation episodes
	// (stragglers, docs/telemetry.md).
	Telemetry *TelemetrySpec `yaml:"telemetry"`
	// Federation, when present, runs several clusters with a dispatcher
	// (see FederationSpec, docs/federation.md).
	Federation *FederationSpec `yaml:"federation"`

	carbon  *sim.CarbonSeries          // Power.Carbon, loaded by validatePower
	tput    *workloads.ThroughputTable // Throughputs, loaded once
	tputRef int
	file    string     // path it was read from ("" when embedded)
	dir     string     // base directory for relative paths
	root    *yaml.Node // document, after --set overrides
	hash    string     // sha256 of the effective document
}

// Showback is the price list for showback: currency units per GPU-hour.
type Showback struct {
	Currency        string             `yaml:"currency"`        // label only (default "USD")
	PricePerGPUHour float64            `yaml:"pricePerGPUHour"` // models not in perModel
	PerModel        map[string]float64 `yaml:"perModel"`        // GPU model -> price per GPU-hour
}

// Prices returns the reports price list (zero prices without a showback block).
func (s *Scenario) Prices() reports.Prices {
	if s.Showback == nil {
		return reports.Prices{}
	}
	return reports.Prices{Default: s.Showback.PricePerGPUHour, PerModel: s.Showback.PerModel}
}

// Simulation holds simulator-only settings.
type Simulation struct {
	// Horizon stops the run at this virtual time (0 = when nothing is left to do).
	Horizon policies.Dur `yaml:"horizon"`
	// SampleInterval is the time-series period (default 60s; "0" disables).
	SampleInterval *policies.Dur `yaml:"sampleInterval"`
	// EnforceWalltime stops jobs at their walltime like Slurm time limits (default true).
	EnforceWalltime *bool `yaml:"enforceWalltime"`
	// CheckpointInterval: preempted jobs keep work up to the last multiple (default 0: none).
	CheckpointInterval policies.Dur `yaml:"checkpointInterval"`
	// CheckpointSaveCost is the wall time of each checkpoint save (default 0).
	CheckpointSaveCost policies.Dur `yaml:"checkpointSaveCost"`
	// CheckpointRestoreCost is the wall time of each restart after a requeue (default 0).
	CheckpointRestoreCost policies.Dur `yaml:"checkpointRestoreCost"`
	// CheckpointOnSignal: a job given a termination grace period of at least the save
	// cost checkpoints in it and loses no work (default false).
	CheckpointOnSignal bool `yaml:"checkpointOnSignal"`
	// PreemptMinRuntime protects each run from preemption for this long (default 0).
	PreemptMinRuntime policies.Dur `yaml:"preemptMinRuntime"`
	// PreemptAntiChurn protects a job from another preemption for this long after one (default 0).
	PreemptAntiChurn policies.Dur `yaml:"preemptAntiChurn"`
	// RescaleDelay is the wall time an elastic job spends restarting after a
	// resize (default checkpointSaveCost + checkpointRestoreCost; docs/elastic.md).
	RescaleDelay *policies.Dur `yaml:"rescaleDelay"`
}

// ClusterSpec describes the cluster: pools of templated nodes, or an imported node list.
type ClusterSpec struct {
	Pools     []PoolSpec            `yaml:"pools"`
	From      *traces.ClusterSource `yaml:"from"`
	Fabric    Fabric                `yaml:"fabric"`
	Templates []NodeTemplate        `yaml:"templates"`
}

// PoolSpec is a group of identical nodes. Fields other than name, template and
// nodes override the template (or define the node fully when template is empty).
type PoolSpec struct {
	Name         string `yaml:"name"`
	Template     string `yaml:"template"`
	Nodes        int    `yaml:"nodes"`
	GPUModel     string `yaml:"gpuModel"`
	GPUs         *int32 `yaml:"gpus"`
	GPUMemoryMiB *int64 `yaml:"gpuMemoryMiB"`
	CPUMilli     *int64 `yaml:"cpuMilli"`
	MemoryMiB    *int64 `yaml:"memoryMiB"`
	NVLinkSize   *int32 `yaml:"nvlinkSize"`
	PCIeSize     *int32 `yaml:"pcieSize"`
	SocketSize   *int32 `yaml:"socketSize"`
	// Sharing is the pool's device-level GPU sharing (default exclusive).
	Sharing *PoolSharing `yaml:"sharing"`
}

// Fabric positions nodes in the network: consecutive nodes (in pool order) fill a
// leaf switch, consecutive leaves a spine block.
type Fabric struct {
	NodesPerLeaf     int     `yaml:"nodesPerLeaf"`     // default 32
	LeavesPerSpine   int     `yaml:"leavesPerSpine"`   // 0 = one spine block for all leaves
	Oversubscription float64 `yaml:"oversubscription"` // leaf-to-spine oversubscription ratio (default 1)
}

// WorkloadSpec is the job source: exactly one of synthetic or trace.
type WorkloadSpec struct {
	Synthetic *workloads.Synthetic `yaml:"synthetic"`
	Trace     *traces.TraceSource  `yaml:"trace"`
}

// PolicySpec selects a registered policy with its parameters.
type PolicySpec struct {
	Name   string    `yaml:"name"`
	Label  string    `yaml:"label"` // output directory name (default: name)
	Params yaml.Node `yaml:"params"`
	// Recovery overrides failures: recovery settings for this policy entry
	// (compare strategies side by side under different labels).
	Recovery *RecoverySpec `yaml:"recovery"`
}

// DisplayName is the label, or the name.
func (p *PolicySpec) DisplayName() string {
	if p.Label != "" {
		return p.Label
	}
	return p.Name
}

// File returns the scenario's path ("" for an embedded scenario).
func (s *Scenario) File() string { return s.file }

// SHA256 returns the hex sha256 of the effective scenario (after overrides).
func (s *Scenario) SHA256() string { return s.hash }

// SeedValue returns the master seed.
func (s *Scenario) SeedValue() uint64 {
	if s.Seed == nil {
		return DefaultSeed
	}
	return *s.Seed
}

// Error is a scenario problem: every validation error with its YAML line.
type Error struct {
	File     string
	Problems []Problem
}

// Problem is one validation error at a field path.
type Problem struct {
	Line int
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		f := e.File
		if f == "" {
			f = "<embedded demo>"
		}
		if p.Line > 0 {
			fmt.Fprintf(&b, "%s:%d: ", f, p.Line)
		} else {
			fmt.Fprintf(&b, "%s: ", f)
		}
		if p.Path != "" {
			b.WriteString(p.Path)
			b.WriteString(": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
}

// Load reads, overrides (--set path=value), decodes strictly, defaults and
// validates a scenario file. All problems are reported together in an *Error.
func Load(path string, sets []string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path, sets)
}

// Parse is Load on bytes; file names the source in errors and anchors relative
// paths (its directory).
func Parse(data []byte, file string, sets []string) (*Scenario, error) {
	errFile := file
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		p := yamlProblem(err)
		if p.Line == 0 {
			p.Line = lineWithoutLine(data, p.Msg) // yaml.v3's reader and anchor errors have none
		}
		return nil, &Error{File: errFile, Problems: []Problem{p}}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, &Error{File: errFile, Problems: []Problem{{Msg: "empty scenario"}}}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: errFile, Problems: []Problem{{Line: root.Line, Msg: "a scenario must be a YAML mapping"}}}
	}
	if k, v := mapGet(root, "kind"); k != nil && v.Kind == yaml.ScalarNode && v.Value == "Sweep" {
		return nil, &Error{File: errFile, Problems: []Problem{{Line: k.Line, Path: "kind", Msg: "this is a Sweep file; use gpusim sweep (run, validate and compare take a Scenario)"}}}
	}
	for _, s := range sets {
		if err := applySet(root, s); err != nil {
			return nil, &Error{File: errFile, Problems: []Problem{{Msg: fmt.Sprintf("--set %s: %v", s, err)}}}
		}
	}
	canon, err := yaml.Marshal(root)
	if err != nil {
		return nil, err
	}
	sc := &Scenario{file: file, root: root}
	if file != "" {
		sc.dir = filepath.Dir(file)
	}
	sum := sha256.Sum256(canon)
	sc.hash = hex.EncodeToString(sum[:])
	dec := yaml.NewDecoder(bytes.NewReader(canon))
	dec.KnownFields(true)
	if err := dec.Decode(sc); err != nil {
		return nil, &Error{File: errFile, Problems: yamlProblems(err, data, canon, root)}
	}
	sc.useSourceParams()
	sc.setDefaults()
	fe := append(append(sc.validateTop(), sc.validateSpeed()...), sc.validateSharing()...)
	fe = append(fe, sc.validateServing()...)
	fe = append(fe, sc.validatePower()...)
	fe = append(fe, sc.validateWorkflows()...)
	fe = append(fe, sc.validateTelemetry()...)
	pp := sc.validatePolicyParams()
	if len(fe) > 0 || len(pp) > 0 {
		e := sc.problems(fe)
		e.Problems = append(e.Problems, pp...)
		sort.SliceStable(e.Problems, func(a, b int) bool { return e.Problems[a].Line < e.Problems[b].Line })
		return nil, e
	}
	return sc, nil
}

var lineRE = regexp.MustCompile(`line (\d+): (.*)`)

// yamlProblem turns a yaml.v3 error into problems with lines.
func yamlProblem(err error) Problem {
	var te *yaml.TypeError
	msg := err.Error()
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = te.Errors[0]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Problem{Line: n, Msg: cleanYAMLMsg(m[2])}
	}
	return Problem{Msg: msg}
}

func cleanYAMLMsg(s string) string {
	s = strings.ReplaceAll(s, "scenarios.", "")
	s = strings.ReplaceAll(s, "workloads.", "")
	s = strings.ReplaceAll(s, "traces.", "")
	if i := strings.Index(s, "field "); i >= 0 && strings.Contains(s, "not found in type") {
		f := s[i+len("field "):]
		f = f[:strings.Index(f, " ")]
		return fmt.Sprintf("unknown field %q", f)
	}
	return s
}

func (s *Scenario) problems(fe sim.FieldErrors) *Error {
	e := &Error{File: s.file}
	for _, f := range fe {
		e.Problems = append(e.Problems, Problem{Line: lineOf(s.root, f.Path), Path: f.Path, Msg: f.Msg})
	}
	sort.SliceStable(e.Problems, func(a, b int) bool { return e.Problems[a].Line < e.Problems[b].Line })
	return e
}

// Save writes the effective scenario (after --set overrides) to path, with file
// paths (workload.trace.path, cluster.from.path) made absolute so the saved copy
// loads from anywhere: `gpusim explain` and re-runs use it.
func (s *Scenario) Save(path string) error {
	var doc yaml.Node
	b, err := yaml.Marshal(s.root)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return err
	}
	root := doc.Content[0]
	paths := []string{"workload.trace.path", "cluster.from.path", "power.carbon.path"}
	if s.Telemetry != nil {
		for i := range s.Telemetry.Replay {
			paths = append(paths, fmt.Sprintf("telemetry.replay[%d].path", i))
		}
	}
	for _, p := range paths {
		steps, _ := parsePath(p)
		n := root
		for _, st := range steps {
			if st.index >= 0 { // a list item (telemetry.replay[i])
				if n.Kind != yaml.SequenceNode || st.index >= len(n.Content) {
					n = nil
					break
				}
				n = n.Content[st.index]
				continue
			}
			if _, n = mapGet(n, st.key); n == nil {
				break
			}
		}
		if n != nil && n.Kind == yaml.ScalarNode && !filepath.IsAbs(n.Value) {
			if abs, err := filepath.Abs(s.Resolve(n.Value)); err == nil {
				n.Value = abs
			}
		}
	}
	s.absFederationPaths(root)
	out, err := yaml.Marshal(root)
	if err != nil {
		return err
	}
	header := fmt.Sprintf("# Effective scenario written by gpusim run (sha256 %s of the scenario as run).\n", s.hash)
	return fsutil.WriteBytesAtomic(path, append([]byte(header), out...))
}
