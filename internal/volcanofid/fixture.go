// Package volcanofid records what the real Volcano scheduler (vc-scheduler
// v1.10.0, built by scripts/ensure-volcano.sh) does with a fixture's jobs, so
// that policies/volcano's fidelity test can replay the same jobs in gpusim
// without any daemon (docs/fidelity.md, "Volcano").
//
// A fixture directory (policies/volcano/testdata/fidelity/<name>/) holds:
//
//	fixture.yaml   nodes, GPUs per node, the time scale and the volcano policy
//	               params (schedulePeriod, evictionGracePeriod, actions, tiers,
//	               queues): the one source of both configurations
//	jobs.csv       the jobs (id, submit_s, duration_s, replicas, gpus,
//	               cpu_milli, memory_mib, queue, priority), simulated seconds
//
// and, written by Record:
//
//	volcano-scheduler.conf  the scheduler configuration derived from the params
//	recorded.csv   one row per run of each job (a restarted job has several)
//	recorded.meta  versions, time scale, schedule period, grace period
package volcanofid

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/policies/volcano"
)

// Fixture is a parsed fixture directory.
type Fixture struct {
	Dir string
	// Nodes is the number of nodes n0..n<Nodes-1>, each with GPUsPerNode
	// nvidia.com/gpu, 64 CPUs and 512 GiB (kubetest.CreateGPUNode).
	Nodes       int `yaml:"nodes"`
	GPUsPerNode int `yaml:"gpusPerNode"`
	// TimeScale is the real time per simulated second (0.1: 1 s simulated =
	// 100 ms real). Submit times, durations, the schedule period and the
	// grace period are all multiplied by it.
	TimeScale float64 `yaml:"timeScale"`
	// Params are the volcano policy's parameters (policies/volcano.Params).
	Params volcano.Params `yaml:"params"`
	Jobs   []Job          `yaml:"-"`
}

// Job is one row of jobs.csv: a PodGroup of Replicas identical pods.
type Job struct {
	ID        string
	Submit    float64 // simulated seconds from t=0
	Duration  float64 // simulated seconds
	Replicas  int
	GPUs      int // per pod
	CPUMilli  int64
	MemoryMiB int64
	Queue     string
	Priority  int32
}

// ReadFixture reads fixture.yaml and jobs.csv of dir. Errors name the file
// and, where known, the line and field.
func ReadFixture(dir string) (*Fixture, error) {
	path := filepath.Join(dir, "fixture.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("volcanofid: %w", err)
	}
	f := &Fixture{Dir: dir}
	if err := yaml.Unmarshal(b, f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case f.Nodes <= 0:
		return nil, fmt.Errorf("%s: nodes: want > 0, got %d", path, f.Nodes)
	case f.GPUsPerNode <= 0:
		return nil, fmt.Errorf("%s: gpusPerNode: want > 0, got %d", path, f.GPUsPerNode)
	case !(f.TimeScale > 0 && f.TimeScale <= 1):
		return nil, fmt.Errorf("%s: timeScale: want in (0, 1], got %v", path, f.TimeScale)
	}
	f.Jobs, err = readJobs(filepath.Join(dir, "jobs.csv"))
	if err != nil {
		return nil, err
	}
	return f, nil
}

// readJobs parses jobs.csv (header row, then one job per row).
func readJobs(path string) ([]Job, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("volcanofid: %w", err)
	}
	defer fh.Close()
	rows, err := csv.NewReader(fh).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) < 2 {
		return nil, fmt.Errorf("%s: no jobs", path)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range []string{"id", "submit_s", "duration_s", "gpus"} {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s:1: %s: column missing", path, c)
		}
	}
	seen := map[string]bool{}
	var jobs []Job
	for i, r := range rows[1:] {
		line := i + 2
		get := func(c string) string {
			if k, ok := col[c]; ok && k < len(r) {
				return strings.TrimSpace(r[k])
			}
			return ""
		}
		num := func(c string, def float64) (float64, error) {
			s := get(c)
			if s == "" {
				return def, nil
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v < 0 {
				return 0, fmt.Errorf("%s:%d: %s: want a number >= 0, got %q", path, line, c, s)
			}
			return v, nil
		}
		j := Job{ID: get("id"), Queue: get("queue")}
		if j.ID == "" || seen[j.ID] {
			return nil, fmt.Errorf("%s:%d: id: empty or repeated %q", path, line, j.ID)
		}
		seen[j.ID] = true
		var vals [7]float64
		for k, c := range []struct {
			name string
			def  float64
		}{{"submit_s", 0}, {"duration_s", 0}, {"replicas", 1}, {"gpus", 0}, {"cpu_milli", 0}, {"memory_mib", 0}, {"priority", 0}} {
			if vals[k], err = num(c.name, c.def); err != nil {
				return nil, err
			}
		}
		j.Submit, j.Duration = vals[0], vals[1]
		j.Replicas, j.GPUs = int(vals[2]), int(vals[3])
		j.CPUMilli, j.MemoryMiB, j.Priority = int64(vals[4]), int64(vals[5]), int32(vals[6])
		if j.Replicas < 1 {
			return nil, fmt.Errorf("%s:%d: replicas: want >= 1", path, line)
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// SchedulerConf renders the volcano-scheduler.conf that matches the params:
// the same actions and plugin tiers, in the same order, with the same
// arguments (the policy parameters use the conf's own keys). Defaults are
// the volcano policy's (policies/volcano: enqueue, allocate, backfill and the
// Helm chart's tiers) when the params leave them out.
func (f *Fixture) SchedulerConf() (string, error) {
	actions := f.Params.Actions
	if actions == "" {
		actions = "enqueue, allocate, backfill"
	}
	tiers := f.Params.Tiers
	if len(tiers) == 0 {
		return "", fmt.Errorf("%s/fixture.yaml: params.tiers: list the tiers explicitly, so that both configurations say the same", f.Dir)
	}
	type conf struct {
		Actions string             `yaml:"actions"`
		Tiers   []volcano.TierSpec `yaml:"tiers"`
	}
	b, err := yaml.Marshal(conf{Actions: actions, Tiers: tiers})
	if err != nil {
		return "", fmt.Errorf("volcanofid: %w", err)
	}
	return string(b), nil
}
