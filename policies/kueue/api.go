package kueue

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/internal/yamlmsg"
	"github.com/gpusim/gpusim/policies"
)

// The Kueue API groups read from manifests.
const (
	groupV1beta1  = "kueue.x-k8s.io/v1beta1"
	groupV1beta2  = "kueue.x-k8s.io/v1beta2"
	groupV1alpha1 = "kueue.x-k8s.io/v1alpha1" // Cohort before v1beta2
)

// meta is Kubernetes object metadata; fields gpusim does not use are accepted.
type meta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
	Rest        map[string]any    `yaml:",inline"`
}

type object struct {
	APIVersion string    `yaml:"apiVersion"`
	Kind       string    `yaml:"kind"`
	Metadata   meta      `yaml:"metadata"`
	Spec       yaml.Node `yaml:"spec"`
	Value      *int32    `yaml:"value"`       // WorkloadPriorityClass
	Descr      string    `yaml:"description"` // WorkloadPriorityClass
	Status     yaml.Node `yaml:"status"`      // ignored
}

// ResourceFlavorSpec is the subset of a ResourceFlavor's spec gpusim reads.
type ResourceFlavorSpec struct {
	NodeLabels   map[string]string `yaml:"nodeLabels"`
	NodeTaints   []any             `yaml:"nodeTaints"`
	Tolerations  []any             `yaml:"tolerations"`
	TopologyName string            `yaml:"topologyName"`
}

// ResourceQuota is one resource's quota in a flavor.
type ResourceQuota struct {
	Name           string  `yaml:"name"`
	NominalQuota   string  `yaml:"nominalQuota"`
	BorrowingLimit *string `yaml:"borrowingLimit"`
	LendingLimit   *string `yaml:"lendingLimit"`
}

// FlavorQuotas lists one flavor's quotas in a resource group.
type FlavorQuotas struct {
	Name      string          `yaml:"name"`
	Resources []ResourceQuota `yaml:"resources"`
}

// ResourceGroup is a set of covered resources with an ordered flavor list.
type ResourceGroup struct {
	CoveredResources []string       `yaml:"coveredResources"`
	Flavors          []FlavorQuotas `yaml:"flavors"`
}

// Preemption is a ClusterQueue's preemption policy.
type Preemption struct {
	WithinClusterQueue  string `yaml:"withinClusterQueue"`
	ReclaimWithinCohort string `yaml:"reclaimWithinCohort"`
	BorrowWithinCohort  *struct {
		Policy               string `yaml:"policy"`
		MaxPriorityThreshold *int32 `yaml:"maxPriorityThreshold"`
	} `yaml:"borrowWithinCohort"`
}

// FlavorFungibility controls the flavor search.
type FlavorFungibility struct {
	WhenCanBorrow  string `yaml:"whenCanBorrow"`
	WhenCanPreempt string `yaml:"whenCanPreempt"`
	Preference     string `yaml:"preference"`
}

// FairSharing is a weight (a Kubernetes quantity, default 1).
type FairSharing struct {
	Weight string `yaml:"weight"`
}

// ClusterQueueSpec is the subset of a ClusterQueue's spec gpusim reads (fields it
// accepts but does not simulate are reported as warnings).
type ClusterQueueSpec struct {
	Cohort                  string             `yaml:"cohort"`     // v1beta1
	CohortName              string             `yaml:"cohortName"` // v1beta2
	QueueingStrategy        string             `yaml:"queueingStrategy"`
	NamespaceSelector       yaml.Node          `yaml:"namespaceSelector"` // a value, not a pointer: yaml.v3 leaves a *yaml.Node field empty
	ResourceGroups          []ResourceGroup    `yaml:"resourceGroups"`
	Preemption              *Preemption        `yaml:"preemption"`
	FlavorFungibility       *FlavorFungibility `yaml:"flavorFungibility"`
	FairSharing             *FairSharing       `yaml:"fairSharing"`
	StopPolicy              string             `yaml:"stopPolicy"`
	AdmissionChecks         []string           `yaml:"admissionChecks"`
	AdmissionChecksStrategy yaml.Node          `yaml:"admissionChecksStrategy"`
	AdmissionScope          *AdmissionScope    `yaml:"admissionScope"`
}

