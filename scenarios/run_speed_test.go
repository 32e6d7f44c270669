package scenarios

import (
	"testing"

	"github.com/gpusim/gpusim/sim"
)

// sharedJobs hands out the workload until the last of its runs is done, then
// drops it (so it can be collected while the runs go on).
func TestSharedJobsDropsAfterLastRun(t *testing.T) {
	jobs := []sim.JobSpec{{ID: "a"}, {ID: "b"}}
	sj := &sharedJobs{jobs: jobs, users: 3}
	for k := 0; k < 2; k++ {
		if got := sj.get(); len(got) != 2 {
			t.Fatalf("run %d got %d jobs", k, len(got))
		}
		sj.done()
	}
	if got := sj.get(); len(got) != 2 {
		t.Fatalf("last run got %d jobs", len(got))
	}
	sj.done()
	if sj.get() != nil {
		t.Error("workload still held after every run was done")
	}
}
