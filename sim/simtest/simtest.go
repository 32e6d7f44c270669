// Package simtest holds builders and helpers for tests of the engine and policies:
// fluent job builders, small clusters, and a Run helper that returns the schedule.
package simtest

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// JobBuilder builds a sim.JobSpec fluently: MakeJob("j1").GPUs(4).Dur(100).Obj().
type JobBuilder struct{ s sim.JobSpec }

// MakeJob starts a 1-replica, 1-GPU, 1-second job submitted at 0.
func MakeJob(id string) *JobBuilder {
	return &JobBuilder{s: sim.JobSpec{ID: sim.JobID(id), Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: sim.Second, Class: sim.ClassUnknown}}
}

// GPUs sets GPUs per replica.
func (b *JobBuilder) GPUs(n int32) *JobBuilder { b.s.GPUsPerReplica = n; return b }

// Replicas sets the gang size.
func (b *JobBuilder) Replicas(n int32) *JobBuilder { b.s.Replicas = n; return b }

// Milli sets a fractional share.
func (b *JobBuilder) Milli(m int32) *JobBuilder { b.s.GPUMilli = sim.MilliGPU(m); return b }

// Dur sets the true duration in seconds.
func (b *JobBuilder) Dur(sec float64) *JobBuilder { b.s.Duration = sim.Seconds(sec); return b }

// Wall sets the walltime estimate in seconds.
func (b *JobBuilder) Wall(sec float64) *JobBuilder { b.s.Walltime = sim.Seconds(sec); return b }

// At sets the submit time in seconds.
func (b *JobBuilder) At(sec float64) *JobBuilder { b.s.Submit = sim.Time(sim.Seconds(sec)); return b }

// Prio sets the priority.
func (b *JobBuilder) Prio(p int32) *JobBuilder { b.s.Priority = p; return b }

// Models restricts GPU models.
func (b *JobBuilder) Models(m ...string) *JobBuilder { b.s.GPUModels = m; return b }

// CPU sets CPU millicores per replica.
func (b *JobBuilder) CPU(m int64) *JobBuilder { b.s.CPUMilli = m; return b }

// Queue sets the queue.
func (b *JobBuilder) Queue(q string) *JobBuilder { b.s.Queue = q; return b }

// Obj returns the spec.
func (b *JobBuilder) Obj() sim.JobSpec { return b.s }

// Nodes returns n identical nodes with gpus GPUs of model "h100", 8 GPUs per NVLink
// island, 2 per PCIe switch, 4 per socket, 4 nodes per leaf.
func Nodes(n int, gpus int32) []sim.NodeSpec {
	out := make([]sim.NodeSpec, n)
	for i := range out {
		out[i] = sim.NodeSpec{Name: fmt.Sprintf("n%d", i), Pool: "p", GPUModel: "h100", GPUs: gpus,
			CPUMilli: 1 << 20, MemoryMiB: 1 << 30, NVLinkSize: 8, PCIeSize: 2, SocketSize: 4,
			NVLinkDomain: -1, Leaf: int32(i / 4)}
	}
	return out
}

// Cluster builds a cluster or fails the test.
func Cluster(t testing.TB, nodes []sim.NodeSpec) *sim.Cluster {
	t.Helper()
	c, err := sim.NewCluster(nodes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Run runs pol over jobs on nodes and returns the result (fails the test on error).
func Run(t testing.TB, nodes []sim.NodeSpec, pol sim.Policy, jobs ...sim.JobSpec) *sim.Result {
	t.Helper()
	return RunConfig(t, sim.Config{Cluster: Cluster(t, nodes), Jobs: jobs, Policy: pol, Seed: 1, EnforceWalltime: true})
}

// RunConfig builds an engine from cfg and runs it to the end, failing the test
// on any error.
func RunConfig(t testing.TB, cfg sim.Config) *sim.Result {
	t.Helper()
	e, err := sim.NewEngine(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := e.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Starts maps job id to its first start time in seconds (-1 if never started).
func Starts(res *sim.Result) map[string]float64 {
	m := map[string]float64{}
	for i := range res.Jobs {
		j := &res.Jobs[i]
		if j.FirstStart == sim.Never {
			m[string(j.Spec.ID)] = -1
		} else {
			m[string(j.Spec.ID)] = j.FirstStart.Seconds()
		}
	}
	return m
}

// Schedule renders the event log as text lines "t=<s> <kind> <job>" (reservations
// included), for golden comparisons.
func Schedule(res *sim.Result) string {
	var b strings.Builder
	for _, e := range res.Log {
		fmt.Fprintf(&b, "t=%g %s %s", e.Time.Seconds(), e.Kind, res.Jobs[e.Job].Spec.ID)
		switch e.Kind {
		case sim.EvReserve:
			fmt.Fprintf(&b, " at=%g", sim.Time(e.Value).Seconds())
		case sim.EvWait:
			fmt.Fprintf(&b, " %s", sim.Reason(e.Value))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// SortedIDs returns map keys sorted (helper for stable messages).
func SortedIDs(m map[string]float64) []string {
	k := make([]string, 0, len(m))
	for id := range m {
		k = append(k, id)
	}
	sort.Strings(k)
	return k
}

// BenchJobs is the engine benchmarks' workload: n jobs of 1, 2, 4 or 8 GPUs
// (uniform), 60 s plus an exponential 600 s mean duration, Poisson arrivals
// 0.1 s apart on average, from the random stream "bench" of seed 1 (the same
// jobs every call).
func BenchJobs(n int) []sim.JobSpec {
	r := sim.Stream(1, "bench")
	jobs := make([]sim.JobSpec, n)
	var t sim.Time
	for i := range jobs {
		t += sim.Time(r.ExpFloat64() * 0.1 * 1e6)
		jobs[i] = MakeJob(fmt.Sprintf("j%07d", i)).GPUs(int32(1 << r.IntN(4))).Dur(60 + r.ExpFloat64()*600).Obj()
		jobs[i].Submit = t
	}
	return jobs
}

// ReadMeta reads a fidelity fixture's recorded.meta ("key: value" lines; the
// value is everything after the first colon, trimmed), failing t when the
// file cannot be read.
func ReadMeta(t testing.TB, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	return m
}

// ReadCSV reads a fixture's CSV file with a header row, failing t when it
// cannot be read or has no data row; it returns the column index by header
// name and the data rows.
func ReadCSV(t testing.TB, path string) (map[string]int, [][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(rows) < 2 {
		t.Fatalf("%s: no rows", path)
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	return col, rows[1:]
}

// Atof parses a fixture's number ("" is 0), failing t on a bad one.
func Atof(t testing.TB, s string) float64 {
	t.Helper()
	if s == "" {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
