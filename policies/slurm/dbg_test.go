package slurm

import (
	"testing"

	. "github.com/gpusim/gpusim/sim/simtest"
)

func TestDbgFid(t *testing.T) {
	_, got, _ := runFidelity(t, "testdata/fidelity/preempt-requeue")
	for id, j := range got {
		t.Logf("%s first %v last %v end %v preempted %d state %v", id, j.FirstStart.Seconds(), j.LastStart.Seconds(), j.End.Seconds(), j.Preempted, j.State)
	}
	_ = Schedule
}
