package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/reports"
)

const fedMinimal = `apiVersion: gpusim/v1alpha1
kind: Scenario
name: fed
federation:
  dispatcher: most-free
  clusters:
    - name: a
      policy: fifo
      cluster:
        pools:
          - {name: h, template: dgx-h100, nodes: 2}
    - name: b
      policy: easy-backfill
      wanLatency: 50ms
      costPerGPUHour: 1.5
      cluster:
        pools:
          - {name: h, template: dgx-h100, nodes: 1}
workload:
  synthetic: {jobs: 200, load: 0.8}
policies:
  - name: fifo
  - name: easy-backfill
`

// TestFederationErrors: bad federation fields are reported at their line.
func TestFederationErrors(t *testing.T) {
	mustErr(t, strings.Replace(fedMinimal, "most-free", "random", 1), nil, `s.yaml:5: federation.dispatcher: unknown dispatcher "random"`)
	mustErr(t, strings.Replace(fedMinimal, "policy: easy-backfill", "policy: sjf", 1), nil, `s.yaml:13: federation.clusters[1].policy: "sjf" is not the label of a policies: entry`)
	mustErr(t, strings.Replace(fedMinimal, "costPerGPUHour: 1.5", "costPerGPUHour: -1", 1), nil, "s.yaml:15: federation.clusters[1].costPerGPUHour: must be >= 0")
	mustErr(t, strings.Replace(fedMinimal, "wanLatency: 50ms", "wanLatency: -5s", 1), nil, "s.yaml:14: federation.clusters[1].wanLatency: duration \"-5s\" must be >= 0")
	mustErr(t, strings.Replace(fedMinimal, "name: b", "name: a", 1), nil, `s.yaml:12: federation.clusters[1].name: duplicate cluster "a"`)
	mustErr(t, strings.Replace(fedMinimal, "nodes: 1}", "nodes: 0}", 1), nil, "s.yaml:18: federation.clusters[1].cluster.pools[0].nodes: must be >= 1")
	mustErr(t, strings.Replace(fedMinimal, "name: fed\n", "name: fed\ncluster:\n  pools:\n    - {name: x, template: dgx-h100, nodes: 1}\n", 1), nil, "s.yaml:4: cluster: with federation")
	mustErr(t, strings.Replace(fedMinimal, "name: fed\n", "name: fed\npower:\n  cap: {watts: 100000}\n", 1), nil, "power: is not supported with federation")
	mustErr(t, strings.Replace(fedMinimal, "      wanLatency", "      bogus: 1\n      wanLatency", 1), nil, `s.yaml:14: federation.clusters[1].bogus: unknown field`)
}

// TestFederationRun: a federated run writes one run directory per cluster,
// dispatch.csv and federation.json; every job is in exactly one cluster; and
// the outputs are byte-identical across runs with different parallelism.
func TestFederationRun(t *testing.T) {
	run := func(par int) string {
		sc, err := Parse([]byte(fedMinimal), "s.yaml", nil)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		runs, err := Run(context.Background(), sc, RunOptions{OutDir: dir, Parallel: par})
		if err != nil {
			t.Fatal(err)
		}
		if len(runs) != 2 || runs[0].Label != "a" || runs[1].Label != "b" {
			t.Fatalf("runs %+v", runs)
		}
		seen := map[string]string{}
		for _, r := range runs {
			for i := range r.Result.Jobs {
				id := string(r.Result.Jobs[i].Spec.ID)
				if c, dup := seen[id]; dup {
					t.Fatalf("job %s in clusters %s and %s", id, c, r.Label)
				}
				seen[id] = r.Label
			}
			if err := reports.CheckRunDir(r.Dir); err != nil {
				t.Fatal(err)
			}
		}
		// the workload is sized on the whole federation (24 GPUs): gangs
		// larger than the largest cluster (16) fit no cluster and are rejected
		fs := readFederation(t, dir)
		if len(seen)+fs.Rejected != 200 || fs.Rejected == 0 || fs.Dispatched != len(seen) {
			t.Fatalf("%d jobs across clusters + %d rejected, want 200 (dispatched %d)", len(seen), fs.Rejected, fs.Dispatched)
		}
		return dir
	}
	d1, d2 := run(1), run(4)
	for _, f := range []string{DispatchFile, FederationFile, "a/jobs.csv", "b/jobs.csv"} {
		b1, err := os.ReadFile(filepath.Join(d1, f))
		if err != nil {
			t.Fatal(err)
		}
		b2, _ := os.ReadFile(filepath.Join(d2, f))
		if !bytes.Equal(b1, b2) {
			t.Errorf("%s differs between runs", f)
		}
	}
	csv, _ := os.ReadFile(filepath.Join(d1, DispatchFile))
	lines := strings.Split(strings.TrimSpace(string(csv)), "\n")
	if len(lines) != 201 || lines[0] != "job,submit_s,gpus,cluster,arrive_s,reason,feasible,room" {
		t.Fatalf("dispatch.csv: %d lines, header %q", len(lines), lines[0])
	}
	for _, l := range lines[1:] {
		f := strings.Split(l, ",")
		if gpus, _ := strconv.Atoi(f[2]); (gpus > 16) != (f[5] == "rejected") {
			t.Fatalf("rejected iff larger than every cluster: %s", l)
		}
		if f[3] == "b" && f[4] == f[1] { // b is 50 ms away
			t.Fatalf("job dispatched to b arrives at its submit time: %s", l)
		}
	}
}

