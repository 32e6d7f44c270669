package traces

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// The Tiresias simulator's trace format: a job of num_gpu GPUs is num_gpu
// one-GPU replicas; the duration is truncated to whole seconds as jobs.py
// add_job does; bad rows are skipped with the column named.
func TestTiresiasTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "60_job.csv")
	data := "job_id,num_gpu,submit_time,iterations,model_name,duration,interval\r\n" +
		"0,1,0,606,vgg19,164,30\r\n" +
		"1,8,30,133,vgg11,147.9,23\r\n" +
		"2,x,53,157,inception4,127,26\r\n" +
		"3,2,-1,157,inception4,127,26\r\n"
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	jobs, rep, err := ReadJobs(FormatTiresias, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2: %+v", len(jobs), jobs)
	}
	j := jobs[1]
	if j.ID != "1" || j.Replicas != 8 || j.GPUsPerReplica != 1 || j.Submit != sim.Time(30*sim.Second) || j.Duration != 147*sim.Second {
		t.Errorf("job 1 = %+v, want 8 x 1 GPU, submit 30 s, duration 147 s", j)
	}
	if rep.Rows-rep.Imported != 2 {
		t.Errorf("skipped %d rows (%v), want 2", rep.Rows-rep.Imported, rep.Skipped)
	}
	_, _, err = ReadJobsWith(FormatTiresias, p, ReadOptions{Strict: true})
	if err == nil || !strings.Contains(err.Error(), "num_gpu: bad integer") {
		t.Errorf("strict read: %v, want num_gpu: bad integer", err)
	}
}

func FuzzTiresias(f *testing.F) {
	seedFile(f, "../policies/tiresias/testdata/simulator/synthetic_job.csv", 4000)
	f.Add([]byte("job_id,num_gpu,submit_time,duration\n1,99999999,0,1e300\n"))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, FormatTiresias, "f.csv", data) })
}
