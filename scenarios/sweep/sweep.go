// Package sweep expands a sweep file (`apiVersion: gpusim/v1alpha1, kind:
// Sweep`) into grid points, runs them (all, or one deterministic shard) and
// builds the sweep table. See docs/sweeps.md.
//
// Point order is fixed: the cartesian product of the grid axes with the first
// set path varying slowest, then the following set paths, then load, then seed,
// and the policy fastest. Point k belongs to shard k mod n.
package sweep

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
	"github.com/gpusim/gpusim/scenarios"
)

// Kind is the kind of a sweep file.
const Kind = "Sweep"

// Sweep is a parsed sweep file.
type Sweep struct {
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Name       string `yaml:"name"`
	// Scenario is the base scenario path, relative to the sweep file.
	Scenario string `yaml:"scenario"`
	// Set are fixed overrides applied to every point (path=value, like --set).
	Set  []string `yaml:"set"`
	Grid Grid     `yaml:"grid"`

	file string
	hash string
	root *yaml.Node
	lfld string // load field path
	axes []axis
}

// Grid is the set of values per axis; empty axes are not varied.
type Grid struct {
	// Policies are policy labels or names (empty: every policy of the scenario).
	Policies []string `yaml:"policies"`
	// Set varies scenario fields: each path takes each of its values.
	Set []SetAxis `yaml:"set"`
	// Load varies the offered load: workload.synthetic.load for synthetic
	// workloads, workload.trace.loadScale for traces.
	Load []float64 `yaml:"load"`
	// Seeds are master seeds (empty: the scenario's seed).
	Seeds []uint64 `yaml:"seeds"`
}

// SetAxis is one --set path and its values (YAML scalars, used as text).
type SetAxis struct {
	Path   string      `yaml:"path"`
	Values []yaml.Node `yaml:"values"`
}

type axis struct {
	column string   // table column
	set    string   // --set path ("" for policy)
	values []string // as text
	lines  []int    // YAML line of each value
}

// Point is one grid point.
type Point struct {
	Index  int
	Params []string // values of the grid columns (Sweep.Columns order)
	Policy string   // policy label or name
	Sets   []string // --set overrides for this point (fixed sets first)
}

