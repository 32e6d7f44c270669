package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/federation"
	"github.com/gpusim/gpusim/internal/fsutil"
	"github.com/gpusim/gpusim/policies"
	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/sim"
)

// FederationSpec is the scenario block `federation:` (docs/federation.md):
// several clusters, each run by its own policy, and a dispatcher that sends
// every job whole to one of them. With it the top-level cluster: is absent;
// without it nothing of federation runs and every output is as before.
type FederationSpec struct {
	// Dispatcher is the rule choosing a job's cluster: first-fit (default),
	// cheapest, lowest-carbon or most-free.
	Dispatcher string `yaml:"dispatcher"`
	// Clusters are the member clusters, in first-fit order.
	Clusters []FederationCluster `yaml:"clusters"`
	// Span, when set, lets opted-in gangs that fit no single cluster span
	// several (cross-cluster gangs; docs/federation.md).
	Span *FederationSpan `yaml:"span"`
}

// FederationSpan is federation.span: which jobs may span clusters (the
// explicit opt-in: a job of a listed class or queue) and the cross-site
// slowdown of their run time.
type FederationSpan struct {
	Classes []string `yaml:"classes"`
	Queues  []string `yaml:"queues"`
	// Slowdown (>= 1, required) multiplies a spanning gang's duration and
	// walltime; Pairs override it per pair of clusters.
	Slowdown float64    `yaml:"slowdown"`
	Pairs    []SpanPair `yaml:"pairs"`
}

// SpanPair is the slowdown between two member clusters.
type SpanPair struct {
	Clusters []string `yaml:"clusters"`
	Slowdown float64  `yaml:"slowdown"`
}

// validateSpan checks federation.span (names: the member names, by index).
func validateSpan(fe *sim.FieldErrors, sp *FederationSpan, names map[string]int) {
	if len(sp.Classes) == 0 && len(sp.Queues) == 0 {
		fe.Add("federation.span", "give classes or queues: the jobs that may span clusters (an explicit opt-in)")
	}
	for i, c := range sp.Classes {
		if _, err := sim.ParseClass(c); err != nil {
			fe.Add(fmt.Sprintf("federation.span.classes[%d]", i), "%v", err)
		}
	}
	if !(sp.Slowdown >= 1) || math.IsInf(sp.Slowdown, 0) {
		fe.Add("federation.span.slowdown", "required: a factor >= 1 on a spanning gang's run time")
	}
	for i, pr := range sp.Pairs {
		p := fmt.Sprintf("federation.span.pairs[%d]", i)
		if len(pr.Clusters) != 2 || pr.Clusters[0] == pr.Clusters[1] {
			fe.Add(p+".clusters", "want two different cluster names")
		} else {
			for k, n := range pr.Clusters {
				if _, ok := names[n]; !ok {
					fe.Add(fmt.Sprintf("%s.clusters[%d]", p, k), "unknown cluster %q", n)
				}
			}
		}
		if !(pr.Slowdown >= 1) || math.IsInf(pr.Slowdown, 0) {
			fe.Add(p+".slowdown", "must be a factor >= 1")
		}
	}
}

// span builds the federation.Span of a validated federation.span block.
func (f *FederationSpec) span() *federation.Span {
	sp := f.Span
	if sp == nil {
		return nil
	}
	classes := map[sim.JobClass]bool{}
	for _, c := range sp.Classes {
		cl, _ := sim.ParseClass(c)
		classes[cl] = true
	}
	queues := map[string]bool{}
	for _, q := range sp.Queues {
		queues[q] = true
	}
	idx := map[string]int{}
	for i := range f.Clusters {
		idx[f.Clusters[i].Name] = i
	}
	out := &federation.Span{Slowdown: sp.Slowdown, Pairs: map[[2]int]float64{},
		Eligible: func(s *sim.JobSpec) bool { return classes[s.Class] || queues[s.Queue] }}
	for _, pr := range sp.Pairs {
		a, b := idx[pr.Clusters[0]], idx[pr.Clusters[1]]
		out.Pairs[[2]int{min(a, b), max(a, b)}] = pr.Slowdown
	}
	return out
}

