package reports

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gpusim/gpusim/sim"
	"github.com/gpusim/gpusim/sim/simtest"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

var runFiles = []string{SummaryFile, JobsCSVFile, JobsFile, TimeseriesFile, EventsFile}

func TestWriteRunDirDeterministic(t *testing.T) {
	res := smallResult(t)
	s := Summarize(res, Provenance{Scenario: "small"}, 0)
	a, b := t.TempDir(), filepath.Join(t.TempDir(), "nested", "dir")
	if err := WriteRunDir(a, res, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteRunDir(b, smallResult(t), Summarize(smallResult(t), Provenance{Scenario: "small"}, 0)); err != nil {
		t.Fatal(err)
	}
	for _, f := range runFiles {
		x, err := os.ReadFile(filepath.Join(a, f))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between runs (%d vs %d bytes)", f, len(x), len(y))
		}
	}
	ents, _ := os.ReadDir(a)
	if len(ents) != len(runFiles) {
		t.Errorf("run dir has %d entries, want %d (temp files left?)", len(ents), len(runFiles))
	}
}

func TestJobsCSVGolden(t *testing.T) {
	res := smallResult(t)
	var buf bytes.Buffer
	if err := WriteJobsCSV(&buf, JobRows(res)); err != nil {
		t.Fatal(err)
	}
	want := `id,submit_s,start_s,end_s,wait_s,jct_s,run_s,estimate_s,gpus,gpus_per_replica,replicas,gpu_milli,class,queue,user,priority,state,preemptions,nodes,span,speed,wasted_s,overhead_s
j1,0,0,100,0,100,100,100,4,4,1,1000,training,q1,alice,0,completed,0,n0a,nvlink,1,0,0
j2,0,0,50,0,50,50,50,4,4,1,1000,experiment,q2,bob,0,completed,0,n1a,nvlink,1,0,0
j3,10,100,120,90,110,20,20,8,4,2,1000,training,q1,alice,0,completed,0,n0a|n1a,leaf,1,0,0
j4,20,120,125,100,105,5,5,1,1,1,1000,experiment,q2,bob,0,completed,0,n0a,nvlink,1,0,0
j5,30,,,,,5,5,16,4,4,1000,serving,q3,carol,0,pending,0,,,,0,0
`
	if d := cmp.Diff(want, buf.String()); d != "" {
		t.Fatalf("jobs.csv (-want +got):\n%s", d)
	}
}

