package volcano

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/policies/placement"
	"github.com/gpusim/gpusim/sim"
)

// Params are the volcano policy's scenario parameters. Actions and Tiers use the
// same keys and syntax as volcano-scheduler.conf, so a real configuration can be
// pasted.
type Params struct {
	// SchedulePeriod is the time between sessions (--schedule-period, default 1s).
	// Decisions are made only at multiples of it.
	SchedulePeriod *policies.Dur `yaml:"schedulePeriod"`
	// SessionOffset is when the first session runs (default 0s); sessions then
	// run at SessionOffset + k*SchedulePeriod. It lines the session grid up
	// with a real scheduler's, whose first session falls wherever the process
	// started (the Volcano fidelity replay sets it from the recording).
	SessionOffset *policies.Dur `yaml:"sessionOffset"`
	// EvictionGracePeriod is how long an evicted job keeps running (and holding its
	// nodes) before it stops: the pods' termination grace period (default 30s).
	EvictionGracePeriod *policies.Dur `yaml:"evictionGracePeriod"`
	// Actions is the comma-separated action list run in order every session
	// (default "enqueue, allocate, backfill"; also preempt, reclaim).
	Actions string `yaml:"actions"`
	// Tiers are the plugin tiers (default: Volcano's helm chart configuration).
	Tiers []TierSpec `yaml:"tiers"`
	// Queues are the Volcano Queues. A queue named "default" (weight 1, open,
	// reclaimable) always exists; list it to change it.
	Queues []QueueSpec `yaml:"queues"`
	// QueueMapping maps a job's trace queue to a Volcano queue.
	QueueMapping map[string]string `yaml:"queueMapping"`
	// DefaultQueue receives jobs whose queue is empty, unmapped and not a queue
	// name (default "default").
	DefaultQueue string `yaml:"defaultQueue"`
	// NetworkTopology gives multi-replica jobs a PodGroup networkTopology
	// constraint over HyperNode tiers (network-topology-aware scheduling).
	NetworkTopology *NetworkTopologySpec `yaml:"networkTopology"`
	// Placement, when set, replaces Volcano's node ordering (the nodeorder and
	// binpack scores) in the allocate action with a gpusim placement that can be
	// confined to the nodes the predicates admit (placement.HonoursAllow:
	// first-fit, best-fit, spread, fgd). Empty (the default) keeps Volcano's own. See
	// docs/volcano.md.
	Placement string `yaml:"placement"`
}

// NetworkTopologySpec is the PodGroup networkTopology given to every job with at
// least MinReplicas replicas, plus the HyperNode tiers as gpusim topology levels.
type NetworkTopologySpec struct {
	// Mode is hard (default: the job runs inside one HyperNode of a tier up to
	// HighestTierAllowed, or waits) or soft (falls back to any nodes).
	Mode string `yaml:"mode"`
	// HighestTierAllowed is the loosest tier the job may span (default 1).
	HighestTierAllowed *int `yaml:"highestTierAllowed"`
	// Tiers lists the sim level of each HyperNode tier, tightest first (default
	// [leaf, spine]; on NVL72 clusters e.g. [nvlink, leaf, spine]).
	Tiers []string `yaml:"tiers"`
	// MinReplicas: jobs with at least this many replicas carry the constraint
	// (default 2: multi-pod jobs).
	MinReplicas *int32 `yaml:"minReplicas"`
}

type netTopo struct {
	soft        bool
	highest     int
	tiers       []sim.Level
	minReplicas int32
}

// TierSpec is one tier of plugins (volcano-scheduler.conf `tiers[]`).
type TierSpec struct {
	Plugins []PluginSpec `yaml:"plugins"`
}

// PluginSpec is one plugin with its arguments (volcano-scheduler.conf syntax).
type PluginSpec struct {
	Name      string            `yaml:"name"`
	Arguments map[string]string `yaml:"arguments"`
}