// FederationCluster is one member cluster.
type FederationCluster struct {
	// Name names the cluster: its output directory and dispatch.csv value.
	Name string `yaml:"name"`
	// Cluster is the cluster, as the top-level cluster: block.
	Cluster ClusterSpec `yaml:"cluster"`
	// Policy is the label (or name) of the policies: entry that runs it.
	Policy string `yaml:"policy"`
	// CostPerGPUHour prices its GPU-hours (>= 0; cheapest dispatching and
	// summary.json cost).
	CostPerGPUHour float64 `yaml:"costPerGPUHour"`
	// CarbonIntensity is its grid intensity in gCO2e/kWh (>= 0), used by
	// lowest-carbon dispatching when Carbon is absent.
	CarbonIntensity float64 `yaml:"carbonIntensity"`
	// Carbon is an hourly intensity series, as power.carbon.
	Carbon *CarbonSpec `yaml:"carbon"`
	// WANLatency is the one-way delay from the manager: a job dispatched at t
	// arrives in this cluster at t + wanLatency (default 0).
	WANLatency policies.Dur `yaml:"wanLatency"`

	carbon *sim.CarbonSeries // Carbon, loaded by validateFederation
	policy int               // index into Scenario.Policies
}

// validateTop validates the scenario: validate, or for a federated scenario
// validateFederation.
func (s *Scenario) validateTop() sim.FieldErrors {
	if s.Federation == nil {
		return s.validate()
	}
	return s.validateFederation()
}

// member returns a copy of s whose cluster is member i's (for validation and
// node building; paths in its errors start with "cluster").
func (s *Scenario) member(i int) *Scenario {
	sub := *s
	sub.Federation = nil
	sub.Cluster = s.Federation.Clusters[i].Cluster
	return &sub
}

// rePath moves problems at cluster paths of member i's copy to
// federation.clusters[i].cluster paths.
func rePath(fe sim.FieldErrors, i int) sim.FieldErrors {
	var out sim.FieldErrors
	for _, e := range fe {
		if e.Path == "cluster" || strings.HasPrefix(e.Path, "cluster.") {
			e.Path = fmt.Sprintf("federation.clusters[%d].%s", i, e.Path)
			out = append(out, e)
		}
	}
	return out
}

func (s *Scenario) validateFederation() sim.FieldErrors {
	var fe sim.FieldErrors
	f := s.Federation
	if c := &s.Cluster; len(c.Pools) > 0 || c.From != nil || len(c.Templates) > 0 {
		fe.Add("cluster", "with federation, give each cluster under federation.clusters[].cluster, not here")
	}
	for _, u := range []struct {
		on   bool
		path string
	}{
		{s.Failures != nil, "failures"}, {s.Power != nil, "power"}, {s.Storage != nil, "storage"},
		{s.Interference != nil, "interference"}, {len(s.Serving) > 0, "serving"},
		{len(s.Workflows) > 0, "workflows"}, {s.Experiment != nil, "experiment"},
		{s.Telemetry != nil, "telemetry"},
	} {
		if u.on {
			fe.Add(u.path, "is not supported with federation (docs/federation.md)")
		}
	}
	if f.Dispatcher == "" {
		f.Dispatcher = string(federation.FirstFit)
	} else if !federation.Strategy(f.Dispatcher).Valid() {
		fe.Add("federation.dispatcher", "unknown dispatcher %q (one of %v)", f.Dispatcher, federation.Strategies())
	}
	if len(f.Clusters) == 0 {
		fe.Add("federation.clusters", "at least one cluster is required")
		return fe
	}
	// Everything but the cluster, as validate checks it (with the first
	// member's cluster standing in); then each member's cluster.
	for _, e := range s.member(0).validate() {
		if e.Path != "cluster" && !strings.HasPrefix(e.Path, "cluster.") {
			fe = append(fe, e)
		}
	}
	names := map[string]bool{}
	for i := range f.Clusters {
		m := &f.Clusters[i]
		p := fmt.Sprintf("federation.clusters[%d]", i)
		if m.Cluster.Fabric.NodesPerLeaf == 0 {
			m.Cluster.Fabric.NodesPerLeaf = DefaultNodesPerLeaf
		}
		if m.Cluster.Fabric.Oversubscription == 0 {
			m.Cluster.Fabric.Oversubscription = 1
		}
		fe = append(fe, rePath(s.member(i).validate(), i)...)
		for k, pool := range m.Cluster.Pools {
			if pool.Sharing != nil {
				fe.Add(fmt.Sprintf("%s.cluster.pools[%d].sharing", p, k), "device-level GPU sharing is not supported with federation")
			}
		}
		switch {
		case m.Name == "":
			fe.Add(p+".name", "required")
		case !validLabel(m.Name):
			fe.Add(p+".name", "must use only letters, digits, '.', '_' and '-' (it names an output directory)")
		case names[m.Name]:
			fe.Add(p+".name", "duplicate cluster %q", m.Name)
		}
		names[m.Name] = true
		m.policy = -1
		for j := range s.Policies {
			if s.Policies[j].DisplayName() == m.Policy {
				m.policy = j
				break
			}
		}
		if m.policy < 0 {
			var labels []string
			for j := range s.Policies {
				labels = append(labels, s.Policies[j].DisplayName())
			}
			fe.Add(p+".policy", "%q is not the label of a policies: entry (have %v)", m.Policy, labels)
		}
		if m.CostPerGPUHour < 0 || m.CostPerGPUHour != m.CostPerGPUHour {
			fe.Add(p+".costPerGPUHour", "must be >= 0")
		}
		if m.CarbonIntensity < 0 || m.CarbonIntensity != m.CarbonIntensity {
			fe.Add(p+".carbonIntensity", "must be >= 0")
		}
		if m.WANLatency < 0 {
			fe.Add(p+".wanLatency", "must be >= 0")
		}
		if c := m.Carbon; c != nil {
			if m.CarbonIntensity != 0 {
				fe.Add(p+".carbonIntensity", "give either carbonIntensity or carbon, not both")
			}
			if c.Path == "" {
				fe.Add(p+".carbon.path", "required: a CSV of hourly carbon intensity")
			} else if cs, err := LoadCarbonCSV(s.Resolve(c.Path), c.Column, c.Start); err != nil {
				fe.Add(p+".carbon", "%v", err)
			} else {
				m.carbon = cs
			}
		}
	}
	if f.Span != nil {
		idx := map[string]int{}
		for i := range f.Clusters {
			idx[f.Clusters[i].Name] = i
		}
		validateSpan(&fe, f.Span, idx)
	}
	return fe
}