// AdmissionScope selects Admission Fair Sharing for a ClusterQueue.
type AdmissionScope struct {
	AdmissionMode string `yaml:"admissionMode"` // UsageBasedAdmissionFairSharing or NoAdmissionFairSharing
}

// CohortSpec is a (hierarchical) Cohort's spec.
type CohortSpec struct {
	Parent         string          `yaml:"parent"`     // v1alpha1
	ParentName     string          `yaml:"parentName"` // v1beta1/v1beta2
	ResourceGroups []ResourceGroup `yaml:"resourceGroups"`
	FairSharing    *FairSharing    `yaml:"fairSharing"`
}

// LocalQueueSpec points at a ClusterQueue.
type LocalQueueSpec struct {
	ClusterQueue string       `yaml:"clusterQueue"`
	StopPolicy   string       `yaml:"stopPolicy"`
	FairSharing  *FairSharing `yaml:"fairSharing"`
}

// TopologySpec lists a Topology's levels, coarsest first (TAS, tas.go).
type TopologySpec struct {
	Levels []struct {
		NodeLabel string `yaml:"nodeLabel"`
	} `yaml:"levels"`
}

// Manifests is a set of Kueue objects loaded from YAML.
type Manifests struct {
	Flavors        map[string]*ResourceFlavorSpec
	ClusterQueues  map[string]*ClusterQueueSpec
	Cohorts        map[string]*CohortSpec
	LocalQueues    map[string]*LocalQueueSpec // key "namespace/name"
	PriorityValues map[string]int32
	Topologies     map[string]*TopologySpec
	Config         *Config  // Kueue's Configuration (config.go); nil if none
	Warnings       []string // supported-but-not-simulated fields and ignored objects
	sources        map[string]string
	name           string                // the file (or directory) read, for errors about the whole set
	specs          map[string]*yaml.Node // object spec by its source ("file:line"), for field lines
	files          map[string]string     // file of each source
}

func newManifests() *Manifests {
	return &Manifests{Flavors: map[string]*ResourceFlavorSpec{}, ClusterQueues: map[string]*ClusterQueueSpec{},
		Cohorts: map[string]*CohortSpec{}, LocalQueues: map[string]*LocalQueueSpec{}, PriorityValues: map[string]int32{},
		Topologies: map[string]*TopologySpec{}, sources: map[string]string{}, specs: map[string]*yaml.Node{}, files: map[string]string{}}
}

// LoadManifests reads Kueue YAML from a file or every *.yaml / *.yml file of a
// directory (sorted by name). Multi-document files are supported. Unknown fields
// are errors with file:line; objects of other kinds are ignored with a warning.
func LoadManifests(path string) (*Manifests, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	files := []string{path}
	if st.IsDir() {
		files = nil
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".yaml") || strings.HasSuffix(e.Name(), ".yml")) {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no .yaml files", path)
		}
	}
	m := newManifests()
	m.name = path
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := m.add(f, b); err != nil {
			return nil, err
		}
	}
	return m, m.validate()
}

// ParseManifests reads Kueue YAML from bytes (name labels errors).
func ParseManifests(name string, data []byte) (*Manifests, error) {
	m := newManifests()
	m.name = name
	if err := m.add(name, data); err != nil {
		// Objects that did not decode are missing: report their problems and
		// those of the rest (references to them may be reported as not found).
		return nil, errors.Join(err, m.validate())
	}
	return m, m.validate()
}

