package scenarios

import (
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

const minimal = `apiVersion: gpusim/v1alpha1
kind: Scenario
name: t
cluster:
  pools:
    - {name: a, template: dgx-h100, nodes: 2}
workload:
  synthetic: {jobs: 50, load: 0.5}
policies:
  - name: fifo
`

func mustErr(t *testing.T, yaml string, sets []string, wants ...string) {
	t.Helper()
	_, err := Parse([]byte(yaml), "s.yaml", sets)
	if err == nil {
		t.Fatalf("no error; want %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not contain %q", err, w)
		}
	}
}

func TestParseMinimal(t *testing.T) {
	sc, err := Parse([]byte(minimal), "s.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if sc.SeedValue() != DefaultSeed || len(sc.Policies) != 1 || sc.SHA256() == "" {
		t.Fatalf("unexpected %+v", sc)
	}
	nodes, err := sc.Nodes()
	if err != nil || len(nodes) != 2 || nodes[1].Name != "a-1" || nodes[0].GPUs != 8 {
		t.Fatalf("nodes %v %v", nodes, err)
	}
}

func TestErrorsHaveLines(t *testing.T) {
	mustErr(t, strings.Replace(minimal, "name: t", "name: t\nbogus: 1", 1), nil, `s.yaml:4: bogus: unknown field`)
	mustErr(t, strings.Replace(minimal, "nodes: 2", "nodes: 0", 1), nil, "s.yaml:6: cluster.pools[0].nodes: must be >= 1")
	mustErr(t, strings.Replace(minimal, "name: fifo", "name: nope", 1), nil, `s.yaml:10: policies[0].name: unknown policy "nope"`)
	mustErr(t, strings.Replace(minimal, "template: dgx-h100", "template: dgx-zz", 1), nil, `cluster.pools[0].template: unknown template "dgx-zz"`)
	mustErr(t, "apiVersion: [\n", nil, "s.yaml:")
	mustErr(t, strings.Replace(minimal, "gpusim/v1alpha1", "v2", 1), nil, "s.yaml:1: apiVersion: must be")
	// every problem at once
	bad := strings.Replace(strings.Replace(minimal, "nodes: 2", "nodes: -1", 1), "name: fifo", "name: nope", 1)
	mustErr(t, bad, nil, "nodes: must be >= 1", "unknown policy")
	mustErr(t, strings.Replace(minimal, "- name: fifo", "- name: fifo\n    params: {placement: worst}", 1), nil, "policies[0].params", "unknown placement")
	mustErr(t, strings.Replace(minimal, "- name: fifo", "- name: fifo\n    params: {windw: 1h}", 1), nil, `unknown parameter "windw"`)
	mustErr(t, strings.Replace(minimal, "  pools:\n    - {name: a, template: dgx-h100, nodes: 2}\n", "  pools: []\n", 1), nil, "cluster: needs pools or from")
}

func TestSetOverrides(t *testing.T) {
	sc, err := Parse([]byte(minimal), "s.yaml", []string{"seed=7", "policies[1].name=easy-backfill", "policies[1].params.window=1h", "cluster.pools[0].nodes=3"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.SeedValue() != 7 || len(sc.Policies) != 2 || sc.Policies[1].Name != "easy-backfill" || sc.Cluster.Pools[0].Nodes != 3 {
		t.Fatalf("overrides not applied: %+v", sc)
	}
	base, _ := Parse([]byte(minimal), "s.yaml", nil)
	if base.SHA256() == sc.SHA256() {
		t.Error("hash ignores overrides")
	}
	mustErr(t, minimal, []string{"noequals"}, "--set noequals: want path=value")
	mustErr(t, minimal, []string{"policies[5].name=x"}, "out of range")
	mustErr(t, minimal, []string{"seed=abc"}, `seed: want a whole number >= 0, got "abc"`)
	mustErr(t, minimal, []string{"cluster.pools[0].nodes=0"}, "cluster.pools[0].nodes: must be >= 1")
}

func TestDemoLoads(t *testing.T) {
	sc, err := Demo(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Policies) < 2 {
		t.Fatal("demo should compare policies")
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal), "seed=3")
	f.Add(DemoYAML(), "policies[0].params.window=2h")
	f.Add([]byte("apiVersion: x\n"), "a.b[0]=1")
	f.Fuzz(func(t *testing.T, data []byte, set string) {
		sc, err := Parse(data, "f.yaml", []string{set})
		if err != nil {
			_ = err.Error()
			return
		}
		_, _ = sc.Nodes()
	})
}

func TestPreemptionCostAndShowbackFields(t *testing.T) {
	sc, err := Parse([]byte(minimal), "s.yaml", []string{"simulation.checkpointInterval=30m", "simulation.checkpointSaveCost=20s",
		"simulation.checkpointRestoreCost=1m", "simulation.checkpointOnSignal=true", "simulation.preemptMinRuntime=5m",
		"simulation.preemptAntiChurn=1h", "showback.pricePerGPUHour=2.5", "showback.perModel.H100=4"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sc.Config()
	if cfg.CheckpointSave != 20*sim.Second || cfg.CheckpointRestore != sim.Minute || !cfg.CheckpointOnSignal ||
		cfg.PreemptMinRuntime != 5*sim.Minute || cfg.PreemptAntiChurn != sim.Hour {
		t.Errorf("config %+v", cfg)
	}
	if p := sc.Prices(); p.Default != 2.5 || p.PerModel["H100"] != 4 || sc.Showback.Currency != "USD" {
		t.Errorf("prices %+v", p)
	}
	mustErr(t, minimal, []string{"simulation.checkpointSaveCost=20s"}, "simulation.checkpointSaveCost: has no effect without checkpointInterval")
	mustErr(t, minimal, []string{"showback.perModel.H100=-1"}, "showback.perModel.H100: must not be negative")
	mustErr(t, minimal, []string{"simulation.preemptAntiChurn=-1s"}, "simulation.preemptAntiChurn")
}