// absFederationPaths makes the file paths of the federation block in root
// (cluster.from.path and carbon.path of every cluster) absolute, for Save.
func (s *Scenario) absFederationPaths(root *yaml.Node) {
	_, fed := mapGet(root, "federation")
	if fed == nil {
		return
	}
	_, cls := mapGet(fed, "clusters")
	if cls == nil || cls.Kind != yaml.SequenceNode {
		return
	}
	for _, c := range cls.Content {
		for _, keys := range [][]string{{"cluster", "from", "path"}, {"carbon", "path"}} {
			n := c
			for _, k := range keys {
				if _, n = mapGet(n, k); n == nil {
					break
				}
			}
			if n != nil && n.Kind == yaml.ScalarNode && !filepath.IsAbs(n.Value) {
				if abs, err := filepath.Abs(s.Resolve(n.Value)); err == nil {
					n.Value = abs
				}
			}
		}
	}
}

// federationNodes is Nodes for a federated scenario: every member's nodes, in
// member order, named "<cluster>/<node>", their NVLink domains, leaves and
// spines numbered apart. It is the federation's total capacity: the
// workload is generated and checked against it (a job that fits no single
// member is rejected by the dispatcher).
func (s *Scenario) federationNodes() ([]sim.NodeSpec, error) {
	var all []sim.NodeSpec
	var dom, leaf, spine int32
	for i, m := range s.Federation.Clusters {
		ns, err := s.memberNodes(i)
		if err != nil {
			return nil, err
		}
		var d, l, sp int32
		for _, n := range ns {
			n.Name = m.Name + "/" + n.Name
			if n.NVLinkDomain >= 0 {
				d = max(d, n.NVLinkDomain+1)
				n.NVLinkDomain += dom
			}
			l, sp = max(l, n.Leaf+1), max(sp, n.Spine+1)
			n.Leaf += leaf
			n.Spine += spine
			all = append(all, n)
		}
		dom, leaf, spine = dom+d, leaf+l, spine+sp
	}
	return all, nil
}

// memberNodes builds member i's node list (errors located at its cluster).
func (s *Scenario) memberNodes(i int) ([]sim.NodeSpec, error) {
	ns, err := s.member(i).Nodes()
	var se *Error
	if errors.As(err, &se) {
		for k := range se.Problems {
			if p := &se.Problems[k]; p.Path == "cluster" || strings.HasPrefix(p.Path, "cluster.") {
				p.Path = fmt.Sprintf("federation.clusters[%d].%s", i, p.Path)
				p.Line = lineOf(s.root, p.Path)
			}
		}
	}
	return ns, err
}