func (m *Manifests) add(file string, data []byte) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var errs []error
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %s", file, syntaxMsg(err))
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" {
			continue
		}
		root := doc.Content[0]
		if isConfiguration(root) {
			if err := m.addConfiguration(file, root); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		for _, e := range policies.CheckFields(root, &object{}) {
			errs = append(errs, located(file, "", "", e))
		}
		var o object
		if err := root.Decode(&o); err != nil {
			errs = append(errs, yamlErrs(file, "", "", root, err)...)
			continue
		}
		where := fmt.Sprintf("%s:%d", file, root.Line)
		if err := m.addObject(where, file, &o); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Manifests) addObject(where, file string, o *object) error {
	known := o.APIVersion == groupV1beta1 || o.APIVersion == groupV1beta2 || o.APIVersion == groupV1alpha1
	if !known {
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: ignored %s %q (apiVersion %q is not Kueue's)", where, o.Kind, o.Metadata.Name, o.APIVersion))
		return nil
	}
	if o.Metadata.Name == "" {
		return fmt.Errorf("%s: %s: metadata.name is required", where, o.Kind)
	}
	key := o.Kind + "/" + o.Metadata.Name
	if prev, dup := m.sources[key]; dup && o.Kind != "LocalQueue" {
		return fmt.Errorf("%s: duplicate %s %q (first at %s)", where, o.Kind, o.Metadata.Name, prev)
	}
	m.sources[key] = where
	spec := o.Spec
	m.specs[where], m.files[where] = &spec, file
	decode := func(out any) error {
		if o.Spec.Kind == 0 {
			return nil
		}
		var errs []error
		what := fmt.Sprintf("%s %q", o.Kind, o.Metadata.Name)
		for _, e := range policies.CheckFields(&o.Spec, out) {
			errs = append(errs, located(file, what, "spec", e))
		}
		if err := o.Spec.Decode(out); err != nil {
			errs = append(errs, yamlErrs(file, what, "spec", &o.Spec, err)...)
		}
		return errors.Join(errs...)
	}
	switch o.Kind {
	case "ResourceFlavor":
		s := &ResourceFlavorSpec{}
		if err := decode(s); err != nil {
			return err
		}
		if len(s.NodeTaints) > 0 || len(s.Tolerations) > 0 {
			m.Warnings = append(m.Warnings, fmt.Sprintf("%s: ResourceFlavor %q: nodeTaints/tolerations are not simulated", where, o.Metadata.Name))
		}
		m.Flavors[o.Metadata.Name] = s
	case "ClusterQueue":
		s := &ClusterQueueSpec{}
		if err := decode(s); err != nil {
			return err
		}
		if s.CohortName == "" {
			s.CohortName = s.Cohort
		}
		for _, w := range []struct {
			set  bool
			name string
		}{{len(s.AdmissionChecks) > 0 || s.AdmissionChecksStrategy.Kind != 0, "admissionChecks"},
			{s.StopPolicy != "" && s.StopPolicy != "None", "stopPolicy"},
			{s.NamespaceSelector.Kind != 0 && !emptyMapping(&s.NamespaceSelector), "namespaceSelector (every LocalQueue pointing at the ClusterQueue is accepted)"}} {
			if w.set {
				m.Warnings = append(m.Warnings, fmt.Sprintf("%s: ClusterQueue %q: %s is not simulated", where, o.Metadata.Name, w.name))
			}
		}
		m.ClusterQueues[o.Metadata.Name] = s
	case "Cohort":
		s := &CohortSpec{}
		if err := decode(s); err != nil {
			return err
		}
		if s.ParentName == "" {
			s.ParentName = s.Parent
		}
		m.Cohorts[o.Metadata.Name] = s
	case "LocalQueue":
		s := &LocalQueueSpec{}
		if err := decode(s); err != nil {
			return err
		}
		ns := o.Metadata.Namespace
		if ns == "" {
			ns = "default"
		}
		k := ns + "/" + o.Metadata.Name
		if _, dup := m.LocalQueues[k]; dup {
			return fmt.Errorf("%s: duplicate LocalQueue %q", where, k)
		}
		m.sources["LocalQueue/"+k] = where
		m.LocalQueues[k] = s
	case "WorkloadPriorityClass":
		if o.Value == nil {
			return fmt.Errorf("%s: WorkloadPriorityClass %q: value is required", where, o.Metadata.Name)
		}
		m.PriorityValues[o.Metadata.Name] = *o.Value
	case "Topology":
		s := &TopologySpec{}
		if err := decode(s); err != nil {
			return err
		}
		m.Topologies[o.Metadata.Name] = s
	default:
		m.Warnings = append(m.Warnings, fmt.Sprintf("%s: ignored %s %q (not a kind the simulator uses)", where, o.Kind, o.Metadata.Name))
	}
	return nil
}

func emptyMapping(n *yaml.Node) bool { return n.Kind == yaml.MappingNode && len(n.Content) == 0 }

// validate checks references and values: every flavor, cohort parent and
// ClusterQueue named exists, quantities parse, enum fields have known values,
// borrowing/lending limits only with a parent.
func (m *Manifests) validate() error {
	var errs []error
	add := func(where, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		errs = append(errs, fmt.Errorf("%s: %s", m.fieldWhere(where, msg), msg))
	}
	checkRG := func(where string, rgs []ResourceGroup, hasParent bool) {
		seenRes := map[string]bool{}
		for gi, g := range rgs {
			if len(g.CoveredResources) == 0 {
				add(where, "resourceGroups[%d].coveredResources: required", gi)
			}
			for _, r := range g.CoveredResources {
				if seenRes[r] {
					add(where, "resourceGroups[%d]: resource %q is covered by two groups", gi, r)
				}
				seenRes[r] = true
			}
			for fi, f := range g.Flavors {
				if _, ok := m.Flavors[f.Name]; !ok {
					add(where, "resourceGroups[%d].flavors[%d].name: ResourceFlavor %q not found", gi, fi, f.Name)
				}
				if len(f.Resources) != len(g.CoveredResources) {
					add(where, "resourceGroups[%d].flavors[%d]: must list exactly the covered resources %v", gi, fi, g.CoveredResources)
				}
				for ri, r := range f.Resources {
					p := fmt.Sprintf("resourceGroups[%d].flavors[%d].resources[%d]", gi, fi, ri)
					if ri < len(g.CoveredResources) && r.Name != g.CoveredResources[ri] {
						add(where, "%s.name: %q must match coveredResources[%d] %q", p, r.Name, ri, g.CoveredResources[ri])
					}
					if _, err := parseQuantity(r.Name, r.NominalQuota); err != nil {
						add(where, "%s.nominalQuota: %v", p, err)
					}
					for _, lim := range []struct {
						v    *string
						name string
					}{{r.BorrowingLimit, "borrowingLimit"}, {r.LendingLimit, "lendingLimit"}} {
						if lim.v == nil {
							continue
						}
						if !hasParent {
							add(where, "%s.%s: only allowed when the queue has a cohort (parent)", p, lim.name)
						}
						if _, err := parseQuantity(r.Name, *lim.v); err != nil {
							add(where, "%s.%s: %v", p, lim.name, err)
						}
					}
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.ClusterQueues)) {
		s := m.ClusterQueues[name]
		where := m.sources["ClusterQueue/"+name]
		checkRG(where+": ClusterQueue "+name, s.ResourceGroups, s.CohortName != "")
		switch s.QueueingStrategy {
		case "", "BestEffortFIFO", "StrictFIFO":
		default:
			add(where, "ClusterQueue %s: queueingStrategy %q (want StrictFIFO or BestEffortFIFO)", name, s.QueueingStrategy)
		}
		if p := s.Preemption; p != nil {
			if !oneOf(p.WithinClusterQueue, "", "Never", "LowerPriority", "LowerOrNewerEqualPriority") {
				add(where, "ClusterQueue %s: preemption.withinClusterQueue %q", name, p.WithinClusterQueue)
			}
			if !oneOf(p.ReclaimWithinCohort, "", "Never", "LowerPriority", "Any") {
				add(where, "ClusterQueue %s: preemption.reclaimWithinCohort %q", name, p.ReclaimWithinCohort)
			}
			if b := p.BorrowWithinCohort; b != nil {
				if !oneOf(b.Policy, "", "Never", "LowerPriority") {
					add(where, "ClusterQueue %s: preemption.borrowWithinCohort.policy %q", name, b.Policy)
				}
				if b.Policy == "LowerPriority" && (p.ReclaimWithinCohort == "" || p.ReclaimWithinCohort == "Never") {
					add(where, "ClusterQueue %s: preemption.borrowWithinCohort needs reclaimWithinCohort other than Never", name)
				}
			}
		}
		if f := s.FlavorFungibility; f != nil {
			if !oneOf(f.WhenCanBorrow, "", "MayStopSearch", "TryNextFlavor", "Borrow") || !oneOf(f.WhenCanPreempt, "", "MayStopSearch", "TryNextFlavor", "Preempt") {
				add(where, "ClusterQueue %s: flavorFungibility values must be MayStopSearch or TryNextFlavor", name)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(m.Cohorts)) {
		c := m.Cohorts[name]
		where := m.sources["Cohort/"+name]
		checkRG(where+": Cohort "+name, c.ResourceGroups, c.ParentName != "")
	}
	for _, k := range slices.Sorted(maps.Keys(m.LocalQueues)) {
		lq := m.LocalQueues[k]
		if _, ok := m.ClusterQueues[lq.ClusterQueue]; !ok {
			errs = append(errs, fmt.Errorf("%s: LocalQueue %s: spec.clusterQueue %q not found", m.sources["LocalQueue/"+k], k, lq.ClusterQueue))
		}
	}
	if len(m.ClusterQueues) == 0 {
		errs = append(errs, fmt.Errorf("%s: no ClusterQueue in the manifests", m.name))
	}
	m.checkFairSharingFields(add)
	return errors.Join(errs...)
}

func oneOf(v string, opts ...string) bool {
	for _, o := range opts {
		if v == o {
			return true
		}
	}
	return false
}

// located formats a *policies.LineError found in file (inside object what, under
// field prefix) as "FILE:LINE: what: prefix.path: message".
func located(file, what, prefix string, err error) error {
	var le *policies.LineError
	if !errors.As(err, &le) {
		return fmt.Errorf("%s: %s", file, err)
	}
	path := le.Path
	if prefix != "" {
		path = strings.TrimSuffix(prefix+"."+path, ".")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d: ", file, le.Line)
	if what != "" {
		b.WriteString(what + ": ")
	}
	if path != "" {
		b.WriteString(path + ": ")
	}
	b.WriteString(le.Msg)
	return errors.New(b.String())
}

// yamlErrs formats a yaml.v3 decode error of node n, one error per problem, as
// located does (messages without YAML tags or Go type names).
func yamlErrs(file, what, prefix string, n *yaml.Node, err error) []error {
	var out []error
	for _, le := range policies.YAMLErrors(n, err) {
		if le.Line == 0 {
			le.Line = n.Line
		}
		out = append(out, located(file, what, prefix, le))
	}
	return out
}

// syntaxMsg gives a YAML syntax error as "LINE: message" (yaml.v3 says
// "yaml: line 3: ...").
func syntaxMsg(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		return rest
	}
	return msg
}

// specPathRE matches the spec field path a validation message starts with,
// after an optional "Kind name: " ("resourceGroups[0].flavors[1].name: ...").
var specPathRE = regexp.MustCompile(`^(?:[A-Z]\w+ "?[^ :"]+"?: )?((?:fairSharing|admissionScope|preemption|flavorFungibility|resourceGroups|queueingStrategy)[\w.\[\]]*)[: ]`)

// fieldWhere refines where ("file:line" of an object, optionally followed by
// ": Kind name") to the line of the spec field msg starts with, when known.
func (m *Manifests) fieldWhere(where, msg string) string {
	src, rest := where, ""
	if i := strings.Index(where, ": "); i >= 0 {
		src, rest = where[:i], where[i:]
	}
	spec, ok := m.specs[src]
	if !ok || spec.Kind == 0 {
		return where
	}
	g := specPathRE.FindStringSubmatch(msg)
	if g == nil {
		return where
	}
	if line := yamlmsg.LineOf(spec, g[1]); line > 0 {
		return fmt.Sprintf("%s:%d%s", m.files[src], line, rest)
	}
	return where
}
