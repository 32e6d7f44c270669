package kueuefid

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func write(t *testing.T, dir, name, s string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadJobs(t *testing.T) {
	dir := t.TempDir()
	p := write(t, dir, "jobs.csv", "id,submit_s,gpus,replicas,duration_s,queue,priority\na,0,4,1,60,q,\nb,1.5,2,3,10,r,100\n")
	jobs, err := ReadJobs(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{{ID: "a", Submit: 0, Duration: 60, GPUs: 4, Replicas: 1, Queue: "q"},
		{ID: "b", Submit: 1.5, Duration: 10, GPUs: 2, Replicas: 3, Queue: "r", Priority: 100}}
	if len(jobs) != 2 || jobs[0] != want[0] || jobs[1] != want[1] {
		t.Fatalf("got %+v, want %+v", jobs, want)
	}
}

func TestReadJobsErrors(t *testing.T) {
	for _, tc := range []struct{ csv, want string }{
		{"id,submit_s,gpus,replicas,duration_s\na,0,1,1,1\n", "jobs.csv:1: queue: missing column"},
		{"id,submit_s,gpus,replicas,duration_s,queue\na,0,0,1,1,q\n", "jobs.csv:2: gpus: \"0\" is not a number >= 1"},
		{"id,submit_s,gpus,replicas,duration_s,queue\na,-1,1,1,1,q\n", "jobs.csv:2: submit_s: \"-1\" is not a number >= 0"},
		{"id,submit_s,gpus,replicas,duration_s,queue\na,0,1,1,1,q\na,0,1,1,1,q\n", "jobs.csv:3: id: empty or repeated \"a\""},
		{"id,submit_s,gpus,replicas,duration_s,queue,priority\na,0,1,1,1,q,high\n", "jobs.csv:2: priority: \"high\" is not an integer"},
	} {
		p := write(t, t.TempDir(), "jobs.csv", tc.csv)
		_, err := ReadJobs(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.csv, err, tc.want)
		}
	}
}

// WriteRuns sorts by admission and writes NaN as an empty field; ReadRuns
// reads it back.
func TestRunsRoundTrip(t *testing.T) {
	nan := math.NaN()
	runs := []Run{
		{ID: "b", Run: 1, Created: 1, Admitted: 2.5, AdmittedStamp: 2, Flavor: "gpu", Evicted: 7, EvictReason: "Preempted", Released: 7.01, Finished: nan},
		{ID: "a", Run: 1, Created: 0, Admitted: 0.25, AdmittedStamp: 0, Flavor: "gpu", Evicted: nan, Released: nan, Finished: 60.3},
	}
	var b strings.Builder
	if err := WriteRuns(&b, runs); err != nil {
		t.Fatal(err)
	}
	want := "id,run,created_s,admitted_s,admitted_stamp_s,flavor,evicted_s,evict_reason,released_s,finished_s\n" +
		"a,1,0.000,0.250,0.000,gpu,,,,60.300\n" +
		"b,1,1.000,2.500,2.000,gpu,7.000,Preempted,7.010,\n"
	if b.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", b.String(), want)
	}
	p := write(t, t.TempDir(), "recorded.csv", b.String())
	got, err := ReadRuns(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[0].Finished != 60.3 || !math.IsNaN(got[0].Evicted) || got[1].EvictReason != "Preempted" || got[1].Released != 7.01 {
		t.Fatalf("read back %+v", got)
	}
	bad := write(t, t.TempDir(), "recorded.csv", strings.Replace(b.String(), "2.500", "x", 1))
	if _, err := ReadRuns(bad); err == nil || !strings.Contains(err.Error(), `recorded.csv:3: admitted_s: "x" is not a number`) {
		t.Fatalf("bad time: %v", err)
	}
}

func TestReadParams(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "params.yaml", "manifests: m.yaml\nevictionGracePeriod: 5s\n")
	m, g, err := ReadParams(dir)
	if err != nil || m != filepath.Join(dir, "m.yaml") || g != 5*time.Second {
		t.Fatalf("got %q %v %v", m, g, err)
	}
	write(t, dir, "params.yaml", "manifests: m.yaml\n")
	if _, g, _ := ReadParams(dir); g != 30*time.Second {
		t.Fatalf("default grace %v, want 30s", g)
	}
	write(t, dir, "params.yaml", "manifests: m.yaml\nevictionGracePeriod: soon\n")
	if _, _, err := ReadParams(dir); err == nil || !strings.Contains(err.Error(), "evictionGracePeriod") {
		t.Fatalf("bad grace: %v", err)
	}
}