// QueueSpec is a Volcano Queue (scheduling.volcano.sh/v1beta1 Queue spec fields).
type QueueSpec struct {
	Name string `yaml:"name"`
	// Weight is the proportion plugin's share weight (default 1, >= 1).
	Weight *int32 `yaml:"weight"`
	// Capability caps what the queue may use; unset resources are unlimited.
	Capability ResourceList `yaml:"capability"`
	// Guarantee is reserved for the queue (its deserved share never drops below it).
	Guarantee ResourceList `yaml:"guarantee"`
	// Priority orders queues before their share does (higher first, default 0).
	Priority int32 `yaml:"priority"`
	// Reclaimable lets other queues reclaim this queue's resources above its
	// deserved share (default true).
	Reclaimable *bool `yaml:"reclaimable"`
	// State is Open (default) or Closed (no new jobs are enqueued).
	State string `yaml:"state"`
}

// ResourceList is a Kubernetes-style resource list: gpu (or nvidia.com/gpu) in GPUs
// (fractions allowed), cpu in cores as a Kubernetes quantity ("16", "500m"),
// memory as a Kubernetes quantity in bytes ("64Gi", "512Mi").
type ResourceList map[string]string

// Resource dimensions, in gpusim's units.
const (
	dimGPU = iota // milli-GPU
	dimCPU        // millicores
	dimMem        // MiB
	numDims
)

var dimNames = [numDims]string{"gpu", "cpu", "memory"}

// res is a resource vector: milli-GPU, millicores, MiB.
type res [numDims]float64

// Default values.
const (
	DefaultPeriod           = sim.Second
	DefaultEvictionGrace    = 30 * sim.Second
	DefaultOvercommitFactor = 1.2
	DefaultActions          = "enqueue, allocate, backfill"
)

// DefaultTiers is Volcano's helm-chart scheduler configuration.
func DefaultTiers() []TierSpec {
	return []TierSpec{
		{Plugins: []PluginSpec{{Name: "priority"}, {Name: "gang"}, {Name: "conformance"}}},
		{Plugins: []PluginSpec{{Name: "overcommit"}, {Name: "drf"}, {Name: "predicates"}, {Name: "proportion"}, {Name: "nodeorder"}, {Name: "binpack"}}},
	}
}

// modelled plugins; notModelled are accepted with a warning.
var modelled = []string{"priority", "gang", "conformance", "overcommit", "drf", "predicates", "proportion", "nodeorder", "binpack", "network-topology-aware"}

var notModelled = []string{"sla", "tdm", "numaaware", "task-topology", "capacity", "rescheduling",
	"usage", "resource-strategy-fit", "extender", "deviceshare", "pdb", "cdp", "nodegroup", "resourcequota"}

var knownActions = []string{"enqueue", "allocate", "backfill", "preempt", "reclaim"}

func parseResources(field string, rl ResourceList, unset float64) (res, error) {
	r := res{unset, unset, unset}
	keys := make([]string, 0, len(rl))
	for k := range rl {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		d := -1
		switch k {
		case "gpu", "nvidia.com/gpu":
			d = dimGPU
		case "cpu":
			d = dimCPU
		case "memory":
			d = dimMem
		default:
			return r, fmt.Errorf("%s.%s: unknown resource (want gpu, cpu or memory)", field, k)
		}
		v, err := policies.ParseQuantity(rl[k])
		if err != nil {
			return r, fmt.Errorf("%s.%s: %v", field, k, err)
		}
		switch d {
		case dimGPU:
			v *= 1000
		case dimCPU:
			v *= 1000
		case dimMem:
			v /= 1 << 20
		}
		r[d] = v
	}
	return r, nil
}

// config is the validated configuration.
type config struct {
	period  sim.Duration
	offset  sim.Duration // first session (sessionOffset)
	grace   sim.Duration
	actions []string
	tiers   [][]string // plugin names per tier
	enabled map[string]bool
	// flags for the hot paths
	priority, proportion, overcommit bool
	// enqueueGates lists the enqueue gates (overcommit, proportion) of the first
	// tier that has one, in plugin order: both vote on every job, so that tier
	// decides JobEnqueueable.
	enqueueGates []string
	// hasEnqueue: the enqueue action is configured; without it allocate moves
	// Pending PodGroups to Inqueue itself.
	hasEnqueue bool
	ocFactor   float64
	binpack    binpackArgs
	nodeorder  nodeorderArgs
	queues     []*queue
	byName     map[string]*queue
	mapping    map[string]*queue
	defQueue   *queue
	netTopo    *netTopo
	warnings   []string
	placer     placement.Placer // params.placement; nil = Volcano's node ordering
}

