package volcanofid

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

func writeFixture(t *testing.T, fixture, jobs string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "fixture.yaml"), []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "jobs.csv"), []byte(jobs), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

const goodFixture = `nodes: 2
gpusPerNode: 8
timeScale: 0.1
params:
  schedulePeriod: 1s
  actions: "enqueue, allocate, reclaim"
  tiers:
    - plugins: [{name: priority}, {name: gang}]
    - plugins:
        - {name: proportion}
        - {name: binpack, arguments: {binpack.weight: "10"}}
  queues:
    - {name: a, weight: 3, capability: {gpu: "8"}}
`

// The conf carries the params' actions and tiers unchanged, in
// volcano-scheduler.conf's keys.
func TestSchedulerConf(t *testing.T) {
	dir := writeFixture(t, goodFixture, "id,submit_s,duration_s,gpus,queue\nj1,0,10,2,a\nj2,10,5,8,a\n")
	f, err := ReadFixture(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Jobs) != 2 || f.Jobs[1].GPUs != 8 || f.Jobs[1].Submit != 10 || f.Jobs[0].Replicas != 1 || f.Jobs[0].Queue != "a" {
		t.Fatalf("jobs %+v", f.Jobs)
	}
	conf, err := f.SchedulerConf()
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Actions string `yaml:"actions"`
		Tiers   []struct {
			Plugins []struct {
				Name      string            `yaml:"name"`
				Arguments map[string]string `yaml:"arguments"`
			} `yaml:"plugins"`
		} `yaml:"tiers"`
	}
	if err := yaml.Unmarshal([]byte(conf), &got); err != nil {
		t.Fatalf("%v\n%s", err, conf)
	}
	if got.Actions != "enqueue, allocate, reclaim" || len(got.Tiers) != 2 || got.Tiers[0].Plugins[1].Name != "gang" ||
		got.Tiers[1].Plugins[1].Arguments["binpack.weight"] != "10" {
		t.Errorf("conf:\n%s", conf)
	}
}

func TestReadFixtureErrors(t *testing.T) {
	for _, c := range []struct{ fixture, jobs, want string }{
		{strings.Replace(goodFixture, "nodes: 2", "nodes: 0", 1), "id,submit_s,duration_s,gpus\nj,0,1,1\n", "fixture.yaml: nodes: want > 0"},
		{strings.Replace(goodFixture, "timeScale: 0.1", "timeScale: 2", 1), "id,submit_s,duration_s,gpus\nj,0,1,1\n", "timeScale: want in (0, 1]"},
		{goodFixture, "id,submit_s,duration_s\nj,0,1\n", "jobs.csv:1: gpus: column missing"},
		{goodFixture, "id,submit_s,duration_s,gpus\nj,0,1,1\nk,x,1,1\n", "jobs.csv:3: submit_s: want a number >= 0"},
		{goodFixture, "id,submit_s,duration_s,gpus\nj,0,1,1\nj,0,1,1\n", "jobs.csv:3: id: empty or repeated"},
		{goodFixture, "id,submit_s,duration_s,gpus,replicas\nj,0,1,1,0\n", "jobs.csv:2: replicas: want >= 1"},
	} {
		_, err := ReadFixture(writeFixture(t, c.fixture, c.jobs))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
	// tiers must be explicit
	f, err := ReadFixture(writeFixture(t, "nodes: 1\ngpusPerNode: 8\ntimeScale: 0.1\nparams: {}\n", "id,submit_s,duration_s,gpus\nj,0,1,1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.SchedulerConf(); err == nil || !strings.Contains(err.Error(), "params.tiers") {
		t.Errorf("SchedulerConf without tiers: %v", err)
	}
}

// fitLine by hand: sessions at 0.4, 1.41, 2.42, 3.43 s lie on 0.4 + 1.01 k.
func TestFitLine(t *testing.T) {
	f, err := fitLine([]float64{0.4, 1.41, 2.42, 3.43})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(f.First-0.4) > 1e-9 || math.Abs(f.Period-1.01) > 1e-9 || f.MaxResidual > 1e-9 || f.N != 4 {
		t.Errorf("fit %+v, want first 0.4, period 1.01", f)
	}
	if _, err := fitLine([]float64{1}); err == nil {
		t.Error("one session: want an error")
	}
	tm, ok := klogTime("I1126 21:12:46.973042   30851 session.go:190] Open Session x", 2026, time.UTC)
	if !ok || !tm.Equal(time.Date(2026, 11, 26, 21, 12, 46, 973042000, time.UTC)) {
		t.Errorf("klogTime = %v, %v", tm, ok)
	}
}

// cachedTimes: a run is in the cache once its PodGroup (first run only) and
// all its pods are; a missing log line leaves it unknown (-1).
func TestCachedTimes(t *testing.T) {
	f := &Fixture{Jobs: []Job{{ID: "g", Replicas: 2}, {ID: "s", Replicas: 1}}}
	runs := []Run{{Job: "g", Cached: -1}, {Job: "g", Index: 1, Cached: -1}, {Job: "s", Cached: -1}}
	cachedTimes(runs, f, map[string]float64{
		"podgroup/g": 0.5, "g-0-0": 0.2, "g-0-1": 0.4, "g-1-0": 9, "g-1-1": 9.5, "s-0-0": 1})
	if runs[0].Cached != 0.5 || runs[1].Cached != 9.5 || runs[2].Cached != -1 {
		t.Errorf("cached %v %v %v, want 0.5 9.5 -1 (s has no PodGroup line)", runs[0].Cached, runs[1].Cached, runs[2].Cached)
	}
}