func readFederation(t *testing.T, dir string) *FederationSummary {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, FederationFile))
	if err != nil {
		t.Fatal(err)
	}
	var fs FederationSummary
	if err := json.Unmarshal(b, &fs); err != nil {
		t.Fatal(err)
	}
	return &fs
}

// TestFederationSave: the saved scenario (scenario.yaml of a run) has the
// clusters' file paths made absolute, so it loads from anywhere.
func TestFederationSave(t *testing.T) {
	sc, err := Load("examples/federation-multikueue.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := sc.Save(p); err != nil {
		t.Fatal(err)
	}
	again, err := Load(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := again.Federation.Clusters[1].Carbon; c == nil || !filepath.IsAbs(c.Path) {
		t.Fatalf("carbon path not absolute: %+v", c)
	}
}

// TestFederationPoolSharingRefused: pool sharing is a validation error.
func TestFederationPoolSharingRefused(t *testing.T) {
	mustErr(t, strings.Replace(fedMinimal, "nodes: 1}", "nodes: 1, sharing: {mode: timeslice, clients: 2}}", 1), nil,
		"s.yaml:18: federation.clusters[1].cluster.pools[0].sharing: device-level GPU sharing is not supported with federation")
}

// TestFederationSpanErrors: a bad federation.span block is reported at its line.
func TestFederationSpanErrors(t *testing.T) {
	with := func(span string) string {
		return strings.Replace(fedMinimal, "  dispatcher: most-free\n", "  dispatcher: most-free\n"+span, 1)
	}
	mustErr(t, with("  span: {slowdown: 1.2}\n"), nil, "s.yaml:6: federation.span: give classes or queues")
	mustErr(t, with("  span: {classes: [training], slowdown: 0.5}\n"), nil, "s.yaml:6: federation.span.slowdown: required: a factor >= 1")
	mustErr(t, with("  span: {classes: [nope], slowdown: 1.2}\n"), nil, "s.yaml:6: federation.span.classes[0]:")
	mustErr(t, with("  span:\n    classes: [training]\n    slowdown: 1.2\n    pairs:\n      - {clusters: [a, c], slowdown: 2}\n"), nil, `s.yaml:10: federation.span.pairs[0].clusters[1]: unknown cluster "c"`)
	mustErr(t, with("  span:\n    classes: [training]\n    slowdown: 1.2\n    pairs:\n      - {clusters: [a, b], slowdown: 0}\n"), nil, "s.yaml:10: federation.span.pairs[0].slowdown: must be a factor >= 1")
}

// TestFederationSpanRun: with span on for training, the workload's gangs
// larger than every cluster (sized on the 24-GPU federation) run split as
// "<id>@a" and "<id>@b", starting and ending together; dispatch.csv gives
// them reason span and cluster a+b.
func TestFederationSpanRun(t *testing.T) {
	src := strings.Replace(fedMinimal, "  dispatcher: most-free\n", "  dispatcher: most-free\n  span: {classes: [training, experiment], slowdown: 1.5}\n", 1)
	sc, err := Parse([]byte(src), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	runs, err := Run(context.Background(), sc, RunOptions{OutDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	parts := map[string][2]float64{}
	n := 0
	for _, r := range runs {
		for i := range r.Result.Jobs {
			j := &r.Result.Jobs[i]
			id, _, ok := strings.Cut(string(j.Spec.ID), "@")
			if !ok {
				continue
			}
			n++
			se := [2]float64{j.FirstStart.Seconds(), j.End.Seconds()}
			if p, seen := parts[id]; seen && p != se {
				t.Errorf("parts of %s: %v and %v", id, p, se)
			}
			parts[id] = se
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "dispatch.csv"))
	if err != nil {
		t.Fatal(err)
	}
	spans := strings.Count(string(b), ",a+b,")
	if len(parts) == 0 || n != 2*len(parts) || spans < len(parts) {
		t.Fatalf("%d parts of %d gangs, %d span rows in dispatch.csv", n, len(parts), spans)
	}
}
