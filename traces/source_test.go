package traces

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/gpusim/gpusim/sim"
)

func TestTraceSourceValidate(t *testing.T) {
	src := TraceSource{Format: "bogus", TimeScale: -1, LoadScale: -2, Limit: -1,
		Window: &TraceWindow{Start: 10, End: 5}, Filter: TraceFilter{Queues: []string{""}, Classes: []string{"training", "nope"}}}
	fe := src.Validate()
	var paths []string
	for _, e := range fe {
		paths = append(paths, e.Path)
	}
	want := []string{"format", "path", "filter.queues[0]", "filter.classes[1]", "timeScale", "loadScale", "window.end_s", "limit"}
	if d := cmp.Diff(want, paths); d != "" {
		t.Fatalf("paths (-want +got):\n%s\n%v", d, fe)
	}
	ok := TraceSource{Format: "native", Path: "x.csv"}
	if fe := ok.Validate(); len(fe) != 0 {
		t.Fatal(fe)
	}
	cs := ClusterSource{Format: "native", NodesPerLeaf: -1}
	if fe := cs.Validate(); len(fe) != 3 {
		t.Fatal(fe)
	}
}

func TestTraceSourceYAML(t *testing.T) {
	doc := `
format: openb-pods
path: ../testdata/alibaba-openb-2023/openb_pod_list_default.csv
filter: {queues: [LS], classes: [serving]}
timeScale: 0.5
loadScale: 2
window: {start_s: 11000000, end_s: 12500000}
limit: 300
`
	var src TraceSource
	dec := yaml.NewDecoder(strings.NewReader(doc))
	dec.KnownFields(true)
	if err := dec.Decode(&src); err != nil {
		t.Fatal(err)
	}
	jobs, rep, err := src.Load("testdata", 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 600 {
		t.Fatalf("%d jobs\n%v", len(jobs), rep)
	}
	for i := range jobs {
		j := &jobs[i]
		if j.Queue != "LS" || j.Submit < 0 || j.Submit >= sim.Time(sim.Seconds(0.5*1500000)) {
			t.Fatalf("job %+v", j)
		}
		if i > 0 && jobs[i-1].Submit > j.Submit {
			t.Fatal("not sorted")
		}
	}
	again, _, _ := src.Load("testdata", 7)
	if d := cmp.Diff(jobs, again); d != "" {
		t.Fatal("not deterministic")
	}
	other, _, _ := src.Load("testdata", 8)
	if cmp.Equal(jobs, other) {
		t.Fatal("seed ignored")
	}
}

func TestResample(t *testing.T) {
	jobs, _, err := ReadJobs(FormatOpenBPods, openbDir+"openb_pod_list_default.csv")
	if err != nil {
		t.Fatal(err)
	}
	half := Resample(jobs, 0.5, 1)
	if len(half) != 4076 {
		t.Fatal(len(half))
	}
	seen := map[sim.JobID]bool{}
	for _, j := range half {
		if seen[j.ID] {
			t.Fatal("subsample repeats", j.ID)
		}
		seen[j.ID] = true
	}
	more := Resample(jobs, 1.3, 1)
	if len(more) != 8152+2446 {
		t.Fatal(len(more))
	}
	ids := map[sim.JobID]bool{}
	for _, j := range more {
		if ids[j.ID] {
			t.Fatal("duplicate id", j.ID)
		}
		ids[j.ID] = true
	}
	// Offered GPU-seconds grow roughly with the factor.
	demand := func(js []sim.JobSpec) float64 {
		s := 0.0
		for i := range js {
			s += float64(js[i].GPUDemandMilli()) * js[i].Duration.Seconds()
		}
		return s
	}
	if r := demand(Resample(jobs, 3, 2)) / demand(jobs); r < 2 || r > 4 {
		t.Fatalf("demand ratio %v", r)
	}
}

func TestClusterSource(t *testing.T) {
	cs := ClusterSource{Format: FormatOpenBNodes, Path: "alibaba-openb-2023/openb_node_list_all_node.csv", GPUOnly: true, NodesPerLeaf: 32, LeavesPerSpine: 8}
	nodes, err := cs.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1213 || nodes[1212].Leaf != 1212/32 || nodes[1212].Spine != 1212/32/8 {
		t.Fatalf("%d nodes, last %+v", len(nodes), nodes[len(nodes)-1])
	}
	if _, err := sim.NewCluster(nodes); err != nil {
		t.Fatal(err)
	}
}

func TestTraceSourceTargetLoad(t *testing.T) {
	src := TraceSource{Format: FormatPhillyGavel, Path: "philly-via-gavel/philly_gavel_jobs.csv", Filter: TraceFilter{VCs: []string{"6214e9"}}, TargetLoad: 0.8}
	if _, _, err := src.Load("testdata", 1); err == nil || !strings.Contains(err.Error(), "needs the cluster size") {
		t.Fatal(err)
	}
	base, _, err := (&TraceSource{Format: src.Format, Path: src.Path, Filter: src.Filter}).Load("testdata", 1)
	if err != nil {
		t.Fatal(err)
	}
	before := OfferedLoad(base, 384)
	jobs, rep, err := src.LoadOn("testdata", 1, 384)
	if err != nil {
		t.Fatal(err)
	}
	after := OfferedLoad(jobs, 384)
	// Resampling hits the target in expectation; heavy-tailed durations make one
	// draw noisy, so only check it moved the right way by roughly the right factor.
	if before <= 0 || after < 0.4 || after > 1.6 || len(jobs) <= len(base) {
		t.Fatalf("load %.3f -> %.3f (%d -> %d jobs)\n%v", before, after, len(base), len(jobs), rep)
	}
	bad := TraceSource{Format: "native", Path: "x", LoadScale: 2, TargetLoad: 1}
	if fe := bad.Validate(); len(fe) != 1 || fe[0].Path != "targetLoad" {
		t.Fatal(fe)
	}
}
