package reports

// Setup describes what one scenario of a report simulated, shown at the top of
// index.html. The command line fills it from the runs' effective scenario
// (DIR/scenario.yaml); a report without it shows what the summaries hold.
type Setup struct {
	Scenario string
	Cluster  string // e.g. "16 nodes, 128 GPUs: 128 × H100-SXM-80GB"
	Workload string // e.g. "synthetic: 2,000 jobs at offered load 0.85"
	Seeds    []uint64
	Policies []SetupPolicy
}

// SetupPolicy is one policy of a Setup with its parameters as written (YAML).
type SetupPolicy struct {
	Label, Name string
	Params      string // YAML text; "" when the defaults apply
}