// Error is a sweep file problem with its line.
type Error struct {
	File string
	Line int
	Path string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found validating a sweep.
type Errors []*Error

func (es Errors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Load reads and parses a sweep file (see Parse).
func Load(path string) (*Sweep, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b, path)
}

// Parse decodes a sweep strictly (unknown fields are errors with their line),
// loads the base scenario and validates every grid entry on its own (each
// policy, each set value, each load, each seed) and then every point, before
// anything runs. All problems come back together as Errors.
func Parse(data []byte, file string) (*Sweep, error) {
	sw := &Sweep{file: file}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlErr(file, nil, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: 1, Msg: "a sweep must be a YAML mapping"}
	}
	sw.root = doc.Content[0]
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(sw); err != nil {
		return nil, yamlErr(file, sw.root, err)
	}
	sum := sha256.Sum256(data)
	sw.hash = hex.EncodeToString(sum[:])
	var es Errors
	add := func(line int, path, format string, args ...any) {
		es = append(es, &Error{File: file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
	}
	if sw.APIVersion != scenarios.APIVersion {
		add(sw.line("apiVersion"), "apiVersion", "want %q, got %q", scenarios.APIVersion, sw.APIVersion)
	}
	if sw.Kind != Kind {
		add(sw.line("kind"), "kind", "want %q, got %q", Kind, sw.Kind)
	}
	if sw.Scenario == "" {
		add(sw.line("scenario"), "scenario", "the base scenario path is required")
		return nil, es
	}
	if len(es) > 0 {
		return nil, es
	}
	base, err := scenarios.Load(sw.ScenarioPath(), sw.Set)
	if err != nil {
		add(sw.line("scenario"), "scenario", "%s: %v", sw.Scenario, unwrapPath(err))
		return nil, es
	}
	if sw.Name == "" {
		sw.Name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	if base.Workload.Synthetic != nil {
		sw.lfld = "workload.synthetic.load"
	} else {
		sw.lfld = "workload.trace.loadScale"
	}
	// Axes in point order: set paths, load, seed, policy (fastest).
	seenPath := map[string]bool{}
	for i, a := range sw.Grid.Set {
		p := fmt.Sprintf("grid.set[%d]", i)
		if a.Path == "" {
			add(sw.line(p), p+".path", "a set axis needs a path")
			continue
		}
		if seenPath[a.Path] {
			add(sw.line(p+".path"), p+".path", "path %q is given twice", a.Path)
			continue
		}
		seenPath[a.Path] = true
		switch a.Path {
		case "seed":
			add(sw.line(p+".path"), p+".path", "vary the seed with grid.seeds")
			continue
		case sw.lfld:
			add(sw.line(p+".path"), p+".path", "vary %s with grid.load", a.Path)
			continue
		}
		if len(a.Values) == 0 {
			add(sw.line(p+".path"), p+".values", "at least one value is needed")
			continue
		}
		ax := axis{column: a.Path, set: a.Path}
		for k, v := range a.Values {
			vp := fmt.Sprintf("%s.values[%d]", p, k)
			if v.Kind != yaml.ScalarNode {
				add(v.Line, vp, "a value must be a scalar")
				continue
			}
			ax.values = append(ax.values, v.Value)
			ax.lines = append(ax.lines, v.Line)
		}
		sw.axes = append(sw.axes, ax)
	}
	if len(sw.Grid.Load) > 0 {
		ax := axis{column: "load", set: sw.lfld}
		for k, l := range sw.Grid.Load {
			ax.values = append(ax.values, strconv.FormatFloat(l, 'f', -1, 64))
			ax.lines = append(ax.lines, sw.line(fmt.Sprintf("grid.load[%d]", k)))
		}
		sw.axes = append(sw.axes, ax)
	}
	seeds := axis{column: "seed", set: "seed"}
	if len(sw.Grid.Seeds) == 0 {
		seeds.values = []string{strconv.FormatUint(base.SeedValue(), 10)}
		seeds.lines = []int{0}
	}
	for k, s := range sw.Grid.Seeds {
		seeds.values = append(seeds.values, strconv.FormatUint(s, 10))
		seeds.lines = append(seeds.lines, sw.line(fmt.Sprintf("grid.seeds[%d]", k)))
	}
	sw.axes = append(sw.axes, seeds)
	pol := axis{column: "policy"}
	if len(sw.Grid.Policies) == 0 {
		idx, _ := base.Select(nil)
		for _, i := range idx {
			pol.values = append(pol.values, base.Policies[i].DisplayName())
			pol.lines = append(pol.lines, 0)
		}
	}
	for k, p := range sw.Grid.Policies {
		pol.values = append(pol.values, p)
		pol.lines = append(pol.lines, sw.line(fmt.Sprintf("grid.policies[%d]", k)))
	}
	sw.axes = append(sw.axes, pol)
	if len(es) > 0 {
		return nil, es
	}
	// Every entry on its own, with its own line.
	for _, ax := range sw.axes {
		seen := map[string]bool{}
		for k, v := range ax.values {
			where := ax.column
			if seen[v] {
				add(ax.lines[k], where, "value %q is given twice", v)
				continue
			}
			seen[v] = true
			sc, err := scenarios.Load(sw.ScenarioPath(), sw.sets(ax.set, v))
			if err == nil && ax.set == "" {
				_, err = sc.Select([]string{v})
			}
			if err != nil {
				add(ax.lines[k], where, "%s: %v", v, unwrapPath(err))
			}
		}
	}
	if len(es) > 0 {
		slices.SortStableFunc(es, func(a, b *Error) int { return a.Line - b.Line })
		return nil, es
	}
	// Then every combination (axes can conflict).
	for _, p := range sw.Points() {
		sc, err := scenarios.Load(sw.ScenarioPath(), p.Sets)
		if err == nil {
			_, err = sc.Select([]string{p.Policy})
		}
		if err != nil {
			add(0, "", "point %d (%s): %v", p.Index, sw.Describe(p), unwrapPath(err))
		}
	}
	if len(es) > 0 {
		return nil, es
	}
	return sw, nil
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (sw *Sweep) sets(path, value string) []string {
	out := append([]string(nil), sw.Set...)
	if path != "" {
		out = append(out, path+"="+value)
	}
	return out
}

// yamlErr turns a yaml.v3 error into an *Error with the line.
func yamlErr(file string, root *yaml.Node, err error) error {
	// Every problem, in the user's terms (no YAML tags or Go type names).
	var es Errors
	for _, p := range yamlmsg.Problems(root, err) {
		es = append(es, &Error{File: file, Line: p.Line, Path: p.Path, Msg: p.Msg})
	}
	if len(es) == 1 {
		return es[0]
	}
	return es
}

// line returns the YAML line of a field path such as "grid.set[1].path" (the
// deepest existing ancestor's line when absent; 0 if none).
func (sw *Sweep) line(path string) int {
	n := sw.root
	line := 0
	if n != nil {
		line = n.Line
	}
	for _, part := range strings.Split(path, ".") {
		key, idx := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			key = part[:i]
			idx, _ = strconv.Atoi(strings.TrimSuffix(part[i+1:], "]"))
		}
		var next *yaml.Node
		if n != nil && n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					next = n.Content[i+1]
					line = n.Content[i].Line
				}
			}
		}
		if next == nil {
			return line
		}
		n = next
		if idx >= 0 {
			if n.Kind != yaml.SequenceNode || idx >= len(n.Content) {
				return line
			}
			n = n.Content[idx]
			line = n.Line
		}
	}
	return line
}