// runFederation is Run for a federated scenario: one federated run, written
// as one run directory per member cluster (the manifest lists them as its
// policies, so report and compare read them) plus dispatch.csv and
// federation.json at the top of opts.OutDir.
func (s *Scenario) runFederation(ctx context.Context, opts RunOptions) ([]PolicyRun, error) {
	if len(opts.Policies) > 0 {
		return nil, s.fieldErr("federation", errors.New("a federated scenario runs the policies its clusters name; --policy does not apply"))
	}
	f := s.Federation
	members := make([]federation.Member, len(f.Clusters))
	for i := range f.Clusters {
		m := &f.Clusters[i]
		ns, err := s.memberNodes(i)
		if err != nil {
			return nil, err
		}
		path := fmt.Sprintf("federation.clusters[%d].cluster", i)
		cl, err := sim.NewCluster(ns)
		if err != nil {
			return nil, s.fieldErr(path, err)
		}
		if cl.NumGPUs() == 0 {
			return nil, s.fieldErr(path, errors.New("the cluster has no GPUs"))
		}
		pol, err := s.Policy(m.policy)
		if err != nil {
			return nil, err
		}
		cfg, err := s.engineConfig(pol, cl, nil)
		if err != nil {
			return nil, err
		}
		cfg.NoLog = opts.NoLog
		members[i] = federation.Member{Name: m.Name, Config: cfg, CostPerGPUHour: m.CostPerGPUHour,
			CarbonIntensity: m.CarbonIntensity, Carbon: m.carbon, WAN: sim.Duration(m.WANLatency)}
	}
	all, err := s.federationNodes()
	if err != nil {
		return nil, err
	}
	union, err := sim.NewCluster(all)
	if err != nil {
		return nil, s.fieldErr("federation.clusters", err)
	}
	jobs, _, err := s.Jobs(union)
	if err != nil {
		return nil, err
	}
	keep, err := s.openOutDir(opts.OutDir, opts.SharedOutDir)
	if err != nil {
		return nil, err
	}
	var t0 time.Time
	if opts.Now != nil {
		t0 = opts.Now()
	}
	fr, err := federation.RunWith(ctx, members, jobs, federation.Strategy(f.Dispatcher), f.span())
	if err != nil {
		var ce *policies.ConfigError
		var me *federation.MemberError
		if errors.As(err, &ce) && errors.As(err, &me) { // locate it as validate does
			return nil, fmt.Errorf("cluster %s: %w", me.Name, &Error{File: s.file, Problems: s.policyProblems(f.Clusters[me.Index].policy, ce)})
		}
		return nil, err
	}
	var wall time.Duration
	if opts.Now != nil {
		wall = opts.Now().Sub(t0)
	}
	prov := reports.Provenance{Version: opts.Version, GoVersion: runtime.Version(), Seed: s.SeedValue(), Scenario: s.Name, ScenarioSHA256: s.hash}
	out := make([]PolicyRun, len(members))
	labels := make([]string, len(members))
	for i, res := range fr.Clusters {
		m := &members[i]
		prices := s.Prices()
		if m.CostPerGPUHour > 0 {
			prices = reports.Prices{Default: m.CostPerGPUHour}
		}
		summarize := func() *reports.Summary { return reports.SummarizeWith(res, prov, wall, prices) }
		out[i] = PolicyRun{Label: m.Name, Result: res, Wall: wall}
		labels[i] = m.Name
		if opts.OutDir == "" {
			out[i].Summary = summarize()
			continue
		}
		dir, err := writePolicyDir(opts.OutDir, m.Name, func(dir string) error {
			sum, err := reports.WriteRunDirFunc(dir, res, summarize)
			out[i].Summary = sum
			return err
		})
		if err != nil {
			return nil, err
		}
		out[i].Dir = dir
	}
	if opts.OutDir != "" {
		if err := fsutil.WriteBytesAtomic(filepath.Join(opts.OutDir, DispatchFile), DispatchCSV(members, fr.Decisions, fr.Spans)); err != nil {
			return nil, err
		}
		b, err := json.MarshalIndent(FederationSummaryOf(f.Dispatcher, members, fr), "", "  ")
		if err != nil {
			return nil, err
		}
		if err := fsutil.WriteBytesAtomic(filepath.Join(opts.OutDir, FederationFile), append(b, '\n')); err != nil {
			return nil, err
		}
		if !opts.SharedOutDir {
			if err := s.FinishOutDir(opts.OutDir, keep, labels); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Output files of a federated run, at the top of the output directory.
const (
	DispatchFile   = "dispatch.csv"
	FederationFile = "federation.json"
)

func secs(t sim.Time) string { return strconv.FormatFloat(t.Seconds(), 'f', -1, 64) }

// DispatchCSV renders the dispatch decisions (docs/outputs.md, dispatch.csv):
// job, submit_s, gpus, cluster, arrive_s, reason, feasible, room. spans
// gives the spanning gangs' clusters (federation.Result.Spans).
func DispatchCSV(members []federation.Member, ds []federation.Decision, spans map[int]federation.SpanSplit) []byte {
	var b bytes.Buffer
	b.WriteString("job,submit_s,gpus,cluster,arrive_s,reason,feasible,room\n")
	for i, d := range ds {
		cl, arr := "", ""
		if d.Cluster >= 0 {
			cl = members[d.Cluster].Name
		}
		for k, c := range spans[i].Clusters { // a spanning gang: its clusters, joined by +
			if k > 0 {
				cl += "+"
			}
			cl += members[c].Name
		}
		if d.Arrive != sim.Never {
			arr = secs(d.Arrive)
		}
		fmt.Fprintf(&b, "%s,%s,%d,%s,%s,%s,%d,%d\n", csvField(string(d.Job)), secs(d.Submit), d.GPUs, cl, arr, d.Why, d.Feasible, d.Room)
	}
	return b.Bytes()
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// FederationSummary is federation.json (docs/outputs.md).
type FederationSummary struct {
	Dispatcher  string `json:"dispatcher"`
	Jobs        int    `json:"jobs"`
	Dispatched  int    `json:"dispatched"`
	Rejected    int    `json:"rejected"`
	PastHorizon int    `json:"past_horizon"`
	// Spanned counts cross-cluster gangs (federation.span), started or not.
	Spanned  int                        `json:"spanned,omitempty"`
	Clusters []FederationClusterSummary `json:"clusters"`
}

// FederationClusterSummary is one member's line of federation.json.
type FederationClusterSummary struct {
	Name           string  `json:"name"`
	WANLatencyS    float64 `json:"wan_latency_s"`
	Jobs           int     `json:"jobs"`              // dispatched to it and arrived
	WithRoom       int     `json:"with_room"`         // ... of which it had room for at dispatch
	Queued         int     `json:"queued"`            // ... of which no cluster had room for
	Completed      int     `json:"completed"`         // finished in it
	GPUHours       float64 `json:"gpu_hours"`         // allocated GPU-hours over the run
	CostPerGPUHour float64 `json:"cost_per_gpu_hour"` // its price
	Cost           float64 `json:"cost"`              // gpu_hours x cost_per_gpu_hour
	// MeanDispatchIntensity is the mean grid intensity (gCO2e/kWh) at the
	// dispatch times of its jobs (0 without jobs).
	MeanDispatchIntensity float64 `json:"mean_dispatch_intensity"`
}

// FederationSummaryOf summarises a federated run.
func FederationSummaryOf(dispatcher string, members []federation.Member, fr *federation.Result) *FederationSummary {
	fs := &FederationSummary{Dispatcher: dispatcher, Jobs: len(fr.Decisions), Clusters: make([]FederationClusterSummary, len(members))}
	intensity := make([]float64, len(members))
	for _, d := range fr.Decisions {
		switch {
		case d.Why == federation.WhyRejected:
			fs.Rejected++
		case d.Why == federation.WhyPastHorizon:
			fs.PastHorizon++
		case d.Why == federation.WhySpan:
			fs.Spanned++
		default:
			fs.Dispatched++
			c := &fs.Clusters[d.Cluster]
			if d.Why == federation.WhyRoom {
				c.WithRoom++
			} else {
				c.Queued++
			}
			intensity[d.Cluster] += members[d.Cluster].Intensity(d.Submit)
		}
	}
	for i, m := range members {
		c := &fs.Clusters[i]
		res := fr.Clusters[i]
		c.Name, c.WANLatencyS, c.CostPerGPUHour = m.Name, m.WAN.Seconds(), m.CostPerGPUHour
		c.Jobs = len(res.Jobs)
		for k := range res.Jobs {
			if res.Jobs[k].State == sim.StateCompleted {
				c.Completed++
			}
		}
		c.GPUHours = res.BusyMilliSeconds / 1000 / 3600
		c.Cost = c.GPUHours * m.CostPerGPUHour
		if n := c.WithRoom + c.Queued; n > 0 {
			c.MeanDispatchIntensity = intensity[i] / float64(n)
		}
	}
	return fs
}
