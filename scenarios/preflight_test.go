package scenarios

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// preflightBase is a scenario with a two-node cluster (box-0, box-1; 8 GPUs
// each) and a native trace; a case appends its policies at line 8.
const preflightBase = `apiVersion: gpusim/v1alpha1
kind: Scenario
cluster:
  pools:
    - {name: box, gpuModel: H100, gpus: 8, cpuMilli: 64000, memoryMiB: 512000, nodes: 2}
workload:
  trace: {format: native, path: jobs.csv}
policies:
`

const preflightJobs = `id,submit_s,gpus,duration_s,walltime_s,queue,replicas
J1,0,4,100,7200,a,1
J2,5000,8,100,100,b,1
J3,9000,8,100,100,a,2
`

const kueueInline = `      inline: |
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ResourceFlavor
        metadata: {name: f}
        ---
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: ClusterQueue
        metadata: {name: cq}
        spec:
          resourceGroups:
          - coveredResources: [nvidia.com/gpu]
            flavors: [{name: f, resources: [{name: nvidia.com/gpu, nominalQuota: 16}]}]
        ---
        apiVersion: kueue.x-k8s.io/v1beta1
        kind: LocalQueue
        metadata: {name: a}
        spec: {clusterQueue: cq}
`

// Every error a policy returns at its first scheduling point (or when a job
// arrives) is found by Preflight, which validate runs, with the scenario's
// file:line and field; and run fails on the same scenario. Lines count from 1;
// the policies start at line 9.
func TestPreflightFindsWhatRunRejects(t *testing.T) {
	for _, tc := range []struct {
		name, policies string
		want           []string // "LINE: path: message" parts
	}{
		{"kueue queue matches no LocalQueue", "  - name: kueue\n    params:\n" + kueueInline,
			[]string{`:10: policies[0].params: queue "b" of 1 job(s) (first: J2) matches no LocalQueue (known: default/a); set queueMapping`}},
		{"slurm partition matches no node", "  - name: slurm\n    params:\n      partitions:\n        - {name: a, nodes: \"gpu-*\", default: true}\n",
			[]string{`:12: policies[0].params.partitions[0].nodes: "gpu-*" matches no node (nodes are named like "box-0", pool "box"; 2 nodes)`}},
		{"slurm hostlist beyond the cluster", "  - name: slurm\n    params:\n      partitions:\n        - {name: a, nodes: \"box-[0-1]\", default: true}\n        - {name: b,\n           nodes: \"box-[5]\"}\n",
			[]string{`:14: policies[0].params.partitions[1].nodes: "box-[5]" matches no node`}},
		{"slurm reservation matches no node", "  - name: slurm\n    params:\n      reservations:\n        - name: maint\n          nodes: \"box-9\"\n          users: [root]\n          duration: 1h\n",
			[]string{`:13: policies[0].params.reservations[0].nodes: "box-9" matches no node`}},
		{"slurm queue names no partition", "  - name: slurm\n    params:\n      partitions:\n        - {name: a, nodes: ALL}\n",
			[]string{`:10: policies[0].params: job J2: queue "b" names no partition (partitions: a) and no partition is default: true; set params.partitionMapping`}},
		{"slurm partition can never hold a job", "  - name: slurm\n    params:\n      partitions:\n        - {name: a, nodes: box-0, default: true}\n",
			[]string{`:10: policies[0].params: job J3: needs 2 x 8 GPU(s)`, `but partition "a" (1 nodes) can never hold it`}},
		{"slurm time limit over maxTime", "  - name: slurm\n    params:\n      enforcePartLimits: true\n      partitions:\n        - {name: a, nodes: ALL, default: true, maxTime: 1h}\n",
			[]string{`:10: policies[0].params: job J1: time limit 7200s exceeds partition "a" maxTime 3600s (enforcePartLimits: true)`}},
		{"volcano guarantees over the cluster", "  - name: fifo\n  - name: volcano\n    params:\n      queues:\n        - {name: a, guarantee: {gpu: 10}}\n        - {name: b, guarantee: {gpu: 10}}\n",
			[]string{`:12: policies[1].params.queues: guarantees sum to 20 gpu, more than the cluster's 16`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "s.yaml")
			if err := os.WriteFile(path, []byte(preflightBase+tc.policies), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "jobs.csv"), []byte(preflightJobs), 0o644); err != nil {
				t.Fatal(err)
			}
			sc, err := Load(path, nil)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			err = preflightOf(t, sc)
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("Preflight: want a located *Error, got %v", err)
			}
			if len(se.Problems) != 1 {
				t.Errorf("want 1 problem, got %d: %v", len(se.Problems), err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), path+w) && !strings.Contains(err.Error(), w) {
					t.Errorf("Preflight error\n%v\ndoes not contain %q", err, w)
				}
			}
			if !strings.HasPrefix(err.Error(), path+tc.want[0]) {
				t.Errorf("Preflight error\n%v\ndoes not start with %q", err, path+tc.want[0])
			}
			if _, err := Run(context.Background(), sc, RunOptions{NoLog: true}); err == nil {
				t.Error("Run succeeded on a scenario Preflight rejects")
			} else if !errors.As(err, &se) {
				t.Errorf("Run: want a located *Error, got %v", err)
			}
		})
	}
}

// BenchmarkPreflight measures what validate adds to a scenario's check: a
// fresh engine per policy and the policies' start-up checks over every job
// (ns/job), for 100,000 synthetic jobs on 1,280 nodes (10,240 GPUs):
//
//	go test ./scenarios -run '^$' -bench BenchmarkPreflight -benchmem
func BenchmarkPreflight(b *testing.B) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	for _, pol := range []struct{ name, params string }{
		{"fifo", ""},
		{"slurm", "      partitions: [{name: a, nodes: \"h100-*\", default: true}]\n"},
		{"volcano", "      queues: [{name: a, guarantee: {gpu: 100}}]\n"},
		{"kueue", "      queueMapping: {default: a}\n" + strings.Replace(kueueInline, "nominalQuota: 16", "nominalQuota: 10240", 1)},
	} {
		b.Run("policy="+pol.name, func(b *testing.B) {
			text := fmt.Sprintf("apiVersion: gpusim/v1alpha1\nkind: Scenario\ncluster:\n  pools:\n    - {name: h100, template: dgx-h100, nodes: 1280}\nworkload:\n  synthetic: {jobs: %d}\npolicies:\n  - name: %s\n", n, pol.name)
			if pol.params != "" {
				text += "    params:\n" + pol.params
			}
			sc, err := Parse([]byte(text), "", nil)
			if err != nil {
				b.Fatal(err)
			}
			nodes, err := sc.Nodes()
			if err != nil {
				b.Fatal(err)
			}
			c, err := sim.NewCluster(nodes)
			if err != nil {
				b.Fatal(err)
			}
			jobs, _, err := sc.Jobs(c)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := sc.Preflight(c, jobs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(jobs)), "ns/job")
		})
	}
}

// preflightOf builds sc's cluster and workload as Run does and runs
// Scenario.Preflight on them (the checks gpusim validate runs).
func preflightOf(t *testing.T, sc *Scenario) error {
	t.Helper()
	nodes, err := sc.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := sc.Jobs(c)
	if err != nil {
		t.Fatal(err)
	}
	return sc.Preflight(c, jobs)
}