func TestCSVQuoting(t *testing.T) {
	rows := []JobRow{{ID: `a,"b"`, Submit: 1.000001, Start: nanF(), End: nanF(), Wait: nanF(), JCT: nanF(), Run: 0.5, Estimate: 2, Class: "x\ny", State: "pending"}}
	var buf bytes.Buffer
	if err := WriteJobsCSV(&buf, rows); err != nil {
		t.Fatal(err)
	}
	back, err := ParseJobsCSV("mem.csv", &buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(rows, back, cmpopts.EquateNaNs()); d != "" {
		t.Fatal(d)
	}
	if _, err := ParseJobsCSV("bad.csv", strings.NewReader(strings.Join(JobColumns, ",")+"\nx,notanumber,,,,,1,1,1,1,1,1000,c,q,u,0,pending,0,,,,0,0\n")); err == nil || !contains(err.Error(), "bad.csv: line 2: column submit_s") {
		t.Fatalf("err = %v", err)
	}
}

func TestParquetMatchesCSV(t *testing.T) {
	res := smallResult(t)
	dir := t.TempDir()
	if err := WriteRunDir(dir, res, Summarize(res, Provenance{}, time.Second)); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, JobsCSVFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fromCSV, err := ParseJobsCSV(JobsCSVFile, f)
	if err != nil {
		t.Fatal(err)
	}
	fromPQ, err := ReadJobsParquet(filepath.Join(dir, JobsFile))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(fromCSV, fromPQ, cmpopts.EquateNaNs()); d != "" {
		t.Fatalf("parquet vs csv (-csv +parquet):\n%s", d)
	}
	if d := cmp.Diff(JobRows(res), fromPQ, cmpopts.EquateNaNs()); d != "" {
		t.Fatalf("parquet vs result:\n%s", d)
	}

	ev, err := ReadEventsParquet(filepath.Join(dir, EventsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ev) != len(res.Log) {
		t.Fatalf("%d events, want %d", len(ev), len(res.Log))
	}
	for i, e := range res.Log {
		g := ev[i]
		if g.Seq != int64(i) || g.TimeU != int64(e.Time) || g.TimeS != e.Time.Seconds() || g.Kind != e.Kind.String() ||
			g.JobID != string(res.Jobs[e.Job].Spec.ID) || g.Value != e.Value || g.Detail != EventDetail(&e) {
			t.Fatalf("event %d: %+v vs %+v", i, g, e)
		}
	}
	ts, err := ReadTimeseriesParquet(filepath.Join(dir, TimeseriesFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != len(res.Samples) || len(ts) == 0 {
		t.Fatalf("%d samples, want %d", len(ts), len(res.Samples))
	}
	// At t=0 j1 and j2 hold all 8 GPUs; at t=60 only j1 (4 GPUs) runs, j3 and j4 wait.
	if ts[0].GPUsAllocated != 8 || ts[0].Utilization != 1 || ts[0].Running != 2 {
		t.Errorf("sample 0 = %+v", ts[0])
	}
	if ts[6].TimeS != 60 || ts[6].GPUsAllocated != 4 || ts[6].Utilization != 0.5 || ts[6].Pending != 3 || ts[6].PendingGPUs != 25 {
		t.Errorf("sample 6 = %+v", ts[6])
	}

	run, err := ReadRunDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Jobs) != 5 || len(run.Events) != len(res.Log) || len(run.Timeseries) != len(ts) {
		t.Fatalf("ReadRunDir: %d jobs %d events %d samples", len(run.Jobs), len(run.Events), len(run.Timeseries))
	}
}

func TestReadRunDirErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadRunDir(dir, false); err == nil || !contains(err.Error(), "summary.json") {
		t.Fatalf("err = %v", err)
	}
	os.WriteFile(filepath.Join(dir, SummaryFile), []byte(`{}`), 0o644)
	os.WriteFile(filepath.Join(dir, JobsFile), []byte(`not parquet`), 0o644)
	if _, err := ReadRunDir(dir, false); err == nil || !contains(err.Error(), "jobs.parquet") {
		t.Fatalf("err = %v", err)
	}
}

func TestEmptyRun(t *testing.T) {
	res := simtest.RunConfig(t, sim.Config{Cluster: testCluster(t, 1, 2), Policy: fifo{}, SampleInterval: sim.Second})
	s := Summarize(res, Provenance{}, 0)
	if s.Jobs.Total != 0 || s.GPUUtilization != 0 || s.EventsPerSecond != 0 {
		t.Fatalf("%+v", s)
	}
	dir := t.TempDir()
	if err := WriteRunDir(dir, res, s); err != nil {
		t.Fatal(err)
	}
	run, err := ReadRunDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Jobs) != 0 || len(run.Events) != 0 {
		t.Fatalf("%+v", run)
	}
	if err := WriteRunDir(dir, nil, s); err == nil {
		t.Fatal("nil result accepted")
	}
}

func TestCorruptParquet(t *testing.T) {
	res := smallResult(t)
	dir := t.TempDir()
	if err := WriteRunDir(dir, res, Summarize(res, Provenance{}, 0)); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, JobsFile)
	b, _ := os.ReadFile(p)
	for _, cut := range []int{len(b) / 2, len(b) - 9} {
		bad := append([]byte(nil), b...)
		for i := cut; i < cut+8 && i < len(bad); i++ {
			bad[i] ^= 0xff
		}
		os.WriteFile(p, bad, 0o644)
		if _, err := ReadJobsParquet(p); err == nil {
			t.Logf("corruption at %d not detected (data page bytes may decode)", cut)
		}
	}
	// Random corruption must give errors or rows, never a panic.
	rng := sim.Stream(7, "corrupt")
	for range 200 {
		bad := append([]byte(nil), b...)
		for range 1 + rng.IntN(4) {
			bad[rng.IntN(len(bad))] = byte(rng.Uint32())
		}
		os.WriteFile(p, bad, 0o644)
		_, _ = ReadJobsParquet(p)
	}
	// wrong file kind: events.parquet read as jobs
	if _, err := ReadJobsParquet(filepath.Join(dir, EventsFile)); err == nil || !contains(err.Error(), "column 0") {
		t.Fatalf("err = %v", err)
	}
}
