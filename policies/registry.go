package policies

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/workloads"
)

// Env is what a policy factory may know about its surroundings.
type Env struct {
	// BaseDir resolves relative file paths in params (the scenario's directory).
	BaseDir string
	// File is the scenario file the params are written in ("" when embedded):
	// problems in text embedded in params (Kueue's inline manifests) are
	// reported at its lines.
	File string
	// Throughputs is the scenario's throughput table (nil without a
	// throughputs: block) and ThroughputRef its reference GPU type's index: what
	// heterogeneity-aware policies (gavel) plan with.
	Throughputs   *workloads.ThroughputTable
	ThroughputRef int
}

// Resolve makes p relative to BaseDir (absolute paths unchanged).
func (e Env) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) || e.BaseDir == "" {
		return p
	}
	return filepath.Join(e.BaseDir, p)
}

// Factory builds a policy from its YAML params (nil when none were given). It must
// validate the params and return an error naming the bad one.
type Factory func(params *yaml.Node, env Env) (sim.Policy, error)

// Info describes a registered policy for `gpusim policies`.
type Info struct {
	Name    string
	Summary string
	Params  string // one-line parameter synopsis
}

type entry struct {
	info Info
	f    Factory
}

var registry = map[string]entry{}

// Register adds a policy under its name. It panics on a duplicate name (a
// programming error caught by the package's tests).
func Register(info Info, f Factory) {
	if _, dup := registry[info.Name]; dup {
		panic("policies: duplicate policy " + info.Name)
	}
	registry[info.Name] = entry{info, f}
}

// RegisterDecoded registers a policy whose factory only decodes its
// parameters into a P (strictly, as DecodeParams does) and calls build.
func RegisterDecoded[P any, T sim.Policy](info Info, build func(P) (T, error)) {
	Register(info, func(n *yaml.Node, _ Env) (sim.Policy, error) {
		var p P
		if err := DecodeParams(n, &p); err != nil {
			return nil, err
		}
		pol, err := build(p)
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return pol, nil
	})
}

// Catalog lists every registered policy sorted by name.
func Catalog() []Info {
	out := make([]Info, 0, len(registry))
	for _, e := range registry {
		out = append(out, e.info)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Name < out[b].Name })
	return out
}

// Names lists the registered policy names, sorted.
func Names() []string {
	var n []string
	for _, i := range Catalog() {
		n = append(n, i.Name)
	}
	return n
}

// Known reports whether name is registered.
func Known(name string) bool { _, ok := registry[name]; return ok }

// New builds the named policy with params (relative paths resolve against the
// working directory).
func New(name string, params *yaml.Node) (sim.Policy, error) {
	return NewWithEnv(name, params, Env{})
}

// NewWithEnv builds the named policy with params in env.
func NewWithEnv(name string, params *yaml.Node, env Env) (sim.Policy, error) {
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	p, err := e.f(params, env)
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", name, err)
	}
	return p, nil
}

// ConfigError is a problem with a policy's configuration or with how the workload
// maps onto it (e.g. a job's queue names no LocalQueue), found while running. The
// CLI reports it as invalid input (exit code 2).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Warner is an optional policy capability: configuration that was read but is not
// simulated (e.g. Kueue manifest fields), for `gpusim validate` and `run` to print.
type Warner interface {
	Warnings() []string
}

// Preflighter is an optional Policy capability: the start-up checks a policy
// runs against the cluster and the whole workload at its first scheduling point
// (node expressions that must match nodes, job queues that must map to a queue,
// guarantees that must fit the cluster), without scheduling anything. `gpusim
// validate` calls it on a fresh instance with the View of an engine built
// exactly as `gpusim run` builds it (time 0, no job arrived yet), so that a
// scenario validate accepts starts under run. It returns every problem it can
// (errors.Join), each a *ConfigError or an error whose text starts with the
// params field at fault; nil when the policy will start.
type Preflighter interface {
	Preflight(v *sim.View) error
}

// QueueQuotas is implemented by policies with per-queue GPU quotas (kueue): the
// nominal GPUs behind a trace queue name, which summary.json records per queue
// (per_queue.<q>.nominal_gpus) and the report draws as a reference line.
type QueueQuotas interface {
	QueueNominalGPUs(queue string) (gpus float64, ok bool)
}