type binpackArgs struct {
	weight float64
	w      res // per-dimension weight; 0 = ignored
}

type nodeorderArgs struct {
	least, most, balanced float64
}

// ParamsFromYAML decodes params strictly (unknown keys anywhere are errors naming
// their line and path).
func ParamsFromYAML(n *yaml.Node) (Params, error) {
	var p Params
	err := policies.DecodeParams(n, &p)
	return p, err
}

func argFloat(plugin, key, v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("tiers: plugin %s: argument %s: %q is not a number", plugin, key, v)
	}
	if f < 0 {
		return 0, fmt.Errorf("tiers: plugin %s: argument %s: must be >= 0, got %q", plugin, key, v)
	}
	return f, nil
}

func buildConfig(p Params) (*config, error) {
	c := &config{period: DefaultPeriod, grace: DefaultEvictionGrace, ocFactor: DefaultOvercommitFactor,
		enabled: map[string]bool{}, byName: map[string]*queue{}, mapping: map[string]*queue{}}
	var errs []error // every problem is reported
	if p.SchedulePeriod != nil {
		c.period = sim.Duration(*p.SchedulePeriod)
		if c.period <= 0 {
			errs = append(errs, errors.New("schedulePeriod: must be > 0"))
		}
	}
	if p.SessionOffset != nil {
		c.offset = sim.Duration(*p.SessionOffset) // >= 0: policies.Dur refuses negative durations
	}
	if p.EvictionGracePeriod != nil {
		c.grace = sim.Duration(*p.EvictionGracePeriod)
	}
	acts := p.Actions
	if strings.TrimSpace(acts) == "" {
		acts = DefaultActions
	}
	for _, a := range strings.Split(acts, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		if !slices.Contains(knownActions, a) {
			errs = append(errs, fmt.Errorf("actions: unknown or unsimulated action %q (simulated: %s)", a, strings.Join(knownActions, ", ")))
			continue
		}
		c.actions = append(c.actions, a)
		c.hasEnqueue = c.hasEnqueue || a == "enqueue"
		if a == "preempt" {
			c.warnings = append(c.warnings, "actions: preempt: jobs of one queue with equal drf shares can preempt each other indefinitely (as in Volcano); set simulation.preemptMinRuntime to bound the churn")
		}
	}
	tiers := p.Tiers
	if len(tiers) == 0 {
		tiers = DefaultTiers()
	}
	for ti, t := range tiers {
		var names []string
		for pi, pl := range t.Plugins {
			field := fmt.Sprintf("tiers[%d].plugins[%d]", ti, pi)
			switch {
			case slices.Contains(modelled, pl.Name):
			case slices.Contains(notModelled, pl.Name):
				c.warnings = append(c.warnings, fmt.Sprintf("%s: plugin %q is read but not simulated", field, pl.Name))
				continue
			default:
				errs = append(errs, fmt.Errorf("%s.name: unknown plugin %q (simulated: %s)", field, pl.Name, strings.Join(modelled, ", ")))
				continue
			}
			if c.enabled[pl.Name] {
				errs = append(errs, fmt.Errorf("%s.name: plugin %q listed twice", field, pl.Name))
				continue
			}
			c.enabled[pl.Name] = true
			names = append(names, pl.Name)
			if err := c.pluginArgs(field, pl); err != nil {
				errs = append(errs, err)
			}
		}
		c.tiers = append(c.tiers, names)
	}
	if !c.enabled["binpack"] {
		c.binpack = binpackArgs{}
	}
	if strings.TrimSpace(p.Placement) != "" {
		pl, err := placement.New(p.Placement)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("placement: %w", err))
		case !placement.HonoursAllow(pl):
			errs = append(errs, fmt.Errorf("placement: %q cannot be confined to the nodes Volcano's predicates admit (use first-fit, best-fit, spread or fgd; networkTopology is Volcano's topology-aware placement)", p.Placement))
		}
		c.placer = pl
	}
	c.priority, c.proportion, c.overcommit = c.enabled["priority"], c.enabled["proportion"], c.enabled["overcommit"]
	for _, t := range c.tiers {
		var gates []string
		for _, pl := range t {
			if pl == "overcommit" || pl == "proportion" {
				gates = append(gates, pl)
			}
		}
		if len(gates) > 0 {
			c.enqueueGates = gates
			break
		}
	}
	if !c.enabled["gang"] {
		errs = append(errs, errors.New("tiers: the gang plugin is required (gpusim jobs are gangs that start all-or-nothing)"))
	}
	if err := c.buildQueues(p); err != nil {
		errs = append(errs, err)
	}
	if nt := p.NetworkTopology; nt != nil {
		c.netTopo = &netTopo{highest: 1, minReplicas: 2, tiers: []sim.Level{sim.LevelLeaf, sim.LevelSpine}}
		switch nt.Mode {
		case "", "hard":
		case "soft":
			c.netTopo.soft = true
		default:
			errs = append(errs, fmt.Errorf("networkTopology.mode: %q (want hard or soft)", nt.Mode))
		}
		if len(nt.Tiers) > 0 {
			c.netTopo.tiers = nil
			for i, name := range nt.Tiers {
				l, err := sim.ParseLevel(name)
				if err != nil {
					errs = append(errs, fmt.Errorf("networkTopology.tiers[%d]: %v", i, err))
					break
				}
				if i > 0 && l <= c.netTopo.tiers[i-1] {
					errs = append(errs, fmt.Errorf("networkTopology.tiers[%d]: %s is not looser than %s (list tiers tightest first)", i, l, c.netTopo.tiers[i-1]))
					break
				}
				c.netTopo.tiers = append(c.netTopo.tiers, l)
			}
		}
		if nt.HighestTierAllowed != nil {
			h := *nt.HighestTierAllowed
			if h < 1 || h > len(c.netTopo.tiers) {
				errs = append(errs, fmt.Errorf("networkTopology.highestTierAllowed: %d (want 1..%d, the number of tiers)", h, len(c.netTopo.tiers)))
			}
			c.netTopo.highest = h
		}
		if nt.MinReplicas != nil {
			if *nt.MinReplicas < 1 {
				errs = append(errs, fmt.Errorf("networkTopology.minReplicas: must be >= 1"))
			}
			c.netTopo.minReplicas = *nt.MinReplicas
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func (c *config) pluginArgs(field string, pl PluginSpec) error {
	var errs []error // every bad argument is reported
	keys := make([]string, 0, len(pl.Arguments))
	for k := range pl.Arguments {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	switch pl.Name {
	case "binpack":
		c.binpack = binpackArgs{weight: 1, w: res{0, 1, 1}}
		var listed []string
		if v, ok := pl.Arguments["binpack.resources"]; ok {
			for _, r := range strings.Split(v, ",") {
				if r = strings.TrimSpace(r); r != "" {
					listed = append(listed, r)
				}
			}
		}
		for _, k := range keys {
			v := pl.Arguments[k]
			switch {
			case k == "binpack.resources":
			case k == "binpack.weight":
				f, err := argFloat(pl.Name, k, v)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				c.binpack.weight = f
			case k == "binpack.cpu" || k == "binpack.memory":
				f, err := argFloat(pl.Name, k, v)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if k == "binpack.cpu" {
					c.binpack.w[dimCPU] = f
				} else {
					c.binpack.w[dimMem] = f
				}
			case strings.HasPrefix(k, "binpack.resources."):
				name := strings.TrimPrefix(k, "binpack.resources.")
				if !slices.Contains(listed, name) {
					c.warnings = append(c.warnings, fmt.Sprintf("%s: argument %s ignored: %s is not listed in binpack.resources", field, k, name))
					continue
				}
				f, err := argFloat(pl.Name, k, v)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if name == "nvidia.com/gpu" || name == "gpu" {
					c.binpack.w[dimGPU] = f
				} else {
					c.warnings = append(c.warnings, fmt.Sprintf("%s: binpack resource %s is not simulated (only nvidia.com/gpu)", field, name))
				}
			default:
				c.warnings = append(c.warnings, fmt.Sprintf("%s: argument %s is not simulated", field, k))
			}
		}
		// A listed resource without a weight gets weight 1 (Volcano's default).
		for _, name := range listed {
			if _, ok := pl.Arguments["binpack.resources."+name]; !ok && (name == "nvidia.com/gpu" || name == "gpu") {
				c.binpack.w[dimGPU] = 1
			}
		}
	case "nodeorder":
		c.nodeorder = nodeorderArgs{least: 1, balanced: 1}
		for _, k := range keys {
			v := pl.Arguments[k]
			var dst *float64
			switch k {
			case "leastrequested.weight":
				dst = &c.nodeorder.least
			case "mostrequested.weight":
				dst = &c.nodeorder.most
			case "balancedresource.weight":
				dst = &c.nodeorder.balanced
			default:
				c.warnings = append(c.warnings, fmt.Sprintf("%s: argument %s is not simulated (no affinities, taints or images in gpusim: those scores are equal on every node)", field, k))
				continue
			}
			f, err := argFloat(pl.Name, k, v)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			*dst = f
		}
	case "overcommit":
		for _, k := range keys {
			v := pl.Arguments[k]
			if k != "overcommit-factor" {
				c.warnings = append(c.warnings, fmt.Sprintf("%s: argument %s is not simulated", field, k))
				continue
			}
			f, err := argFloat(pl.Name, k, v)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if f < 1 {
				f = DefaultOvercommitFactor // Volcano resets factors below 1
				c.warnings = append(c.warnings, fmt.Sprintf("%s: overcommit-factor %s < 1 is reset to %g (as Volcano does)", field, v, DefaultOvercommitFactor))
			}
			c.ocFactor = f
		}
	default:
		for _, k := range keys {
			c.warnings = append(c.warnings, fmt.Sprintf("%s: argument %s is not simulated", field, k))
		}
	}
	return errors.Join(errs...)
}

func (c *config) buildQueues(p Params) error {
	var errs []error // every problem is reported
	hasDefault := false
	for _, q := range p.Queues {
		if q.Name == "default" {
			hasDefault = true
		}
	}
	specs := p.Queues
	if !hasDefault {
		specs = append([]QueueSpec{{Name: "default"}}, specs...)
	}
	for i, s := range specs {
		field := fmt.Sprintf("queues[%d]", i)
		if !hasDefault {
			field = fmt.Sprintf("queues[%d]", i-1)
		}
		if s.Name == "" {
			errs = append(errs, fmt.Errorf("%s.name: required", field))
			continue
		}
		if _, dup := c.byName[s.Name]; dup {
			errs = append(errs, fmt.Errorf("%s.name: queue %q defined twice", field, s.Name))
			continue
		}
		bad := len(errs)
		q := &queue{name: s.Name, idx: i, weight: 1, priority: s.Priority, reclaimable: true, open: true}
		if s.Weight != nil {
			if *s.Weight < 1 {
				errs = append(errs, fmt.Errorf("%s.weight: must be >= 1, got %d", field, *s.Weight))
			}
			q.weight = float64(*s.Weight)
		}
		if s.Reclaimable != nil {
			q.reclaimable = *s.Reclaimable
		}
		switch s.State {
		case "", "Open":
		case "Closed":
			q.open = false
		default:
			errs = append(errs, fmt.Errorf("%s.state: %q (want Open or Closed)", field, s.State))
		}
		var cerr, gerr error
		q.capability, cerr = parseResources(field+".capability", s.Capability, math.Inf(1))
		q.guarantee, gerr = parseResources(field+".guarantee", s.Guarantee, 0)
		if cerr != nil || gerr != nil {
			errs = append(errs, cerr, gerr) // errors.Join drops the nils
		} else {
			for d := range numDims {
				if q.guarantee[d] > q.capability[d] {
					errs = append(errs, fmt.Errorf("%s.guarantee.%s: exceeds capability", field, dimNames[d]))
				}
			}
		}
		if len(errs) > bad {
			c.byName[q.name] = q // known for the mapping checks below
			continue
		}
		c.queues = append(c.queues, q)
		c.byName[q.name] = q
	}
	keys := make([]string, 0, len(p.QueueMapping))
	for k := range p.QueueMapping {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		q, ok := c.byName[p.QueueMapping[k]]
		if !ok {
			errs = append(errs, fmt.Errorf("queueMapping.%s: queue %q is not defined in queues", k, p.QueueMapping[k]))
			continue
		}
		c.mapping[k] = q
	}
	dq := p.DefaultQueue
	if dq == "" {
		dq = "default"
	}
	q, ok := c.byName[dq]
	if !ok {
		errs = append(errs, fmt.Errorf("defaultQueue: queue %q is not defined in queues", dq))
	}
	c.defQueue = q
	return errors.Join(errs...)
}
