package policies

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
)

// Factory builds a policy from its YAML params (nil when none were given). It must
// validate the params and return an error naming the bad one.
type Factory func(params *yaml.Node) (sim.Policy, error)

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

// New builds the named policy with params.
func New(name string, params *yaml.Node) (sim.Policy, error) {
	e, ok := registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown policy %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	p, err := e.f(params)
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", name, err)
	}
	return p, nil
}
