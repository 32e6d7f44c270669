package cli

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/reports"
	"github.com/gpusim/gpusim/scenarios"
)

// describeSetups describes what the runs in dirs simulated, for the top of a
// report: for each distinct scenario, the cluster (nodes and GPUs by model), the
// workload and the policies of the runs with their parameters, read from the
// effective scenario next to each run (RUN_DIR/../scenario.yaml). Runs without a
// readable scenario file are left out; the report then shows only its tables.
func describeSetups(dirs []string) []reports.Setup {
	var out []reports.Setup
	index := map[string]int{} // scenario name -> out index
	for _, d := range dirs {
		sum, err := reports.ReadSummary(filepath.Join(d, reports.SummaryFile))
		if err != nil {
			continue
		}
		path := filepath.Join(filepath.Dir(filepath.Clean(d)), "scenario.yaml")
		k, seen := index[sum.Scenario]
		if !seen {
			sc, err := scenarios.Load(path, nil)
			if err != nil {
				continue
			}
			su := reports.Setup{Scenario: sum.Scenario, Cluster: describeCluster(sc), Workload: describeWorkload(sc, sum)}
			k = len(out)
			index[sum.Scenario] = k
			out = append(out, su)
			out[k].Policies = nil
			for i := range sc.Policies {
				p := &sc.Policies[i]
				sp := reports.SetupPolicy{Label: p.DisplayName(), Name: p.Name}
				if p.Params.Kind != 0 && !(p.Params.Kind == yaml.ScalarNode && p.Params.Tag == "!!null") {
					if b, err := yaml.Marshal(&p.Params); err == nil {
						sp.Params = strings.TrimRight(string(b), "\n")
					}
				}
				out[k].Policies = append(out[k].Policies, sp)
			}
		}
		if seed := sum.Provenance.Seed; !slices.Contains(out[k].Seeds, seed) {
			out[k].Seeds = append(out[k].Seeds, seed)
		}
	}
	// Keep only the policies that have runs in the report.
	labels := map[string]bool{}
	for _, d := range dirs {
		if s, err := reports.ReadSummary(filepath.Join(d, reports.SummaryFile)); err == nil {
			labels[s.Policy] = true
		}
	}
	for k := range out {
		out[k].Policies = slices.DeleteFunc(out[k].Policies, func(p reports.SetupPolicy) bool { return !labels[p.Label] })
		slices.Sort(out[k].Seeds)
	}
	return out
}

// describeCluster says "N nodes, G GPUs: a × model, …" for the scenario's cluster.
func describeCluster(sc *scenarios.Scenario) string {
	nodes, err := sc.Nodes()
	if err != nil {
		return "(cluster could not be rebuilt: " + err.Error() + ")"
	}
	byModel := map[string]int{}
	var models []string
	total := 0
	for _, n := range nodes {
		if n.GPUs == 0 {
			continue
		}
		if _, ok := byModel[n.GPUModel]; !ok {
			models = append(models, n.GPUModel)
		}
		byModel[n.GPUModel] += int(n.GPUs)
		total += int(n.GPUs)
	}
	parts := make([]string, len(models))
	for i, m := range models {
		parts[i] = fmt.Sprintf("%d × %s", byModel[m], m)
	}
	s := fmt.Sprintf("%d nodes, %d GPUs", len(nodes), total)
	if len(parts) > 0 {
		s += ": " + strings.Join(parts, ", ")
	}
	if len(sc.Cluster.Pools) > 0 {
		var pools []string
		for _, p := range sc.Cluster.Pools {
			t := p.Template
			if t == "" {
				t = "custom"
			}
			pools = append(pools, fmt.Sprintf("%s (%d × %s)", p.Name, p.Nodes, t))
		}
		s += "; pools " + strings.Join(pools, ", ")
	}
	return s
}

// describeWorkload says where the jobs came from and how many there were.
func describeWorkload(sc *scenarios.Scenario, sum *reports.Summary) string {
	w := sc.Workload
	switch {
	case w.Synthetic != nil:
		return fmt.Sprintf("synthetic generator: %d jobs, target offered load %.2f (docs/workloads.md)", sum.Jobs.Total, w.Synthetic.Load)
	case w.Trace != nil:
		s := fmt.Sprintf("trace %s (format %s): %d jobs", filepath.Base(w.Trace.Path), w.Trace.Format, sum.Jobs.Total)
		if w.Trace.TimeScale != 0 && w.Trace.TimeScale != 1 {
			s += fmt.Sprintf(", time scale %g", w.Trace.TimeScale)
		}
		if w.Trace.LoadScale != 0 && w.Trace.LoadScale != 1 {
			s += fmt.Sprintf(", load scale %g", w.Trace.LoadScale)
		}
		if w.Trace.TargetLoad > 0 {
			s += fmt.Sprintf(", resampled to offered load %g", w.Trace.TargetLoad)
		}
		return s
	}
	return fmt.Sprintf("%d jobs", sum.Jobs.Total)
}

// buildReport writes the report of dirs into out with the setup description.
func buildReport(dirs []string, out string) error {
	return reports.BuildReportWith(dirs, out, describeSetups(dirs))
}
