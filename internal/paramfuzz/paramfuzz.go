// Package paramfuzz holds what the policy fuzz targets (FuzzParams in
// policies/kueue, policies/volcano and policies/slurm) share: a policy's params,
// written into a small scenario, go through everything `gpusim validate` does
// (scenarios.Parse, Nodes, Jobs, Preflight). Whatever the input, nothing may
// panic and every error must be a located problem: a line of the scenario file,
// and a message without YAML tags or Go type names.
package paramfuzz

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/scenarios"
	"github.com/gpusim/gpusim/sim"
)

// header is the scenario around the fuzzed params: 2 nodes named box-0 and
// box-1, 8 H100 each; 20 synthetic jobs in queues a and team-a/lq. The params
// start at line 13.
const header = `apiVersion: gpusim/v1alpha1
kind: Scenario
cluster:
  pools:
    - {name: box, gpuModel: H100, gpus: 8, cpuMilli: 64000, memoryMiB: 512000, nodes: 2}
workload:
  synthetic:
    jobs: 20
    queues: [{name: a, weight: 1}, {name: team-a/lq, weight: 1}]
policies:
  - name: POLICY
    params:
`

// Scenario returns the scenario text with params (YAML, indented under
// `params:`) for policy.
func Scenario(policy string, params []byte) []byte {
	var b strings.Builder
	b.WriteString(strings.Replace(header, "POLICY", policy, 1))
	for _, l := range strings.Split(string(params), "\n") {
		b.WriteString("      ")
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// Check validates the scenario of policy with params as `gpusim validate` does
// and fails t on an unlocated error (Located).
func Check(t testing.TB, policy string, params []byte) {
	t.Helper()
	sc, err := scenarios.Parse(Scenario(policy, params), "s.yaml", nil)
	if err != nil {
		Located(t, err)
		return
	}
	nodes, err := sc.Nodes()
	if err != nil {
		Located(t, err)
		return
	}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	jobs, _, err := sc.Jobs(c)
	if err != nil {
		Located(t, err)
		return
	}
	if err := sc.Preflight(c, jobs); err != nil {
		Located(t, err)
	}
}

// goTypeRE matches what must not reach a user: YAML tags, yaml.v3's
// "unmarshal" messages and Go type names.
var goTypeRE = regexp.MustCompile(`!!\w|unmarshal|\b(u?int(8|16|32|64)?|float(32|64)|\*?struct)\b|\[\][a-z*]|map\[|(^|: )yaml: `)

// Located fails t unless err is a *scenarios.Error whose problems all have a
// line and a message free of YAML tags and Go type names.
func Located(t testing.TB, err error) {
	t.Helper()
	var se *scenarios.Error
	if !errors.As(err, &se) {
		t.Fatalf("error without a location: %v", err)
	}
	if len(se.Problems) == 0 {
		t.Fatalf("a scenario error with no problem: %v", err)
	}
	for _, p := range se.Problems {
		if p.Line <= 0 {
			t.Errorf("problem without a line: %+v", p)
		}
		if strings.TrimSpace(p.Msg) == "" {
			t.Errorf("problem without a message: %+v", p)
		}
		if m := goTypeRE.FindString(p.Msg); m != "" {
			t.Errorf("problem message shows %q: %s", m, p.Msg)
		}
	}
}

// AddExampleSeeds adds to f the params of every policy named policy in the
// example scenarios under dir (scenarios/examples), re-encoded as YAML.
func AddExampleSeeds(f *testing.F, dir, policy string) {
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	n := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var sc struct {
			Policies []struct {
				Name   string    `yaml:"name"`
				Params yaml.Node `yaml:"params"`
			} `yaml:"policies"`
		}
		if err := yaml.Unmarshal(data, &sc); err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		for _, p := range sc.Policies {
			if p.Name != policy || p.Params.Kind == 0 {
				continue
			}
			out, err := yaml.Marshal(&p.Params)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(out)
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no %s params in %s", policy, dir)
	}
}