// File returns the sweep file's path.
func (sw *Sweep) File() string { return sw.file }

// SHA256 returns the hex SHA-256 of the sweep file's bytes (shards of one sweep
// must agree on it to be merged).
func (sw *Sweep) SHA256() string { return sw.hash }

// ScenarioPath is the base scenario path resolved against the sweep file's
// directory.
func (sw *Sweep) ScenarioPath() string {
	if filepath.IsAbs(sw.Scenario) {
		return sw.Scenario
	}
	return filepath.Join(filepath.Dir(sw.file), sw.Scenario)
}

// LoadField is the scenario field the load axis sets.
func (sw *Sweep) LoadField() string { return sw.lfld }

// Columns returns the grid columns of the table in order: the set paths, "load"
// (when varied), "seed", "policy".
func (sw *Sweep) Columns() []string {
	out := make([]string, len(sw.axes))
	for i, a := range sw.axes {
		out[i] = a.column
	}
	return out
}

// NumPoints returns the number of grid points.
func (sw *Sweep) NumPoints() int {
	n := 1
	for _, a := range sw.axes {
		n *= len(a.values)
	}
	return n
}

// Points expands the grid in the documented order (first axis slowest, policy
// fastest).
func (sw *Sweep) Points() []Point {
	n := sw.NumPoints()
	out := make([]Point, n)
	for k := range out {
		p := Point{Index: k, Params: make([]string, len(sw.axes)), Sets: append([]string(nil), sw.Set...)}
		rem := k
		for i := len(sw.axes) - 1; i >= 0; i-- {
			a := sw.axes[i]
			v := a.values[rem%len(a.values)]
			rem /= len(a.values)
			p.Params[i] = v
			if a.set == "" {
				p.Policy = v
			}
		}
		for i, a := range sw.axes {
			if a.set != "" {
				p.Sets = append(p.Sets, a.set+"="+p.Params[i])
			}
		}
		out[k] = p
	}
	return out
}

// Describe returns "col=value ..." for a point.
func (sw *Sweep) Describe(p Point) string {
	parts := make([]string, len(sw.axes))
	for i, a := range sw.axes {
		parts[i] = a.column + "=" + p.Params[i]
	}
	return strings.Join(parts, " ")
}

// Shard is one slice of a sweep: point k belongs to shard k mod N.
type Shard struct{ I, N int }

// ParseShard parses "i/n" with 0 <= i < n.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: want i/n with 0 <= i < n (e.g. 0/4)", s)
	}
	return Shard{i, n}, nil
}

// String returns "i/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// Select returns the points of shard s (all points when s.N <= 1).
func (s Shard) Select(points []Point) []Point {
	if s.N <= 1 {
		return points
	}
	var out []Point
	for _, p := range points {
		if p.Index%s.N == s.I {
			out = append(out, p)
		}
	}
	return out
}
