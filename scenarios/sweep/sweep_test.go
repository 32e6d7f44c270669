package sweep

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const traceScenario = `apiVersion: gpusim/v1alpha1
kind: Scenario
name: t
cluster:
  pools:
    - {name: box, gpuModel: H100, gpus: 8, cpuMilli: 64000, memoryMiB: 512000, nodes: 1}
workload:
  trace: {format: native, path: jobs.csv}
policies:
  - name: fifo
`

const traceJobs = `id,submit_s,gpus,duration_s
a,0,4,100
b,10,8,50
`

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPointsOrderAndTraceLoad checks the documented point order (set paths
// slowest, then load, seed, policy fastest), that the load axis maps to
// workload.trace.loadScale for a trace scenario, and sharding by k mod n.
func TestPointsOrderAndTraceLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "s.yaml", traceScenario)
	write(t, dir, "jobs.csv", traceJobs)
	p := write(t, dir, "sw.yaml", `apiVersion: gpusim/v1alpha1
kind: Sweep
scenario: s.yaml
grid:
  policies: [fifo, easy-backfill]
  set:
    - {path: simulation.checkpointInterval, values: [0s, 60s]}
  load: [1, 2]
  seeds: [5]
`)
	sw, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if sw.LoadField() != "workload.trace.loadScale" || sw.Name != "sw" {
		t.Fatalf("load field %q, name %q", sw.LoadField(), sw.Name)
	}
	if got, want := sw.Columns(), []string{"simulation.checkpointInterval", "load", "seed", "policy"}; !slices.Equal(got, want) {
		t.Fatalf("columns %v, want %v", got, want)
	}
	var got []string
	for _, pt := range sw.Points() {
		got = append(got, strings.Join(pt.Params, " "))
	}
	want := []string{
		"0s 1 5 fifo", "0s 1 5 easy-backfill", "0s 2 5 fifo", "0s 2 5 easy-backfill",
		"60s 1 5 fifo", "60s 1 5 easy-backfill", "60s 2 5 fifo", "60s 2 5 easy-backfill",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("points\n%v\nwant\n%v", got, want)
	}
	pt := sw.Points()[6]
	if !slices.Equal(pt.Sets, []string{"simulation.checkpointInterval=60s", "workload.trace.loadScale=2", "seed=5"}) || pt.Policy != "fifo" {
		t.Fatalf("point 6: %+v", pt)
	}
	var idx []int
	for _, q := range (Shard{1, 3}).Select(sw.Points()) {
		idx = append(idx, q.Index)
	}
	if !slices.Equal(idx, []int{1, 4, 7}) {
		t.Fatalf("shard 1/3: %v", idx)
	}
	if sw.PointDir(7) != "point-7" {
		t.Fatalf("PointDir(7) = %q", sw.PointDir(7))
	}
}

func TestParseShard(t *testing.T) {
	for _, s := range []string{"", "1", "3/3", "-1/3", "0/0", "a/b", "1/2/3"} {
		if _, err := ParseShard(s); err == nil {
			t.Errorf("ParseShard(%q): no error", s)
		}
	}
	if s, err := ParseShard("2/5"); err != nil || s != (Shard{2, 5}) || s.String() != "2/5" {
		t.Errorf("ParseShard(2/5) = %v, %v", s, err)
	}
}

// TestParseErrors: strict decoding and per-entry validation name lines.
func TestParseErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "s.yaml", traceScenario)
	write(t, dir, "jobs.csv", traceJobs)
	cases := []struct{ text, want string }{
		{"kind: Sweep\n", `:1: apiVersion: want "gpusim/v1alpha1"`},
		{"apiVersion: gpusim/v1alpha1\nkind: Sweep\nscenario: s.yaml\ngrid:\n  seed: [1]\n", `:5: grid.seed: unknown field "seed"`},
		{"apiVersion: gpusim/v1alpha1\nkind: Sweep\nscenario: s.yaml\ngrid:\n  set:\n    - {path: seed, values: [1]}\n", ":6: grid.set[0].path: vary the seed with grid.seeds"},
		{"apiVersion: gpusim/v1alpha1\nkind: Sweep\nscenario: s.yaml\ngrid:\n  load: [1, 1]\n", ":5: load: value \"1\" is given twice"},
		{"apiVersion: gpusim/v1alpha1\nkind: Sweep\nscenario: s.yaml\ngrid:\n  set:\n    - path: workload.trace.format\n      values: [nope]\n", ":7: workload.trace.format: nope:"},
		{"apiVersion: gpusim/v1alpha1\nkind: Sweep\nscenario: s.yaml\ngrid:\n  set:\n    - path: x\n      values: [[1]]\n", ":7: grid.set[0].values[0]: a value must be a scalar"},
		{"- a\n", ":1: a sweep must be a YAML mapping"},
	}
	for _, c := range cases {
		p := write(t, dir, "sw.yaml", c.text)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
}
