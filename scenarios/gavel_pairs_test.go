package scenarios

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/calibrate"
	"github.com/gpusim/gpusim/sim"
)

// gavelThroughputs reads Gavel's simulation_throughputs.json from the shared
// reference data (../shared/interference/gavel, MIT; see its README) or the copy
// embedded in calibrate/testdata, or skips.
func gavelThroughputs(t *testing.T) map[string]map[string]map[string]json.RawMessage {
	for _, p := range []string{"../../shared/interference/gavel/simulation_throughputs.json", "../../../shared/interference/gavel/simulation_throughputs.json",
		"../calibrate/testdata/gavel/simulation_throughputs.json"} { // the embedded copy (MIT, NOTICE.md)
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var m map[string]map[string]map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Skip("Gavel's simulation_throughputs.json not found under ../shared/interference/gavel")
	return nil
}

var gavelKey = regexp.MustCompile(`^\('(.+)', (\d+)\)$`)

// gavelName turns a Gavel job type into a matrix workload name
// ("ResNet-18 (batch size 16)" -> "ResNet-18_batch_size_16").
var gavelName = strings.NewReplacer(" (", "_", " ", "_", ")", "")

// Gavel's measured pairs reproduce (issue 11 acceptance): for 20 pairs of 1-GPU
// jobs on a V100 (the first 20 in sorted key order with both throughputs > 0),
// the speed factor of each job is its co-located throughput / its alone
// ("null") throughput. Put into an InterferenceMatrix and through the engine, two
// co-located jobs of the pair run until their walltime W and have done exactly
// floor(W x factor) of work each, so their progress ratio is the measured
// throughput ratio up to 1 µs in W.
func TestGavelPairsReproduce(t *testing.T) {
	all := gavelThroughputs(t)
	v100 := all["v100"]
	alone := map[string]float64{}
	var keys []string
	for k, row := range v100 {
		mm := gavelKey.FindStringSubmatch(k)
		if mm == nil || mm[2] != "1" {
			continue
		}
		var x float64
		if err := json.Unmarshal(row["null"], &x); err != nil || x <= 0 {
			continue
		}
		alone[mm[1]] = x
		keys = append(keys, k)
	}
	sort.Strings(keys)
	type pair struct {
		a, b   string
		fa, fb float64
	}
	var pairs []pair
	seen := map[string]bool{}
	for _, k := range keys {
		a := gavelKey.FindStringSubmatch(k)[1]
		var others []string
		for o := range v100[k] {
			others = append(others, o)
		}
		sort.Strings(others)
		for _, o := range others {
			mm := gavelKey.FindStringSubmatch(o)
			if mm == nil || mm[2] != "1" || mm[1] == a || seen[mm[1]+"|"+a] || alone[mm[1]] == 0 {
				continue
			}
			var tp [2]float64
			if err := json.Unmarshal(v100[k][o], &tp); err != nil || tp[0] <= 0 || tp[1] <= 0 {
				continue
			}
			seen[a+"|"+mm[1]] = true
			pairs = append(pairs, pair{gavelName.Replace(a), gavelName.Replace(mm[1]), tp[0] / alone[a], tp[1] / alone[mm[1]]})
			if len(pairs) == 20 {
				break
			}
		}
		if len(pairs) == 20 {
			break
		}
	}
	if len(pairs) < 20 {
		t.Fatalf("found %d usable pairs", len(pairs))
	}
	m := &calibrate.InterferenceMatrix{APIVersion: "gpusim/v1alpha1", Kind: "InterferenceMatrix",
		Metadata: calibrate.MatrixMetadata{Name: "gavel-v100-pairs", GPUModel: "V100", MeasureSeconds: 1, Repetitions: 1},
		Modes:    []calibrate.ModeResult{{Mode: "timeslice", Alone: []calibrate.AloneResult{}}}}
	named := map[string]bool{}
	for _, p := range pairs {
		for _, w := range []string{p.a, p.b} {
			if !named[w] {
				named[w] = true
				m.Workloads = append(m.Workloads, calibrate.WorkloadProfile{Name: w})
			}
		}
	}
	for _, p := range pairs {
		m.Modes[0].Groups = append(m.Modes[0].Groups, calibrate.GroupResult{Members: []calibrate.MemberResult{
			{Workload: p.a, Stat: calibrate.Stat{Mean: p.fa, Repetitions: 1}}, {Workload: p.b, Stat: calibrate.Stat{Mean: p.fb, Repetitions: 1}}}})
	}
	in, err := newTableInterference(InterferenceSpec{}, m)
	if err != nil {
		t.Fatal(err)
	}
	const W = 3600 * sim.Second
	for i, p := range pairs {
		c, _ := sim.NewCluster([]sim.NodeSpec{{Name: "n", GPUModel: "V100", GPUs: 1, GPUMemMiB: 16384, CPUMilli: 1000, MemoryMiB: 1000, Sharing: sim.ShareTimeSlice}})
		job := func(id, wl string) sim.JobSpec {
			return sim.JobSpec{ID: sim.JobID(id), Replicas: 1, GPUsPerReplica: 1, GPUMilli: sim.WholeGPU, Duration: 1e6 * sim.Second, Walltime: W, Sharing: sim.AcceptTimeSlice, Workload: wl}
		}
		e, err := sim.NewEngine(sim.Config{Cluster: c, Jobs: []sim.JobSpec{job("a", p.a), job("b", p.b)}, Policy: pinBoth{}, EnforceWalltime: true,
			Sharing: &sim.SharingConfig{Interference: in}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ja, jb := &res.Jobs[0], &res.Jobs[1]
		if ja.Done != floorWork(W, p.fa) || jb.Done != floorWork(W, p.fb) || res.Sharing.Measured != 1 {
			t.Errorf("pair %d %s + %s: done %d, %d; want %d, %d (factors %v, %v)", i, p.a, p.b, ja.Done, jb.Done, floorWork(W, p.fa), floorWork(W, p.fb), p.fa, p.fb)
		}
		ratio := float64(ja.Done) / float64(jb.Done)
		if want := p.fa / p.fb; ratio/want-1 > 1e-9 || want/ratio-1 > 1e-9 {
			t.Errorf("pair %d: progress ratio %v, measured %v", i, ratio, want)
		}
	}
}
