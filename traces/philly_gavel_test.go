package traces

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpusim/gpusim/sim"
)

const phillyDir = "testdata/philly-via-gavel/"

func TestPhillyGavelCSV(t *testing.T) {
	jobs, rep, err := ReadJobs(FormatPhillyGavel, phillyDir+"philly_gavel_jobs.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4034 || rep.SkippedTotal() != 0 {
		t.Fatalf("%d jobs, %v", len(jobs), rep)
	}
	perVC := map[string]int{}
	hist := map[int32]int{}
	for _, j := range jobs {
		perVC[j.Queue]++
		if j.Queue == "ee9e8c" {
			hist[j.TotalGPUs()]++
		}
	}
	if d := cmp.Diff(map[string]int{"ee9e8c": 2000, "6214e9": 2000, "51b7ef": 18, "23dbec": 9, "925e2b": 4, "795a4c": 3}, perVC); d != "" {
		t.Fatal(d)
	}
	// GPU-count histogram of ee9e8c from the dataset README.
	if d := cmp.Diff(map[int32]int{1: 975, 2: 47, 4: 321, 7: 2, 8: 543, 16: 106, 20: 1, 32: 5}, hist); d != "" {
		t.Fatal(d)
	}
	first := jobs[0]
	want := sim.JobSpec{ID: "23dbec-0", Queue: "23dbec", Class: sim.ClassTraining, Replicas: 1, GPUsPerReplica: 1, GPUMilli: 1000, Duration: 2532 * sim.Second}
	if d := cmp.Diff(want, first); d != "" {
		t.Fatal(d)
	}
}

// The raw Gavel files decode to exactly the durations of the derived CSV.
func TestPhillyGavelRawMatchesCSV(t *testing.T) {
	all, _, err := ReadJobs(FormatPhillyGavel, phillyDir+"philly_gavel_jobs.csv")
	if err != nil {
		t.Fatal(err)
	}
	byID := map[sim.JobID]sim.JobSpec{}
	for _, j := range all {
		byID[j.ID] = j
	}
	files, _ := filepath.Glob(phillyDir + "raw_gavel_seed0/*.trace")
	if len(files) != 6 {
		t.Fatal(files)
	}
	n := 0
	for _, f := range files {
		jobs, rep, err := ReadJobs(FormatPhillyGavel, f)
		if err != nil {
			t.Fatal(err)
		}
		if rep.SkippedTotal() != 0 {
			t.Fatal(rep)
		}
		for _, j := range jobs {
			if d := cmp.Diff(byID[j.ID], j); d != "" {
				t.Fatalf("%s: %s", f, d)
			}
			n++
		}
	}
	if n != len(all) {
		t.Fatalf("%d raw jobs vs %d", n, len(all))
	}
}

func TestGangShape(t *testing.T) {
	for n, want := range map[int64][2]int32{1: {1, 1}, 7: {1, 7}, 8: {1, 8}, 12: {3, 4}, 16: {2, 8}, 20: {5, 4}, 24: {3, 8}, 64: {8, 8}, 9: {9, 1}} {
		r, g := gangShape(n, 8)
		if r != want[0] || g != want[1] {
			t.Errorf("%d: %dx%d", n, r, g)
		}
	}
}

func TestPhillyGavelBad(t *testing.T) {
	hdr := "vc,job_seq,arrival_time_s,num_gpus,duration_s\n"
	good := "a,0,0,1,100\n"
	for name, c := range map[string]struct{ row, reason string }{
		"bad number":    {"a,1,x,1,100\n", "arrival_time_s: bad number"},
		"negative":      {"a,1,5,1,-100\n", "duration_s: negative time"},
		"bad gpus":      {"a,1,5,-1,100\n", "num_gpus: negative value"},
		"missing value": {"a,1,5,,100\n", "num_gpus: missing value"},
	} {
		jobs, rep, err := ReadJobs(FormatPhillyGavel, writeTemp(t, "p.csv", hdr+good+c.row))
		if err != nil || len(jobs) != 1 || rep.Skipped[c.reason] != 1 {
			t.Errorf("%s: %v %v", name, err, rep)
		}
	}
	if _, _, err := ReadJobs(FormatPhillyGavel, writeTemp(t, "p.csv", "vc,job_seq\na,1\n")); err == nil || !strings.Contains(err.Error(), "missing required column") {
		t.Error(err)
	}
	raw := "Bogus\tcmd\t-n\t1\t100\t0.0\t1\nCycleGAN\tcmd\t-n\t1\tx\t0.0\t1\nCycleGAN\tcmd\n" +
		"CycleGAN\tcmd\t-n\t1\t100\t0.0\t2\n"
	jobs, rep, err := ReadJobs(FormatPhillyGavel, writeTemp(t, "vc1.trace", raw))
	if err != nil || len(jobs) != 1 || jobs[0].ID != "vc1-3" || rep.SkippedTotal() != 3 {
		t.Fatalf("%v %v %v", err, jobs, rep)
	}
	if rep.Skipped["job_type: unknown Gavel job type"] != 1 || rep.Skipped["total_steps: bad integer"] != 1 || rep.Skipped["wrong number of fields"] != 1 {
		t.Fatal(rep)
	}
}
